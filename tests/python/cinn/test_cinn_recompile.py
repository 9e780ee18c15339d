"""Recompilation (Note [Recompilation] in docs/notes/cinn.md): inputs that break a
compiled group's assumption (dims it assumed equal that differ at run time: a broadcast
of a dynamic dim that is 1) get a kernel of their own shape class, compiled once and
reused by later calls of the class; results equal eager; no warning. Shapes the ops
reject still raise naming the op; a recompilation that fails to compile runs the
unfused ops with one log line."""
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar import _C


TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}


# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]
CINN_NVRTC = False


def rand(shape, dtype, rng):
    return oar.to_tensor(rng.standard_normal(shape).astype(dtype))


def mul_sum(x, y):
    return (x * y).sum(axis=-1, keepdim=True)


def softmax_mul(x, y):
    e = oar.exp(x * y - oar.max(x, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


def exp_add(x, b):
    return oar.exp(x) + b * 2.0


def counters():
    s = _C.cinn.cache_stats()
    return {k: s[k] for k in ("compiles", "kernels", "recompiles", "class_hits", "shape_fallbacks", "fallbacks")}


def check(static, fn, args, dtype):
    got = static(*args).numpy()
    want = fn(*args).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn, spec, compile_shapes, classes", [
    # two `?` rows assumed equal: either input with one row (broadcast over the other's)
    (mul_sum, [[None, 8], [None, 8]], [(4, 8), (4, 8)],
     [[[(1, 8), (5, 8)], [(1, 8), (9, 8)]], [[(6, 8), (1, 8)], [(2, 8), (1, 8)]]]),
    # all dims dynamic: a column of 1 (broadcast along the row), a row of 1, both
    (softmax_mul, [[None, None], [None, None]], [(3, 7), (3, 7)],
     [[[(4, 7), (4, 1)], [(2, 33), (2, 1)]], [[(5, 9), (1, 9)], [(3, 40), (1, 40)]],
      [[(6, 11), (1, 1)], [(2, 3), (1, 1)]]]),
    # an elementwise group: the bias with one row, then the data with one row
    (exp_add, [[None, 16], [None, 16]], [(3, 16), (3, 16)],
     [[[(7, 16), (1, 16)], [(2, 16), (1, 16)]], [[(1, 16), (7, 16)], [(1, 16), (3, 16)]]]),
])
def test_each_broken_assumption_compiles_one_kernel_per_class(capfd, dtype, fn, spec, compile_shapes, classes):
    rng = np.random.default_rng(0)
    specs = [oar.static.InputSpec(s, dtype) for s in spec]
    static = oar.jit.to_static(fn, input_spec=specs, backend="CINN")
    check(static, fn, [rand(s, dtype, rng) for s in compile_shapes], dtype)
    base = counters()
    assert base["compiles"] >= 1 and base["recompiles"] == 0, base
    capfd.readouterr()
    for n, calls in enumerate(classes, 1):
        for i, shapes in enumerate(calls):
            check(static, fn, [rand(s, dtype, rng) for s in shapes], dtype)
            c = counters()
            # the class's first call lowers and compiles its kernel; later calls reuse it
            assert c["recompiles"] == n, (shapes, c)
            assert c["class_hits"] == sum(len(k) - 1 for k in classes[:n - 1]) + i, (shapes, c)
            assert c["compiles"] == base["compiles"] + n and c["kernels"] == base["kernels"] + n, (shapes, c)
            assert c["shape_fallbacks"] == 0 and c["fallbacks"] == 0, c
    # the compiled class still serves sizes that keep its assumption
    check(static, fn, [rand(s, dtype, rng) for s in [(9, d or 5) for _, d in spec]], dtype)
    assert counters()["compiles"] == base["compiles"] + len(classes)
    err = capfd.readouterr().err
    assert "unfused" not in err and "warning" not in err, err


def test_a_recompiled_kernel_passes_the_accuracy_check(capfd):
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    rng = np.random.default_rng(1)
    spec = [oar.static.InputSpec([None, None], "float32")] * 2
    static = oar.jit.to_static(softmax_mul, input_spec=spec, backend="CINN")
    check(static, softmax_mul, [rand((3, 7), "float32", rng)] * 2, "float32")
    for shapes in [[(4, 7), (4, 1)], [(4, 7), (1, 7)], [(8, 7), (1, 7)]]:
        check(static, softmax_mul, [rand(s, "float32", rng) for s in shapes], "float32")
    s = _C.cinn.cache_stats()
    assert s["recompiles"] == 2 and s["class_hits"] == 1, s
    assert s["accuracy_checks"] >= 4 and s["accuracy_failures"] == 0, s
    assert "differs" not in capfd.readouterr().err


def test_shapes_the_ops_reject_still_raise_naming_the_op():
    spec = [oar.static.InputSpec([None, 8], "float32")] * 2
    static = oar.jit.to_static(mul_sum, input_spec=spec, backend="CINN")
    y = oar.randn([4, 8])
    static(oar.randn([4, 8]), y)
    with pytest.raises(Exception, match=r"multiply: shapes \[3, 8\] and \[4, 8\] cannot be broadcast"):
        static(oar.randn([3, 8]), y)
    static(oar.randn([1, 8]), y)  # a class kernel; the kernel of [?, 8] x [?, 8] still checks
    with pytest.raises(Exception, match=r"multiply: shapes \[2, 8\] and \[5, 8\] cannot be broadcast"):
        static(oar.randn([2, 8]), oar.randn([5, 8]))
    assert _C.cinn.cache_stats()["recompiles"] == 1


FORCED_FAILURE = r"""
import numpy as np, oar
from oar import _C
oar.set_flags({"FLAGS_cinn_cache_dir": %r})
f = lambda x, y: (x * y).sum(axis=-1, keepdim=True)
spec = [oar.static.InputSpec([None, 8], "float64")] * 2
static = oar.jit.to_static(f, input_spec=spec, backend="CINN")
y = oar.randn([4, 8], dtype="float64")
static(oar.randn([4, 8], dtype="float64"), y)
oar.set_flags({"FLAGS_cinn_test_fail_compile": True})
for rows in (4, 6, 4):
    y = oar.randn([rows, 8], dtype="float64")
    one = oar.randn([1, 8], dtype="float64")
    np.testing.assert_allclose(static(one, y).numpy(), f(one, y).numpy(), rtol=1e-12, atol=1e-12)
s = _C.cinn.cache_stats()
print("STATS", s["compiles"], s["recompiles"], s["class_hits"], s["fallbacks"], s["shape_fallbacks"])
"""


def test_a_recompilation_that_fails_to_compile_runs_unfused_with_one_log_line(tmp_path):
    # a process of its own: the fallback's log line is printed once per reason per process
    out = subprocess.run([sys.executable, "-c", FORCED_FAILURE % str(tmp_path / "c")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "STATS 1 1 2 1 0" in out.stdout, out.stdout + out.stderr
    assert out.stderr.count("runs unfused") == 1, out.stderr
    assert "FLAGS_cinn_test_fail_compile" in out.stderr, out.stderr
