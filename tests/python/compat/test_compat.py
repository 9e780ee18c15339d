"""oar.compat (Paddle 3.3's paddle.compat): the torch-signature functions against NumPy in
float64 (0-size and broadcast shapes included), gradients by central differences through the
op harness, Paddle's argument names rejected with the Paddle function named."""
import numpy as np
import pytest

import oar
import oar.compat as C
from op_test_utils import OpCase, case_id, check_case, tensor

F64 = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731


CASES = [
    OpCase("compat.max", lambda x, dim=1: C.max(x, dim).values, lambda x: x.max(axis=1),
           inputs=[(3, 4)], shapes=[[(3, 4)], [(2, 5, 3)], [(0, 2)], [(2, 1)]],
           bad_inputs=[((F64(np.ones((2, 2))), 5), IndexError, "dim 5"),
                       ((F64(np.ones((2, 2))), 1.5), TypeError, "float")]),
    OpCase("compat.min", lambda x, *a: C.min(x, *a).values if a else C.min(x, dim=-1, keepdim=True).values,
           lambda x: x.min(axis=-1, keepdims=True), inputs=[(3, 4)],
           shapes=[[(3, 4)], [(2, 3, 5)]],
           bad_inputs=[((F64([1.0]), 0, True, 3), TypeError, "takes (input)")]),
    OpCase("compat.max_other", lambda x, y: C.max(x, y), np.maximum, inputs=[(3, 4), (4,)],
           shapes=[[(3, 4), (4,)], [(0, 4), (4,)], [(2, 1), (1, 3)]], op="compat.max"),
    OpCase("compat.min_all", lambda x: C.min(x), lambda x: x.min(), inputs=[(3, 4)],
           shapes=[[(3, 4)], [()]], op="compat.min"),
    OpCase("compat.sort", lambda x, **kw: C.sort(x, 0, descending=True, **kw).values,
           lambda x: -np.sort(-x, axis=0), inputs=[(4, 3)], shapes=[[(4, 3)], [(0, 3)], [(5,)]],
           bad_inputs=[((F64([1.0]),), TypeError, "paddle.sort", {"axis": 0})]),
    OpCase("compat.median", lambda x, dim=1: C.median(x, dim).values,
           lambda x: np.sort(x, axis=1)[:, (x.shape[1] - 1) // 2], inputs=[(3, 4)],
           shapes=[[(3, 4)], [(2, 5)]], grad=False,
           bad_inputs=[((F64([1.0]), "a"), TypeError, "dim")]),
    OpCase("compat.median_all", lambda x: C.median(x),
           lambda x: np.sort(x.ravel())[(x.size - 1) // 2], inputs=[(3, 4)], grad=False,
           op="compat.median"),
    OpCase("compat.slogdet", lambda x: C.slogdet(x).logabsdet,
           lambda x: np.linalg.slogdet(x)[1], inputs=[(3, 3)], shapes=[[(3, 3)], [(2, 4, 4)]],
           grad=False, bad_inputs=[(([[1.0]],), TypeError, "Tensor")]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


def test_min_max_return_values_and_indices():
    x = F64([[0.2, 0.3, 0.5, 0.9], [0.1, 0.2, 0.6, 0.7]])
    r = C.max(x, dim=1)
    assert isinstance(r, C.MinMaxRetType) and r.indices.dtype.name == "int64"
    np.testing.assert_array_equal(r.indices.numpy(), [3, 3])
    # ties: the gradient goes to the indexed element only (torch's rule)
    t = F64([1.0, 1.0, 1.0])
    t.stop_gradient = False
    C.max(t, 0).values.backward()
    assert t.grad.numpy().sum() == 1.0 and t.grad.numpy()[int(C.max(t, 0).indices)] == 1.0
    v, i = oar.zeros([2], "float64"), oar.zeros([2], "int64")
    C.min(x, 1, out=(v, i))
    np.testing.assert_array_equal(v.numpy(), [0.2, 0.1])
    with pytest.raises(TypeError, match="tensors of integral type"):
        y = oar.to_tensor([1, 2])
        y.stop_gradient = False
        C.max(y)
    with pytest.raises(TypeError, match="out must be a list or tuple of two"):
        C.max(x, 1, out=v)


def test_median_nanmedian_indices():
    x = oar.to_tensor([[1, float("nan"), 3], [4, 5, 6], [float("nan")] * 3], dtype="float32")
    r = C.nanmedian(x, dim=1)
    np.testing.assert_array_equal(r.values.numpy()[:2], [1.0, 5.0])
    assert np.isnan(r.values.numpy()[2]) and r.indices.numpy().tolist() == [0, 1, 0]
    assert float(C.nanmedian(x)) == 4.0
    m = C.median(oar.to_tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), dim=1)
    assert m.indices.numpy().tolist() == [1, 1, 1]


def test_equal_split_unique_seed():
    assert C.equal(oar.to_tensor([1, 2, 3]), oar.to_tensor([1.0, 2.0, 3.0]))
    assert not C.equal(oar.to_tensor([1, 2, 3]), oar.to_tensor([1, 3, 2]))
    assert not C.equal(oar.to_tensor([1, 2]), oar.to_tensor([1, 2, 3]))
    assert not C.equal(F64([np.nan]), F64([np.nan]))
    x = oar.rand([3, 8, 5])
    assert [p.shape[1] for p in C.split(x, 3, dim=1)] == [3, 3, 2]
    assert [p.shape[1] for p in C.split(x, [1, 2, 5], dim=-2)] == [1, 2, 5]
    np.testing.assert_array_equal(oar.concat(C.split(x, 3, 1), axis=1).numpy(), x.numpy())
    assert [p.shape[0] for p in C.split(oar.zeros([0, 2]), 2)] == [0]
    with pytest.raises(ValueError, match="compat.split: split sizes .* sum to 7"):
        C.split(x, [1, 2, 4], dim=1)
    with pytest.raises(ValueError, match="compat.split: split sizes must be non-negative"):
        C.split(x, [-1, 9], dim=1)
    with pytest.raises(ValueError, match="compat.split: split_size_or_sections must be positive"):
        C.split(x, 0)
    with pytest.raises(TypeError, match="paddle.split"):
        C.split(x, 2, axis=1)
    u, inv, cnt = C.unique(oar.to_tensor([2, 3, 3, 1, 5, 3]), return_inverse=True,
                           return_counts=True)
    assert u.numpy().tolist() == [1, 2, 3, 5] and inv.numpy().tolist() == [1, 2, 2, 0, 3, 2]
    assert cnt.numpy().tolist() == [1, 1, 3, 1]
    s = C.seed()
    assert 0 <= s < 2 ** 63
    a = oar.rand([4]).numpy()
    oar.seed(s)
    np.testing.assert_array_equal(oar.rand([4]).numpy(), a)


def test_sort_values_and_indices_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, (3, 6)).astype(np.float64)
    r = C.sort(F64(a), stable=True)
    np.testing.assert_array_equal(r.values.numpy(), np.sort(a, axis=-1))
    np.testing.assert_array_equal(r.indices.numpy(), np.argsort(a, axis=-1, kind="stable"))
