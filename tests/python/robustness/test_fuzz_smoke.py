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
    # Oar's and Paddle's checkpoints, the saved model's two files each way, PIR text and binary
    assert rep["mutations"] == 20 * len(rep["per_format"]) and len(rep["per_format"]) == 8, rep
    assert rep["crashes"] == 0 and rep["hangs"] == 0, p.stdout[-3000:]


def test_pool_reports_crash_and_hang_with_reproducers(tmp_path):
    # The detection itself: a worker killed by a signal and one that never answers are
    # findings with reproducers that fail the same way alone; the pool goes on after both.
    code = f"""
import os, sys, time
sys.path.insert(0, {ROOT!r})
from tests.fuzz.pool import Pool
p = Pool(2, 3.0, {str(tmp_path)!r}, log=lambda s: None)
jobs = [("c0", "a", "oar.ones([2]).sum()"),
        ("c1", "crash", "__import__('os').kill(__import__('os').getpid(), 11)"),
        ("c2", "hang", "__import__('time').sleep(100)"),
        ("c3", "b", "oar.ones([3])")]
n = p.run(iter(jobs), time.monotonic() + 120)
p.close()
p.confirm(30)
print(n, sorted((f["target"], f["kind"].split()[0], f["alone"]) for f in p.findings), p.outcomes["ok"])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300).stdout
    assert out.strip() == "4 [('crash', 'crash', 'crash'), ('hang', 'hang', 'hang')] 2", out
    assert sorted(os.listdir(tmp_path)) == ["crash-crash-c1.py", "hang-hang-c2.py"]
