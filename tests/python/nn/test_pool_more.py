"""lp_pool1d/2d and max_unpool1d/2d/3d (python/oar/nn/_functional_pool_more.py) and their
layers against NumPy in float64, gradients by central differences, bad inputs."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import OpCase, case_id, check_case, tensor, uniform

F64 = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731


def np_lp_pool2d(x, p, k, s, pad=(0, 0)):
    x = np.pad(x, [(0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])])
    n, c, h, w = x.shape
    oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
            out[:, :, i, j] = (win ** p).sum(axis=(2, 3)) ** (1.0 / p)
    return out


def np_lp_pool1d(x, p, k, s):
    return np_lp_pool2d(x[:, :, None, :], p, (1, k), (1, s))[:, :, 0, :]


def np_unpool(x, idx, out_shape):
    n, c = x.shape[:2]
    out = np.zeros((n, c, int(np.prod(out_shape))))
    for a in range(n):
        for b in range(c):
            out[a, b, idx[a, b].ravel()] = x[a, b].ravel()
    return out.reshape((n, c) + tuple(out_shape))


def _unpool_case(nd, in_shape, k):
    """x and the indices max_pool<nd>d gives for a random input of size in_shape * k."""
    rng = np.random.default_rng(nd)
    big = rng.standard_normal(in_shape[:2] + tuple(d * k for d in in_shape[2:]))
    pool = getattr(F, f"max_pool{nd}d")
    _, idx = pool(F64(big), k, k, return_mask=True)
    return idx.numpy(), tuple(d * k for d in in_shape[2:])


IDX2, OUT2 = _unpool_case(2, (2, 3, 3, 2), 2)
IDX1, OUT1 = _unpool_case(1, (2, 2, 4), 3)
IDX3, OUT3 = _unpool_case(3, (1, 2, 2, 2, 1), 2)

CASES = [
    OpCase("lp_pool1d", lambda x, *a: F.lp_pool1d(x, *(a or (2, 2, 2))), lambda x: np_lp_pool1d(x, 2, 2, 2),
           inputs=[(2, 3, 8)], shapes=[[(2, 3, 8)], [(0, 3, 8)], [(1, 2, 5)]],
           bad_inputs=[((F64(np.ones((2, 8))),), ValueError, "3-D"),
                       (lambda: (F64(np.ones((1, 1, 4))), 0, 2), ValueError, "norm_type")]),
    OpCase("lp_pool1d_p3", lambda x: F.lp_pool1d(x, 3.0, 3, 1), lambda x: np_lp_pool1d(x, 3.0, 3, 1),
           inputs=[uniform(0.5, 2.0, (2, 2, 6))], op="lp_pool1d"),
    OpCase("lp_pool2d", lambda x, *a: F.lp_pool2d(x, *a) if a else F.lp_pool2d(x, 2, [2, 3], [2, 1], 1),
           lambda x: np_lp_pool2d(x, 2, (2, 3), (2, 1), (1, 1)), inputs=[uniform(0.5, 2.0, (1, 2, 4, 5))],
           bad_inputs=[((oar.to_tensor(np.ones((1, 1, 2, 2), np.int64)),), TypeError, "float"),
                       (lambda: (F64(np.ones((1, 1, 4, 4))), 2, 0), ValueError, "kernel_size")]),
    OpCase("max_unpool2d", lambda x, *a: F.max_unpool2d(x, *(a or (oar.to_tensor(IDX2), 2))),
           lambda x: np_unpool(x, IDX2, OUT2), inputs=[(2, 3, 3, 2)],
           bad_inputs=[(lambda: (F64(np.ones((2, 3, 3, 2))), oar.to_tensor(IDX2[:1]), 2), ValueError,
                        "must have x's shape"),
                       (lambda: (F64(np.ones((2, 3, 3, 2))), oar.to_tensor(IDX2 + 100), 2), ValueError,
                        "indices must be in [0, 24)")]),
    OpCase("max_unpool1d", lambda x, *a: F.max_unpool1d(x, *(a or (oar.to_tensor(IDX1), 3))),
           lambda x: np_unpool(x, IDX1, OUT1), inputs=[(2, 2, 4)],
           bad_inputs=[(lambda: (F64(np.ones((2, 2, 4))), F64(IDX1), 3), TypeError, "int32/int64")]),
    OpCase("max_unpool3d", lambda x: F.max_unpool3d(x, oar.to_tensor(IDX3), 2),
           lambda x: np_unpool(x, IDX3, OUT3), inputs=[(1, 2, 2, 2, 1)]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


def test_layers_and_formats():
    x = oar.uniform([1, 3, 32], min=-1, max=1)
    assert oar.nn.LPPool1D(norm_type=2, kernel_size=2, stride=2, padding=0)(x).shape == [1, 3, 16]
    y = oar.rand([1, 3, 8, 6])
    a = oar.nn.LPPool2D(2, 2)(y).numpy()
    b = F.lp_pool2d(y.transpose([0, 2, 3, 1]), 2, 2, data_format="NHWC").numpy()
    np.testing.assert_allclose(a, b.transpose(0, 3, 1, 2), rtol=1e-6)
    data = oar.rand([1, 1, 6, 6])
    out, idx = F.max_pool2d(data, kernel_size=2, stride=2, return_mask=True)
    un = oar.nn.MaxUnPool2D(kernel_size=2)(out, idx)
    assert un.shape == [1, 1, 6, 6]
    np.testing.assert_allclose(F.max_pool2d(un, 2, 2).numpy(), out.numpy())
    assert F.max_unpool2d(out, idx, 2, output_size=[7, 7]).shape == [1, 1, 7, 7]
    with pytest.raises(ValueError, match="max_unpool2d: output_size .* within one stride"):
        F.max_unpool2d(out, idx, 2, output_size=[9, 9])
    with pytest.raises(ValueError, match="max_unpool1d: data_format must be 'NCL'"):
        F.max_unpool1d(out[0], idx[0], 2, data_format="NLC")
