"""The bench suites' ISA switch (bench/common.py's --isa, bench/run.sh --isa; Note [CPU
dispatch], docs/notes/cpu_dispatch.md): a worker started under a forced ISA runs Oar's
copy, oneDNN and OpenBLAS of that ISA and says so; bench/peak.py then measures only that
ISA's FMA loop; a bad value is refused with the ISA named."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import common  # noqa: E402  (bench/common.py)
import peak  # noqa: E402

# A worker's view: what the libraries it loaded run, and the peak loops measured.
CHILD = (
    "import json, sys\n"
    f"sys.path.insert(0, {BENCH!r})\n"
    "import oar, common, peak\n"
    "print(json.dumps({'isa': common.effective_isa('oar', oar), 'forced': common.forced_isa(),\n"
    "                  'loops': sorted(k for k, v in peak.measure(1, 0.002).items() if isinstance(v, float))}))\n")


def run_child(env):
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OMP_NUM_THREADS="1", **env))
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def clean_env():
    """os.environ without any of the switch's variables (a caller's own must not leak in)."""
    names = {n for env in common.ISA_ENV.values() for n in env} | {"BENCH_ISA"}
    return {k: v for k, v in os.environ.items() if k not in names}


def test_forced_avx2_reaches_every_library(monkeypatch):
    monkeypatch.setattr(os, "environ", clean_env())
    common.force_isa("avx2")  # what the driver does before it starts the workers
    res = run_child(dict(os.environ))
    assert res["forced"] == "avx2"
    assert res["isa"]["kernels"] == "avx2"
    assert res["isa"]["onednn"] == "avx2"
    if "openblas" in res["isa"]:  # scipy-openblas32 linked (OAR_SCIPY_OPENBLAS)
        assert res["isa"]["openblas"] == "Haswell"
    assert res["loops"] == ["fma_avx2", "fp32_peak"]


@pytest.mark.skipif("avx512" not in peak.cpu_isa(), reason="needs an AVX-512 CPU")
def test_unforced_runs_the_cpus_own():
    res = run_child(clean_env())
    assert res["forced"] is None
    assert res["isa"]["kernels"] == "avx512"
    assert res["isa"]["onednn"].startswith("avx512")
    assert "fma_avx512" in res["loops"]


def test_bad_isa_is_refused(monkeypatch):
    monkeypatch.setattr(os, "environ", clean_env())
    with pytest.raises(ValueError, match="unknown ISA 'sse9'"):
        common.force_isa("sse9")
    assert "BENCH_ISA" not in os.environ
    common.force_isa("")  # no ISA: nothing changes
    assert "OAR_CPU_CAPABILITY" not in os.environ
