"""paddle.sparse.nn: activations, sparse softmax, attention, sparse/submanifold convolution,
max pooling and batch norm against float64 NumPy references written from the definitions,
with finite-difference gradients and bad inputs naming the function."""
import itertools

import numpy as np
import pytest

import oar
from sparse_test_utils import RNG, check_values_grad, random_sparse, t

S = oar.sparse
SF = oar.sparse.nn.functional


@pytest.mark.parametrize("fn, ref", [
    (SF.relu, lambda a: np.maximum(a, 0)), (SF.relu6, lambda a: np.clip(a, 0, 6)),
    (lambda x: SF.leaky_relu(x, 0.5), lambda a: np.where(a >= 0, a, 0.5 * a)),
    (S.nn.ReLU(), lambda a: np.maximum(a, 0)), (S.nn.ReLU6(), lambda a: np.clip(a, 0, 6)),
    (S.nn.LeakyReLU(0.1), lambda a: np.where(a >= 0, a, 0.1 * a))])
def test_activations(fn, ref):
    a = random_sparse((4, 5)) * 5
    out = fn(t(a).to_sparse_coo(2))
    np.testing.assert_allclose(out.to_dense().numpy(), ref(a))
    assert out.nnz() == int((a != 0).sum())


def np_sparse_softmax(a):
    out = np.zeros_like(a)
    for i in np.ndindex(*a.shape[:-1]):
        row, nz = a[i], a[i] != 0
        if nz.any():
            e = np.exp(row[nz] - row[nz].max())
            out[i][nz] = e / e.sum()
    return out


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4), (0, 4)])
@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_softmax_over_stored_elements(shape, fmt):
    a = random_sparse(shape, density=0.6) * 3
    x = t(a).to_sparse_csr() if fmt == "csr" else t(a).to_sparse_coo(len(shape))
    out = S.nn.Softmax()(x)
    np.testing.assert_allclose(out.to_dense().numpy(), np_sparse_softmax(a), atol=1e-12)


def test_softmax_gradient_and_errors():
    a = random_sparse((3, 4), density=0.7)
    coo = t(a).to_sparse_coo(2)
    check_values_grad(lambda v: SF.softmax(S.sparse_coo_tensor(coo.indices(), v, [3, 4],
                                                               stop_gradient=False)),
                      coo.values().numpy())
    with pytest.raises(ValueError, match="softmax: axis must be -1"):
        SF.softmax(coo, axis=0)
    with pytest.raises(TypeError, match="softmax: x must be a floating tensor"):
        SF.softmax(t([[1, 0]], dtype="int64").to_sparse_coo(2))


def test_attention_against_dense_reference():
    b, h, s, d = 2, 2, 4, 3
    q, k, v = (RNG.standard_normal((b, h, s, d)) for _ in range(3))
    pattern = RNG.random((b * h, s, s)) < 0.7
    pattern[:, np.arange(s), np.arange(s)] = True
    kp = np.ones((b, s))
    kp[1, 3] = 0
    am = np.ones((s, s))
    am[0, 1] = 0
    mask = t(pattern.astype(np.float64)).to_sparse_csr()
    out = SF.attention(t(q), t(k), t(v), mask, t(kp), t(am)).numpy()
    keep = pattern.reshape(b, h, s, s) & (kp[:, None, None, :] != 0) & (am[None, None] != 0)
    scores = np.where(keep, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, p @ v, atol=1e-10)
    check_values_grad(lambda qv: SF.attention(qv, t(k), t(v), mask), q)


