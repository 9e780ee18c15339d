"""bfloat16 groups (docs/notes/cinn.md): loaded as bf16, computed in float32, stored as
bf16 (round to nearest even). Each test model's fused group against the float64
reference on the same bf16 inputs (within a bf16 rounding of the result) and against
the unfused bf16 program (which rounds every step), and its CUDA C compiled by NVRTC."""

import numpy as np
import pytest

import oar
from oar import _C

from test_cinn import MODELS  # noqa: E402


# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]


def bf16(a):
    return oar.to_tensor(a.astype("float32")).astype("bfloat16")


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("shape", [(6, 300), (1, 1), (0, 5), (3, 2, 37)])
def test_bf16_group_equals_the_unfused_program(name, shape):
    rng = np.random.default_rng(1)
    x, w = bf16(rng.standard_normal(shape)), bf16(rng.standard_normal(shape[-1]))
    fn = MODELS[name]
    static = oar.jit.to_static(fn, backend="CINN")
    got = static(x, w)
    assert got.dtype == oar.bfloat16 and got.shape == list(shape)
    text = str(static.concrete_programs[-1].executed_program)
    # One group ([1, 1] rows are also [1, 1] columns: the fuser may split them in two).
    assert text.count("kernel.compiled_kernel") == 1 or (shape == (1, 1) and "compiled_kernel" in text), text
    assert '"pd_op.exp"' not in text and '"pd_op.erf"' not in text, text
    g = got.astype("float32").numpy().astype("float64")
    ref = fn(x.astype("float64"), w.astype("float64")).numpy()
    # float32 arithmetic, then one rounding to bf16 (half an ulp: 2^-9 relative).
    np.testing.assert_allclose(g, ref, rtol=2.0 ** -8, atol=1e-5)
    unfused = fn(x, w).astype("float32").numpy()
    np.testing.assert_allclose(g, unfused, rtol=2e-2, atol=2e-2)


def test_bf16_accuracy_check_and_counters():
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    rng = np.random.default_rng(2)
    x, w = bf16(rng.standard_normal((8, 64))), bf16(rng.standard_normal(64))
    oar.jit.to_static(MODELS["rms_norm"], backend="CINN")(x, w)
    s = _C.cinn.cache_stats()
    assert s["accuracy_checks"] == 1 and s["accuracy_failures"] == 0 and s["fallbacks"] == 0, s


def test_bf16_accuracy_check_tolerates_the_unfused_programs_rounding():
    # LayerNorm's `d * r * w + w` cancels: the unfused bf16 ops (each step rounded) give
    # 0.0 or 0.03125 where float32 and float64 give ~0.0218; the check's absolute
    # tolerance follows the output's magnitude, and the fused result is the closer one.
    def ln(x, w):
        mu = oar.mean(x, axis=-1, keepdim=True)
        d = x - mu
        return d * oar.rsqrt(oar.mean(d * d, axis=-1, keepdim=True) + 1e-5) * w + w

    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    rng = np.random.default_rng(0)
    x, w = bf16(rng.standard_normal((8, 4096))), bf16(rng.standard_normal(4096))
    got = oar.jit.to_static(ln, backend="CINN")(x, w).astype("float32").numpy()
    s = _C.cinn.cache_stats()
    assert s["accuracy_checks"] == 1 and s["accuracy_failures"] == 0, s
    ref = ln(x.astype("float64"), w.astype("float64")).numpy()
    unfused = ln(x, w).astype("float32").numpy()
    assert np.abs(got - ref).max() < np.abs(unfused - ref).max()


def test_bf16_kernels_emit_bf16_cuda_c():
    rng = np.random.default_rng(3)
    x, w = bf16(rng.standard_normal((4, 64))), bf16(rng.standard_normal(64))
    oar.jit.to_static(MODELS["softmax"], backend="CINN")(x, w)
    ks = [k for k in _C.cinn.cuda_kernels() if k["loop_kernel"].startswith("bfloat16")]
    assert ks
    src = ks[-1]["source"]
    assert "const unsigned short* __restrict__ in0" in src and "oar_st(" in src and "oar_ld(" in src
