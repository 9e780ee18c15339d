"""Oar's thread pool behind parallel_for (Note [Thread pool], docs/notes/thread_pool.md).

Ops at sizes around the parallel grain and around the pool's wake grain, at 1 and 2
threads, against float64 NumPy; at 2 threads their bits do not depend on whether a worker
took part (a sleeping worker never woken, always woken, spinning between regions); the
OAR_PARALLEL_* variables are checked at import, a bad value naming the variable and the
value; the pool leaves no thread spinning when idle. Each configuration runs in a fresh
process (the pool reads its settings once)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

GRAIN = 32768
SIZES = [GRAIN - 1, GRAIN, GRAIN + 1, 3 * GRAIN + 7, 262147, 1 << 20]

# Computes every op of the sweep at each size; prints nothing, saves the results to argv[1].
OPS = textwrap.dedent(
    """
    import sys, numpy as np, oar
    threads, sizes, out = int(sys.argv[2]), [int(s) for s in sys.argv[3].split(",")], {}
    oar.set_num_threads(threads)
    for n in sizes:
        rng = np.random.default_rng(n)
        a = rng.standard_normal(n).astype("float32")
        b = rng.standard_normal(n).astype("float32")
        rows = max(n // 256, 1)
        m = rng.standard_normal((rows, 256)).astype("float32")
        v = rng.standard_normal(256).astype("float32")
        idx = rng.integers(0, rows, 2 * rows)
        ta, tb, tm, tv = (oar.to_tensor(x) for x in (a, b, m, v))
        for rep in range(3):  # the first call may find the worker asleep, the next awake
            res = {
                "add": (ta + tb).numpy(), "mul": (ta * tb).numpy(),
                "add_bcast": (tm + tv).numpy(), "sum": ta.sum().numpy(),
                "mean_rows": tm.mean(axis=1).numpy(), "sum_cols": tm.sum(axis=0).numpy(),
                "concat": oar.concat([tm, tm * 2, tm], axis=0).numpy(),
                "index_select": oar.index_select(tm, oar.to_tensor(idx), axis=0).numpy(),
                "softmax": oar.nn.functional.softmax(tm, -1).numpy(),
                "exp": oar.exp(ta).numpy(),
            }
            for k, r in res.items():
                key = f"{k}_{n}"
                if key in out:
                    assert np.array_equal(out[key], r), f"{key}: differs between calls"
                out[key] = r
    np.savez(sys.argv[1], **out)
    print(oar._C._parallel_info())
    """
)


def _python(code, *args, timeout=300, **env_extra):
    env = dict(os.environ, OMP_NUM_THREADS="2", **env_extra)
    for k in ("OAR_PARALLEL_SPIN_US", "OAR_PARALLEL_WAKE_GRAIN"):
        if k not in env_extra:
            env.pop(k, None)
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def _ops(tmp_path, name, threads, **env_extra):
    path = tmp_path / f"{name}.npz"
    p = _python(OPS, str(path), str(threads), ",".join(map(str, SIZES)), **env_extra)
    assert p.returncode == 0, p.stderr[-3000:]
    return dict(np.load(path)), p.stdout


def _reference(key):
    op, n = key.rsplit("_", 1)
    n = int(n)
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype("float32").astype(np.float64)
    b = rng.standard_normal(n).astype("float32").astype(np.float64)
    rows = max(n // 256, 1)
    m = rng.standard_normal((rows, 256)).astype("float32").astype(np.float64)
    v = rng.standard_normal(256).astype("float32").astype(np.float64)
    idx = rng.integers(0, rows, 2 * rows)
    e = np.exp(m - m.max(-1, keepdims=True))
    return {
        "add": lambda: a + b, "mul": lambda: a * b, "add_bcast": lambda: m + v,
        "sum": lambda: a.sum(), "mean_rows": lambda: m.mean(1), "sum_cols": lambda: m.sum(0),
        "concat": lambda: np.concatenate([m, m * 2, m]), "index_select": lambda: m[idx],
        "softmax": lambda: e / e.sum(-1, keepdims=True), "exp": lambda: np.exp(a),
    }[op]()


# (name, environment): the default; a sleeping worker always woken and never spinning;
# never woken from sleep (every region on the caller, by chunks); a long spin window.
CONFIGS = [
    ("default", {}),
    ("always_wake", {"OAR_PARALLEL_WAKE_GRAIN": "0", "OAR_PARALLEL_SPIN_US": "0"}),
    ("never_wake", {"OAR_PARALLEL_WAKE_GRAIN": str(1 << 26), "OAR_PARALLEL_SPIN_US": "0"}),
    ("long_spin", {"OAR_PARALLEL_WAKE_GRAIN": "0", "OAR_PARALLEL_SPIN_US": "2000"}),
]


def test_ops_around_the_grains_match_numpy_and_each_other(tmp_path):
    one, _ = _ops(tmp_path, "one", 1)
    runs = {name: _ops(tmp_path, name, 2, **env) for name, env in CONFIGS}
    for key, got in runs["default"][0].items():
        ref = _reference(key)
        atol = 1e-2 if key.startswith(("sum_", "sum_cols")) else 1e-5  # float32 sums of up to 1M
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=atol, err_msg=key)
        np.testing.assert_allclose(one[key], ref, rtol=1e-5, atol=atol, err_msg=key)
        for name, (res, info) in runs.items():
            assert np.array_equal(res[key], got), f"{key}: {name} differs from the default ({info})"
    info = runs["always_wake"][1]
    assert "'wake_grain': 0" in info and "'spin_us': 0" in info and "'wake_grain_from_env': True" in info


@pytest.mark.parametrize("var,value", [
    ("OAR_PARALLEL_SPIN_US", "abc"), ("OAR_PARALLEL_SPIN_US", "-1"), ("OAR_PARALLEL_SPIN_US", "1e3"),
    ("OAR_PARALLEL_SPIN_US", "100001"), ("OAR_PARALLEL_WAKE_GRAIN", "12 units"),
    ("OAR_PARALLEL_WAKE_GRAIN", "-5"), ("OAR_PARALLEL_WAKE_GRAIN", "99999999999999999999"),
])
def test_bad_settings_fail_the_import_naming_them(var, value):
    p = _python("import oar", **{var: value})
    assert p.returncode != 0
    assert var in p.stderr and f"'{value}'" in p.stderr, p.stderr[-2000:]


def test_settings_are_reported():
    code = "import oar; oar.set_num_threads(2); print(oar._C._parallel_info())"
    p = _python(code, OAR_PARALLEL_SPIN_US="7", OAR_PARALLEL_WAKE_GRAIN="40000")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "'spin_us': 7" in p.stdout and "'wake_grain': 40000" in p.stdout, p.stdout
    assert "'spin_adaptive': False" in p.stdout, p.stdout
    # calibrated: a measured wake, a grain at least the parallel grain
    p = _python(textwrap.dedent("""
        import oar
        oar.set_num_threads(2)
        (oar.ones([1 << 20]) + 1).numpy()
        i = oar._C._parallel_info()
        # a busy machine may not let the worker fall asleep before a calibration wake: no
        # latency sample then (-1), but the caller's futex calls are always measured
        assert i["workers"] == 1 and i["futex_ns"] > 0 and i["wake_grain"] >= 32768, i
        assert i["wake_ns"] == -1 or i["wake_ns"] > 0, i
        # the adaptive spin (Note [Thread pool], "The spin adapts") between 50 and 400 us
        assert i["spin_adaptive"] and 50 <= i["spin_us"] <= 400, i
        # each region ran either on the caller alone or offered to the worker
        assert i["alone"] + i["paid"] + i["missed"] + i["late"] >= 1, i
        """))
    assert p.returncode == 0, p.stderr[-2000:]


def test_the_pool_does_not_spin_when_idle():
    # bench/idle_pool.py's measurement: CPU time of the process while it sleeps after work
    p = _python(textwrap.dedent("""
        import time, oar
        oar.set_num_threads(2)
        x = oar.randn([1 << 20])
        for _ in range(50):
            (x * x + x).sum().numpy()
        time.sleep(0.05)  # the spin window (50 us) and OpenMP's own are long over
        t0 = time.process_time()
        time.sleep(0.5)
        print(time.process_time() - t0)
        """))
    assert p.returncode == 0, p.stderr[-2000:]
    assert float(p.stdout.split()[-1]) < 0.02, p.stdout
