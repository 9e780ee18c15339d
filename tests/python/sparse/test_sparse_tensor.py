"""paddle.sparse's tensors: creation, COO/CSR conversions against scipy.sparse and NumPy,
coalescing, printing, autograd through values, and bad inputs naming the function."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sps

import oar
from sparse_test_utils import RNG, check_values_grad, random_sparse, t

S = oar.sparse


@pytest.mark.parametrize("shape, sparse_dim", [((4, 5), 2), ((4, 5), 1), ((2, 3, 4), 2),
                                               ((2, 3, 4), 3), ((0, 3), 2), ((3, 0, 2), 1)])
def test_dense_to_coo_and_back(shape, sparse_dim):
    a = random_sparse(shape, sparse_dim=sparse_dim)
    coo = t(a).to_sparse_coo(sparse_dim)
    assert coo.is_sparse() and coo.is_sparse_coo() and not coo.is_sparse_csr()
    assert coo.sparse_dim() == sparse_dim and coo.dense_dim() == len(shape) - sparse_dim
    assert list(coo.shape) == list(shape)
    mask = (a != 0).reshape(shape[:sparse_dim] + (int(np.prod(shape[sparse_dim:])),)).any(-1)
    np.testing.assert_array_equal(coo.indices().numpy(), np.stack(np.nonzero(mask)).reshape(sparse_dim, -1))
    assert coo.nnz() == int(mask.sum())
    np.testing.assert_array_equal(coo.to_dense().numpy(), a)


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 6), (1, 1), (0, 4)])
def test_dense_to_csr_matches_scipy(shape):
    a = random_sparse(shape)
    csr = t(a).to_sparse_csr()
    assert csr.is_sparse_csr() and list(csr.shape) == list(shape)
    mats = [a] if len(shape) == 2 else list(a)
    refs = [sps.csr_matrix(m) for m in mats]
    crows = np.concatenate([r.indptr for r in refs]) if refs else np.zeros(0)
    np.testing.assert_array_equal(csr.crows().numpy(), crows)
    np.testing.assert_array_equal(csr.cols().numpy(), np.concatenate([r.indices for r in refs]))
    np.testing.assert_allclose(csr.values().numpy(), np.concatenate([r.data for r in refs]))
    np.testing.assert_array_equal(csr.to_dense().numpy(), a)
    np.testing.assert_array_equal(csr.to_sparse_coo().to_sparse_csr().crows().numpy(), crows)


def test_sparse_coo_tensor_infers_shape_and_keeps_duplicates():
    idx = [[0, 0, 1], [1, 1, 2]]
    coo = S.sparse_coo_tensor(idx, [1.0, 2.0, 3.0])
    assert list(coo.shape) == [2, 3] and coo.dtype == oar.float32 and coo.nnz() == 3
    assert not coo.is_coalesced()
    ref = sps.coo_matrix(([1.0, 2.0, 3.0], idx), shape=(2, 3)).toarray()
    np.testing.assert_array_equal(coo.to_dense().numpy(), ref)
    c = S.coalesce(coo)
    assert c.is_coalesced() and c.nnz() == 2
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1], [1, 2]])
    np.testing.assert_array_equal(c.values().numpy(), [3.0, 3.0])


def test_coalesce_random_against_scipy():
    rows, cols = RNG.integers(0, 5, 40), RNG.integers(0, 6, 40)
    vals = RNG.standard_normal(40)
    coo = S.sparse_coo_tensor(np.stack([rows, cols]), t(vals), [5, 6]).coalesce()
    ref = sps.coo_matrix((vals, (rows, cols)), shape=(5, 6)).tocsr()
    ref.sum_duplicates()
    np.testing.assert_allclose(coo.to_dense().numpy(), ref.toarray(), atol=1e-12)
    lin = coo.indices().numpy()[0] * 6 + coo.indices().numpy()[1]
    assert np.all(np.diff(lin) > 0)


def test_coalesce_gradient_sums_duplicates():
    idx = np.array([[0, 2, 0, 1], [1, 0, 1, 1]])
    check_values_grad(lambda v: S.sparse_coo_tensor(idx, v, [3, 2], stop_gradient=False).coalesce(),
                      RNG.standard_normal(4))


def test_coo_with_dense_dims_and_gradients():
    idx = np.array([[0, 2], [1, 0]])
    vals = RNG.standard_normal((2, 3))
    check_values_grad(lambda v: S.sparse_coo_tensor(idx, v, [3, 2, 3], stop_gradient=False), vals)


def test_to_sparse_coo_is_differentiable():
    a = random_sparse((3, 4))
    x = t(a, grad=True)
    sp = x.to_sparse_coo(2)
    (sp.values() * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * (a != 0))


def test_csr_creation_and_batches():
    csr = S.sparse_csr_tensor([0, 2, 3, 5], [1, 3, 2, 0, 1], [1, 2, 3, 4, 5], [3, 4])
    assert csr.dtype == oar.int64
    ref = sps.csr_matrix(([1, 2, 3, 4, 5], [1, 3, 2, 0, 1], [0, 2, 3, 5]), shape=(3, 4))
    np.testing.assert_array_equal(csr.to_dense().numpy(), ref.toarray())
    b = S.sparse_csr_tensor([0, 1, 2, 0, 0, 1], [0, 1, 1], [1.0, 2.0, 3.0], [2, 2, 2])
    np.testing.assert_array_equal(b.to_dense().numpy(), [[[1, 0], [0, 2]], [[0, 0], [0, 3]]])


def test_printing_follows_paddle():
    coo = S.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], [1.0, 2.0, 3.0], [3, 3])
    assert repr(coo) == ("Tensor(shape=[3, 3], dtype=paddle.float32, place=Place(cpu), "
                         "stop_gradient=True,\n       indices=[[0, 1, 2],\n"
                         "                [1, 2, 0]],\n       values=[1., 2., 3.])")
    csr = coo.to_sparse_csr()
    assert "crows=[0, 1, 2, 3]" in repr(csr) and "cols=[1, 2, 0]" in repr(csr)


def test_dense_tensor_format_queries():
    x = t([[1.0, 0.0]])
    assert not x.is_sparse() and not x.is_sparse_coo() and not x.is_sparse_csr()
    assert x.to_dense() is x and x.sparse_dim() == 0 and x.dense_dim() == 2


def test_stop_gradient_follows_values():
    v = t([1.0, 2.0], grad=True)
    sp = S.sparse_coo_tensor([[0, 1]], v, [2], stop_gradient=False)
    assert not sp.stop_gradient
    (sp.values() * 3).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])
    assert S.sparse_coo_tensor([[0, 1]], v, [2]).stop_gradient


@pytest.mark.parametrize("call, match", [
    (lambda: S.sparse_coo_tensor([[0, 1]], [1.0], [3]), "sparse_coo_tensor: values' first dim"),
    (lambda: S.sparse_coo_tensor([[0, 5]], [1.0, 2.0], [3]), r"sparse_coo_tensor: shape\[0\] = 3"),
    (lambda: S.sparse_coo_tensor([[0, -1]], [1.0, 2.0]), "sparse_coo_tensor: indices must be non-neg"),
    (lambda: S.sparse_coo_tensor([[[0]]], [1.0]), "sparse_coo_tensor: indices must be 2-D"),
    (lambda: S.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [2, 3]), "sparse_coo_tensor: shape"),
    (lambda: S.sparse_csr_tensor([0, 1], [0], [1.0], [2, 2]), "sparse_csr_tensor: crows must have"),
    (lambda: S.sparse_csr_tensor([0, 2, 1], [0, 1], [1.0, 2.0], [2, 2]), "not decrease"),
    (lambda: S.sparse_csr_tensor([0, 1, 2], [0, 5], [1.0, 2.0], [2, 2]), "cols must lie"),
    (lambda: S.sparse_csr_tensor([0, 1, 2], [0, 1], [1.0, 2.0], [4]), "shape must be 2-D"),
    (lambda: t([1.0, 2.0]).to_sparse_coo(3), r"to_sparse_coo: sparse_dim must be an int in \[1, 1\]"),
    (lambda: t([1.0, 2.0]).to_sparse_csr(), "to_sparse_csr: x must be 2-D or 3-D"),
])
def test_bad_inputs_raise_naming_the_function(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_float_indices_are_refused():
    with pytest.raises(TypeError, match="sparse_coo_tensor: indices must be an integer tensor"):
        S.sparse_coo_tensor(t([[0.0, 1.0]]), [1.0, 2.0])


def test_import_oar_does_not_load_sparse():
    code = ("import sys, oar\nlazy = ['oar.sparse', 'oar.audio', 'oar.text', 'oar._windows']\n"
            "assert not [m for m in lazy if m in sys.modules], [m for m in lazy if m in sys.modules]\n"
            "x = oar.to_tensor([[0., 1.]]).to_sparse_coo(2)\nassert 'oar.sparse' in sys.modules\n"
            "assert oar.sparse.is_same_shape(x, oar.zeros([1, 2]))\n")
    subprocess.run([sys.executable, "-c", code], check=True)
