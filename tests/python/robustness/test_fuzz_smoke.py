"""A short pass of the fuzzer (tests/fuzz) so a change that breaks the fuzzer itself, or a
crash it finds at once, fails the normal suite. CI's longer timed run is in scripts/test.sh."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _fuzz(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "tests.fuzz", "--findings", str(tmp_path), "--workers", "2",
                        "--seed", "1", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    with open(tmp_path / "report.json") as f:
        return p, json.load(f)


def test_api_fuzz_smoke(tmp_path):
    sys.path.insert(0, ROOT)
    from tests.fuzz import targets
    n = len(targets.discover())
    assert n > 500, f"introspection found only {n} callables"
    p, rep = _fuzz(tmp_path, "--calls", "400")
    assert rep["calls"] == 400
    assert rep["reached"] == 400 or rep["reached"] == rep["callables"]
    assert rep["crashes"] == 0 and rep["hangs"] == 0, p.stdout[-3000:]
    assert p.returncode == 0


def test_file_fuzz_smoke(tmp_path):
    p, rep = _fuzz(tmp_path, "--files", "--mutations", "20")
    assert rep["mutations"] == 20 * len(rep["per_format"]) and len(rep["per_format"]) == 7, rep
    assert rep["crashes"] == 0 and rep["hangs"] == 0, p.stdout[-3000:]
