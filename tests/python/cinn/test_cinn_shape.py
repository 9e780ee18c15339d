"""Symbolic shapes end to end (Note [Symbolic shapes] in docs/notes/cinn.md): one kernel
for every size of dims proven equal, an assumed equality broken at run time compiles a
kernel for the new shape class (Note [Recompilation]; never a wrong result),
and OAR_PIR_PRINT_IR prints the annotated program."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar import _C


CINN_NVRTC = False


def softmax_mul(x, y):
    e = oar.exp(x * y - oar.max(x, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


def test_one_kernel_serves_every_size_of_dims_proven_equal():
    spec = [oar.static.InputSpec([None, None], "float32"), oar.static.InputSpec([None, None], "float32")]
    static = oar.jit.to_static(softmax_mul, input_spec=spec, backend="CINN")
    rng = np.random.default_rng(0)
    for rows, cols in [(1, 1), (3, 7), (16, 33), (5, 128), (2, 1000)]:
        xs = rng.standard_normal((rows, cols)).astype("float32")
        ys = rng.standard_normal((rows, cols)).astype("float32")
        got = static(oar.to_tensor(xs), oar.to_tensor(ys)).numpy()
        z = xs.astype("float64") * ys - xs.max(-1, keepdims=True)
        want = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    s = _C.cinn.cache_stats()
    assert s["compiles"] == 1 and s["kernels"] == 1, s
    text = str(static.concrete_programs[-1].executed_program)
    assert text.count("kernel.compiled_kernel") == 1, text


def test_an_assumed_equality_broken_at_run_time_recompiles_for_the_new_shape_class(capfd):
    spec = [oar.static.InputSpec([None, 8], "float32"), oar.static.InputSpec([None, 8], "float32")]

    def f(x, y):
        return (x * y).sum(axis=-1, keepdim=True)

    static = oar.jit.to_static(f, input_spec=spec, backend="CINN")
    x, y = oar.randn([4, 8]), oar.randn([4, 8])
    np.testing.assert_allclose(static(x, y).numpy(), f(x, y).numpy(), rtol=1e-5, atol=1e-6)
    one = oar.randn([1, 8])
    assert f(one, y).shape == [4, 1]  # eager broadcasts the 1-row x
    _C.cinn.reset_cache_stats()
    capfd.readouterr()
    np.testing.assert_allclose(static(one, y).numpy(), f(one, y).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(static(one, y).numpy(), f(one, y).numpy(), rtol=1e-5, atol=1e-6)
    s = _C.cinn.cache_stats()
    # Note [Recompilation]: one kernel for the class [1, 8] x [?, 8], reused by the second call
    assert (s["recompiles"], s["class_hits"], s["compiles"], s["shape_fallbacks"]) == (1, 1, 1, 0), s
    err = capfd.readouterr().err
    assert "unfused" not in err and "warning" not in err, err
    # Shapes the unfused ops reject: their own error, naming the op and the shapes.
    with pytest.raises(Exception, match=r"multiply: shapes \[3, 8\] and \[4, 8\] cannot be broadcast"):
        static(oar.randn([3, 8]), y)
    # The kernel still serves inputs that keep the assumption.
    np.testing.assert_allclose(static(x, y).numpy(), f(x, y).numpy(), rtol=1e-5, atol=1e-6)


SCRIPT = r"""
import oar
def f(x, w):
    return oar.exp(x) * w
spec = [oar.static.InputSpec([None, 16], "float32"), oar.static.InputSpec([16], "float32")]
oar.jit.to_static(f, input_spec=spec, backend="CINN")(oar.randn([3, 16]), oar.randn([16]))
"""


def test_print_ir_shows_the_symbolic_shapes(tmp_path):
    env = dict(os.environ, OAR_PIR_PRINT_IR="1", FLAGS_cinn_cache_dir=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "----- symbolic shapes (cinn_shape) -----" in out.stderr
    assert "// [S0, 16]" in out.stderr
    assert 'sym_shapes = "S0x16, 16 -> S0x16"' in out.stderr
