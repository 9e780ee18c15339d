"""Broadcast inputs in fused groups (Note [Broadcast inputs] in docs/notes/cinn.md): a
group input whose leading axes are each 1 or the loop space's (an additive attention
mask [b, 1, Lq, Lk] over the scores [b, h, Lq, Lk]) is read in the group at the row the
loop row maps to, instead of the add running on its own. Each group against float64
NumPy and the unfused program, float32/float64/bf16, odd sizes, 1 and 2 threads; the
attention backward with an additive mask against eager."""

import numpy as np
import pytest

import oar
from oar import _C


# set by tests here, restored after each (conftest.py)
CINN_FLAGS = ["FLAGS_enable_cinn_accuracy_check"]


def executed(static_fn):
    return str(static_fn.concrete_programs[-1].executed_program)


def masked_softmax(s, m):
    t = s * 0.125 + m
    e = oar.exp(t - oar.max(t, axis=-1, keepdim=True))
    return e / oar.sum(e, axis=-1, keepdim=True)


def masked_softmax_ref(s, m):
    t = s * 0.125 + m
    e = np.exp(t - t.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# (scores, mask): the attention mask [b, 1, Lq, Lk], a per-head one [1, h, 1, Lk], a
# lower-rank [Lq, Lk], one over the batch only, 3-D ones, odd sizes.
SHAPES = [
    ((2, 3, 5, 17), (2, 1, 5, 17)),
    ((2, 3, 5, 17), (1, 3, 1, 17)),
    ((3, 2, 7, 33), (7, 33)),
    ((4, 3, 2, 65), (4, 1, 1, 65)),
    ((5, 9, 16), (5, 1, 16)),
    ((6, 4, 3), (6, 1, 3)),
]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}+{s[1]}")
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-13)])
@pytest.mark.parametrize("threads", [1, 2])
def test_masked_softmax_reads_the_mask_in_its_group(shapes, dtype, tol, threads):
    (sshape, mshape) = shapes
    rng = np.random.default_rng(sum(sshape) + sum(mshape))
    sn = rng.standard_normal(sshape).astype(dtype) * 4
    mn = (rng.standard_normal(mshape) * 2).astype(dtype)
    old = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        static = oar.jit.to_static(masked_softmax, backend="CINN")
        got = static(oar.to_tensor(sn), oar.to_tensor(mn)).numpy()
    finally:
        oar.set_num_threads(old)
    np.testing.assert_allclose(got, masked_softmax_ref(sn.astype("float64"), mn.astype("float64")),
                               rtol=tol, atol=tol)
    unfused = masked_softmax(oar.to_tensor(sn), oar.to_tensor(mn)).numpy()
    np.testing.assert_allclose(got, unfused, rtol=tol * 5, atol=tol * 5)
    text = executed(static)
    assert text.count("kernel.compiled_kernel") == 1 and "pd_op.add" not in text, text
    assert _C.cinn.cache_stats()["fallbacks"] == 0


def test_a_masked_group_under_the_accuracy_check_and_in_bf16():
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    rng = np.random.default_rng(3)
    s = oar.to_tensor(rng.standard_normal((2, 3, 5, 37)).astype("float32"))
    m = oar.to_tensor(rng.standard_normal((2, 1, 5, 37)).astype("float32"))
    oar.jit.to_static(masked_softmax, backend="CINN")(s, m)
    st = _C.cinn.cache_stats()
    assert st["accuracy_checks"] == 1 and st["accuracy_failures"] == 0, st
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": False})
    sb, mb = s.astype("bfloat16"), m.astype("bfloat16")
    static = oar.jit.to_static(masked_softmax, backend="CINN")
    got = static(sb, mb).astype("float32").numpy()
    assert "pd_op.add" not in executed(static)
    want = masked_softmax_ref(sb.astype("float32").numpy().astype("float64"),
                              mb.astype("float32").numpy().astype("float64"))
    np.testing.assert_allclose(got, want, rtol=2.0 ** -8, atol=1e-5)


def bias_sums(x, m):
    # A broadcast input in a group with a column reduction and a full output.
    y = x * m
    return oar.sum(y, axis=[0, 1, 2]), y + 1.0


def test_a_broadcast_input_next_to_a_column_reduction():
    rng = np.random.default_rng(4)
    xn = rng.standard_normal((3, 4, 5, 19))
    mn = rng.standard_normal((3, 1, 5, 19))
    static = oar.jit.to_static(bias_sums, backend="CINN")
    got = static(oar.to_tensor(xn), oar.to_tensor(mn))
    assert executed(static).count("kernel.compiled_kernel") == 1
    np.testing.assert_allclose(got[0].numpy(), (xn * mn).sum((0, 1, 2)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1].numpy(), xn * mn + 1.0, rtol=1e-15, atol=0)


def test_a_broadcast_input_that_is_not_static_stays_outside():
    spec = [oar.static.InputSpec([None, 3, 5, 17], "float32"), oar.static.InputSpec([None, 1, 5, 17], "float32")]
    static = oar.jit.to_static(masked_softmax, input_spec=spec, backend="CINN")
    rng = np.random.default_rng(5)
    for b in (1, 2, 4):
        s = rng.standard_normal((b, 3, 5, 17)).astype("float32")
        m = rng.standard_normal((b, 1, 5, 17)).astype("float32")
        np.testing.assert_allclose(static(oar.to_tensor(s), oar.to_tensor(m)).numpy(),
                                   masked_softmax_ref(s.astype("float64"), m.astype("float64")), rtol=2e-6,
                                   atol=2e-6)
    assert "pd_op.add" in executed(static)  # a dynamic batch: the row map has no constants


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
def test_attention_backward_with_an_additive_mask_fuses_the_mask(dtype, tol):
    rng = np.random.default_rng(6)
    qn, kn, vn = (rng.standard_normal((2, 9, 3, 16)).astype(dtype) for _ in range(3))
    mn = (rng.standard_normal((2, 1, 9, 9)) * 0.5).astype(dtype)
    m = oar.to_tensor(mn)

    def loss(q, k, v):
        return (oar.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m) ** 2).sum()

    grads, fused = [], oar.jit.to_static(loss, backend="CINN")
    for fn in (loss, fused):
        ts = [oar.to_tensor(a, stop_gradient=False) for a in (qn, kn, vn)]
        fn(*ts).backward()
        grads.append([t.grad.numpy() for t in ts])
    for g, w in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    text = str(fused.concrete_programs[-1].executed_backward_program)
    assert "kernel.compiled_kernel" in text and 'op_name = "pd_op.add"' not in text, text