def np_conv(dense, w, bias, stride, pad, dil, subm_sites=None):
    """Channels-last convolution by its definition; pad: (before, after) per spatial dim."""
    nsp = w.ndim - 2
    n, *sp, cin = dense.shape
    k, cout = w.shape[:nsp], w.shape[-1]
    x = np.pad(dense, [(0, 0)] + list(pad) + [(0, 0)])
    out_sp = [(sp[i] + sum(pad[i]) - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    out = np.zeros([n] + out_sp + [cout])
    active = np.zeros([n] + out_sp, dtype=bool)
    occ = np.pad((dense != 0).any(-1), [(0, 0)] + list(pad))
    for b in range(n):
        for o in itertools.product(*[range(s) for s in out_sp]):
            acc = np.zeros(cout) + (0 if bias is None else bias)
            hit = False
            for kk in itertools.product(*[range(s) for s in k]):
                pos = tuple(o[i] * stride[i] + kk[i] * dil[i] for i in range(nsp))
                acc += x[(b,) + pos] @ w[kk]
                hit |= bool(occ[(b,) + pos])
            out[(b,) + o] = acc
            active[(b,) + o] = hit
    if subm_sites is not None:
        active = subm_sites
    return np.where(active[..., None], out, 0.0), active


@pytest.mark.parametrize("nsp, kernel, stride, padding, dilation", [
    (3, (1, 3, 3), 1, 0, 1), (3, (2, 2, 3), 2, 1, 1), (2, (3, 3), 1, 1, 2), (2, (2, 3), (2, 1), 0, 1)])
def test_conv_against_definition(nsp, kernel, stride, padding, dilation):
    shape = (2,) + (4, 5, 6)[:nsp] + (3,)
    a = random_sparse(shape, density=0.3, sparse_dim=nsp + 1)
    w = RNG.standard_normal(tuple(kernel) + (3, 2))
    bias = RNG.standard_normal(2)
    conv = SF.conv3d if nsp == 3 else SF.conv2d
    out = conv(t(a).to_sparse_coo(nsp + 1), t(w), t(bias), stride=stride, padding=padding,
               dilation=dilation)
    st = [stride] * nsp if isinstance(stride, int) else list(stride)
    ref, active = np_conv(a, w, bias, st, [(padding, padding)] * nsp, [dilation] * nsp)
    assert list(out.shape) == list(ref.shape)
    np.testing.assert_allclose(out.to_dense().numpy(), ref, atol=1e-10)
    assert out.nnz() == int(active.sum())


@pytest.mark.parametrize("nsp, kernel", [(3, (1, 3, 3)), (3, (3, 2, 3)), (2, (3, 3)), (2, (2, 4))])
def test_subm_conv_keeps_the_sites(nsp, kernel):
    shape = (1,) + (3, 4, 5)[:nsp] + (2,)
    a = random_sparse(shape, density=0.4, sparse_dim=nsp + 1)
    w = RNG.standard_normal(tuple(kernel) + (2, 3))
    fns = (SF.subm_conv3d, SF.subm_conv3d_igemm) if nsp == 3 else (SF.subm_conv2d, SF.subm_conv2d_igemm)
    pad = [((k - 1) // 2, k - 1 - (k - 1) // 2) for k in kernel]
    sites = (a != 0).any(-1)
    ref, _ = np_conv(a, w, None, [1] * nsp, pad, [1] * nsp, subm_sites=sites)
    for fn in fns:
        out = fn(t(a).to_sparse_coo(nsp + 1), t(w))
        assert list(out.shape) == list(shape[:-1]) + [3]
        np.testing.assert_allclose(out.to_dense().numpy(), ref, atol=1e-10)
        np.testing.assert_array_equal(out.indices().numpy(),
                                      t(a).to_sparse_coo(nsp + 1).indices().numpy())
    with pytest.raises(NotImplementedError, match="stride must be 1"):
        fns[0](t(a).to_sparse_coo(nsp + 1), t(w), stride=2)


def test_conv_gradients_reach_values_weight_and_bias():
    a = random_sparse((1, 3, 4, 2), density=0.5, sparse_dim=3)
    x = t(a).to_sparse_coo(3)
    w = RNG.standard_normal((3, 3, 2, 2))
    bias = RNG.standard_normal(2)
    check_values_grad(lambda v: SF.conv2d(S.sparse_coo_tensor(x.indices(), v, [1, 3, 4, 2],
                                                              stop_gradient=False), t(w), t(bias)),
                      x.values().numpy())
    check_values_grad(lambda wv: SF.subm_conv2d(x, wv, t(bias)), w)
    check_values_grad(lambda bv: SF.conv2d(x, t(w), bv, padding=1), bias)


def test_conv_layers_and_bad_inputs():
    x = t(random_sparse((1, 3, 4, 5, 2), sparse_dim=4)).to_sparse_coo(4).astype("float32")
    conv = S.nn.Conv3D(2, 4, (1, 3, 3))
    assert list(conv.weight.shape) == [1, 3, 3, 2, 4] and list(conv.bias.shape) == [4]
    assert list(conv(x).shape) == [1, 3, 2, 3, 4]
    assert list(S.nn.SubmConv3D(2, 4, 3)(x).shape) == [1, 3, 4, 5, 4]
    x2 = t(random_sparse((1, 3, 4, 2), sparse_dim=3)).to_sparse_coo(3).astype("float32")
    assert list(S.nn.Conv2D(2, 1, 3)(x2).shape) == [1, 1, 2, 1]
    assert list(S.nn.SubmConv2D(2, 1, 3, bias_attr=False)(x2).shape) == [1, 3, 4, 1]
    with pytest.raises(ValueError, match="conv3d: weight .* does not fit 2 input channels"):
        SF.conv3d(x, oar.ones([1, 1, 1, 3, 2]))
    with pytest.raises(ValueError, match="conv3d: data_format must be 'NDHWC'"):
        SF.conv3d(x, oar.ones([1, 1, 1, 2, 2]), data_format="NCDHW")
    with pytest.raises(ValueError, match="Conv3D: in_channels must be a positive int"):
        S.nn.Conv3D(0, 1, 3)
    with pytest.raises(ValueError, match=r"conv2d: x must be a 4-D sparse tensor NHWC, got shape \[1, 3, 4, 5, 2\]"):
        SF.conv2d(x, oar.ones([1, 1, 2, 2]))


def np_sparse_maxpool(a, k, s, p, ceil=False):
    n, d, h, w, c = a.shape
    occ = np.pad((a != 0).any(-1), [(0, 0)] + [(p, p)] * 3)
    x = np.pad(a, [(0, 0)] + [(p, p)] * 3 + [(0, 0)])
    out_sp = [(-(-(dim + 2 * p - k) // s) if ceil else (dim + 2 * p - k) // s) + 1
              for dim in (d, h, w)]
    out = np.zeros([n] + out_sp + [c])
    for b in range(n):
        for o in itertools.product(*[range(v) for v in out_sp]):
            win = tuple(slice(o[i] * s, o[i] * s + k) for i in range(3))
            sites = occ[(b,) + win]
            if sites.any():
                out[(b,) + o] = x[(b,) + win][sites].max(0)
    return out


@pytest.mark.parametrize("k, s, p, ceil", [(3, 1, 0, False), (2, 2, 0, False), (3, 2, 1, False),
                                           (2, 2, 0, True)])
def test_max_pool3d_over_active_sites(k, s, p, ceil):
    a = random_sparse((2, 4, 5, 4, 3), density=0.3, sparse_dim=4) - 0.0
    a[a != 0] -= 3.0  # all stored values negative: a max over zeros would be wrong
    out = SF.max_pool3d(t(a).to_sparse_coo(4), k, stride=s, padding=p, ceil_mode=ceil)
    np.testing.assert_allclose(out.to_dense().numpy(), np_sparse_maxpool(a, k, s, p, ceil))
    if ceil:
        assert list(out.shape) == [2, 2, 3, 2, 3]
    assert list(S.nn.MaxPool3D(k, s, p, ceil_mode=ceil)(t(a).to_sparse_coo(4)).shape) == list(out.shape)


def test_max_pool3d_gradient_and_errors():
    a = random_sparse((1, 3, 3, 3, 2), density=0.6, sparse_dim=4)
    x = t(a).to_sparse_coo(4)
    check_values_grad(lambda v: SF.max_pool3d(S.sparse_coo_tensor(x.indices(), v, [1, 3, 3, 3, 2],
                                                                  stop_gradient=False), 2, 1),
                      x.values().numpy())
    with pytest.raises(ValueError, match="max_pool3d: the kernel .* does not fit"):
        SF.max_pool3d(x, 5)


def test_batch_norm_normalizes_the_stored_values():
    a = random_sparse((2, 3, 4, 4, 3), density=0.5, sparse_dim=4)
    x = t(a).to_sparse_coo(4)
    bn = S.nn.BatchNorm(3)
    bn.weight.set_value(oar.to_tensor([1.0, 2.0, 0.5]))
    out = bn(x.astype("float32"))
    v = x.values().numpy()
    ref = (v - v.mean(0)) / np.sqrt(v.var(0) + 1e-5) * [1.0, 2.0, 0.5]
    np.testing.assert_allclose(out.values().numpy(), ref, atol=1e-4)
    np.testing.assert_allclose(bn._mean.numpy(), 0.1 * v.mean(0), atol=1e-5)
    bn.eval()
    assert list(bn(x.astype("float32")).shape) == [2, 3, 4, 4, 3]
    with pytest.raises(ValueError, match="BatchNorm: x must be a COO tensor with one dense dim"):
        bn(t(a).to_sparse_coo(5))


def test_convert_sync_batchnorm():
    model = oar.nn.Sequential(S.nn.Conv3D(3, 5, 3), S.nn.BatchNorm(5))
    sync = S.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(sync[1], S.nn.SyncBatchNorm) and sync[1].weight is model[1].weight


def test_rulebooks_never_densify():
    # a 10**18-site grid with 4 active sites: a dense path could not allocate it
    idx = [[0, 0, 0, 0], [1, 2, 3, 4], [0, 0, 0, 0], [0, 0, 0, 0]]
    y = S.sparse_coo_tensor(idx, oar.ones([4, 1]), [1, 10 ** 6, 10 ** 6, 10 ** 6, 1])
    out = SF.subm_conv3d(y, oar.ones([3, 3, 3, 1, 1]))
    np.testing.assert_array_equal(out.values().numpy()[:, 0], [2, 3, 3, 2])  # neighbours along D
    assert SF.conv3d(y, oar.ones([3, 3, 3, 1, 1]), padding=1).nnz() == 6 * 2 * 2  # H, W >= 0
    assert SF.max_pool3d(y, 2, 2).nnz() == 3
    with pytest.raises(ValueError, match="max_pool3d: kernel_size .* offsets; at most"):
        SF.max_pool3d(y, [10 ** 5] * 3)
    huge = S.sparse_coo_tensor([[0, 0], [1, 1]], [1.0, 2.0], [2 ** 62, 2 ** 62])
    with pytest.raises(ValueError, match="sparse: a grid of dims .* more than 2\\*\\*63 positions"):
        huge.coalesce()
