"""`where` and comparisons in fused groups (Note [Select and masks] in docs/notes/cinn.md):
a select whose condition is a compare inside the group or a bool mask input (full,
broadcast along the rows or the columns, a row value), next to reductions; the
decompositions of leaky_relu, elu, softplus, mish, smooth_l1_loss's huber and
binary_cross_entropy_with_logits fuse into one kernel each; a mask
can be a group output. Each fused group equals the unfused program (to_static without
CINN) on random inputs in float32, float64 and bfloat16, and its CUDA C compiles (the
conftest's NVRTC check)."""
import numpy as np
import pytest

import oar
from oar import _C

F = oar.nn.functional

# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]


def relu_by_select(x, w, m):
    return oar.where(x > 0.0, x * w, x * 0.1) + 1.0


def mask_rows(x, w, m):
    # m: [N, 1] bool, broadcast along the rows' columns
    return oar.where(m, oar.exp(x) * w, -x)


def mask_full(x, w, m):
    # m: bool of x's shape (the test makes it)
    return oar.where(m, x, x * w) * 2.0


def masked_softmax(x, w, m):
    s = oar.where(m, x * w, oar.full_like(x, -1e4))
    e = oar.exp(s - oar.max(s, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


def clamp_by_compares(x, w, m):
    # compares of two group values, both branches computed in the group, and a row sum
    y = oar.where(x < w, w, x)
    y = oar.where(x >= 1.5, oar.full_like(x, 1.5), y)
    return y - oar.sum(oar.where(x != w, y, x), axis=-1, keepdim=True)


def activations(x, w, m):
    return (F.leaky_relu(x * w, 0.02) + F.elu(x, 0.7) + F.softplus(x * w) + F.mish(x)
            + F.smooth_l1_loss(x * w, x, reduction="none", delta=0.5)
            + F.binary_cross_entropy_with_logits(x * w, oar.sigmoid(x), reduction="none"))


MODELS = {
    "relu_by_select": relu_by_select,
    "mask_rows": mask_rows,
    "mask_full": mask_full,
    "masked_softmax": masked_softmax,
    "clamp_by_compares": clamp_by_compares,
    "activations": activations,
}


def inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 2
    w = rng.standard_normal(shape[-1])
    x.reshape(-1)[::7] = w[0]  # some x == w, for the compares' equal cases
    mshape = shape[:-1] + (1,)
    m = rng.random(mshape) > 0.4
    if dtype == "bfloat16":
        xt = oar.to_tensor(x.astype("float32")).astype("bfloat16")
        wt = oar.to_tensor(w.astype("float32")).astype("bfloat16")
    else:
        xt, wt = oar.to_tensor(x.astype(dtype)), oar.to_tensor(w.astype(dtype))
    return xt, wt, oar.to_tensor(m)


def executed(static):
    return str(static.concrete_programs[-1].executed_program)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12), ("bfloat16", None)])
@pytest.mark.parametrize("shape", [(6, 67), (3, 2, 37)], ids=str)
def test_fused_select_equals_the_unfused_program(name, dtype, tol, shape):
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    x, w, m = inputs(shape, dtype)
    fn = MODELS[name]
    if name == "mask_full":
        m = oar.to_tensor(np.random.default_rng(5).random(shape) > 0.5)
    static = oar.jit.to_static(fn, backend="CINN")
    got = static(x, w, m)
    plain = oar.jit.to_static(fn)(x, w, m)
    if dtype == "bfloat16":
        # float32 arithmetic and one rounding against float64 on the same inputs (the
        # program's Python scalars are bf16 tensors, 0.1 is 0.10009765625: two ulps); the
        # unfused bf16 program rounds every step (tolerance as the accuracy check's).
        g = got.astype("float32").numpy()
        ref = fn(x.astype("float64"), w.astype("float64"), m).numpy()
        np.testing.assert_allclose(g, ref, rtol=2.0 ** -7, atol=1e-5)
        big = max(1.0, float(np.abs(ref).max()))
        np.testing.assert_allclose(g, plain.astype("float32").numpy(), rtol=2e-2, atol=2e-2 * big)
    else:
        np.testing.assert_allclose(got.numpy(), plain.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(got.numpy(), fn(x, w, m).numpy(), rtol=tol, atol=tol)
    text = executed(static)
    # Every select, compare and fill joined a kernel: one kernel per model.
    assert '"pd_op.where"' not in text and '"pd_op.greater_than"' not in text, text
    assert '"pd_op.full_like"' not in text, text
    assert text.count("kernel.compiled_kernel") == 1, text
    s = _C.cinn.cache_stats()
    assert s["fallbacks"] == 0 and s["accuracy_failures"] == 0 and s["accuracy_checks"] >= 1, s


@pytest.mark.parametrize("act", ["leaky_relu", "elu"])
def test_an_activation_model_fuses_forward_and_backward(act):
    oar.seed(0)
    net = oar.nn.Sequential(oar.nn.Linear(24, 48), oar.nn.LeakyReLU(0.05) if act == "leaky_relu" else oar.nn.ELU(0.8),
                            oar.nn.Linear(48, 8))
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((16, 24)).astype("float32"))

    def step(fn):
        net.clear_gradients()
        loss = (fn(x) ** 2).mean()
        loss.backward()
        return float(loss), [p.grad.numpy().copy() for p in net.parameters()]

    static = oar.jit.to_static(net, backend="CINN")
    got_l, got_g = step(static)
    want_l, want_g = step(oar.jit.to_static(net))
    np.testing.assert_allclose(got_l, want_l, rtol=1e-5)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    cp = static.concrete_programs[-1] if hasattr(static, "concrete_programs") else static.forward.concrete_programs[-1]
    fwd = str(cp.executed_program)
    assert f'"pd_op.{act}"' not in fwd and '"pd_op.where"' not in fwd, fwd
    # bias add + the activation: one kernel between the two library matmuls
    assert fwd.count("kernel.compiled_kernel") >= 1, fwd


def test_a_mask_can_be_a_group_output():
    def fn(x, w):
        keep = x > w
        return oar.where(keep, x, x * 0.5) * 3.0, keep

    x, w, _ = inputs((5, 40), "float32")
    static = oar.jit.to_static(fn, backend="CINN")
    got_y, got_m = static(x, w)
    want_y, want_m = fn(x, w)
    assert got_m.dtype == oar.bool
    np.testing.assert_array_equal(got_m.numpy(), want_m.numpy())
    np.testing.assert_allclose(got_y.numpy(), want_y.numpy(), rtol=1e-6)
    text = executed(static)
    assert text.count("kernel.compiled_kernel") == 1 and '"pd_op.greater_than"' not in text, text


def test_nan_in_compares_and_selects():
    # NaN compares false but for !=, as the eager kernels; a select passes NaN through.
    x = np.array([[np.nan, 1.0, -2.0, np.inf, -np.inf, 0.0, -0.0, 3.0] * 3], dtype="float32")
    w = np.array([1.0, np.nan, -2.0, 0.0, -np.inf, -0.0, 0.0, 2.0] * 3, dtype="float32")

    def fn(a, b):
        return (oar.where(a > b, a, b) + oar.where(a <= b, b * 2.0, a * 0.5) + oar.where(a != b, a - b, a * 0.0)
                + oar.where(a == b, oar.full_like(a, 7.0), b))

    static = oar.jit.to_static(fn, backend="CINN")
    got = static(oar.to_tensor(x), oar.to_tensor(w)).numpy()
    want = fn(oar.to_tensor(x), oar.to_tensor(w)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)
    assert executed(static).count("kernel.compiled_kernel") == 1
