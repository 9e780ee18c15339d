"""Every candidate the float32 convolution's tuning may pick (Note [Convolution tuning]:
oneDNN's preferred layouts, the plain ones, channels in vector-width blocks, im2col +
GEMM), forced with OAR_CONV_ALGO, forward and both gradients against float64 NumPy:
odd sizes, strides, asymmetric padding, dilation, groups, channels-last, 0-size batch."""
import itertools

import numpy as np
import oar
import oar.nn.functional as F
import pytest
from test_conv_pool import np_conv, np_conv_transpose

ALGOS = ["onednn", "onednn-plain", "onednn-blocked", "im2col"]

# (x shape NCHW, filter shape, stride, pads [top, bottom, left, right], dilation, groups)
CASES = [
    ((2, 16, 9, 11), (32, 16, 3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
    ((3, 5, 13, 7), (7, 5, 3, 3), (2, 2), [1, 0, 2, 1], (1, 1), 1),
    ((1, 32, 12, 12), (48, 32, 3, 3), (2, 1), [1, 1, 1, 1], (2, 2), 1),
    ((2, 8, 10, 9), (12, 4, 3, 1), (1, 1), [0, 2, 0, 0], (1, 1), 2),
    ((2, 64, 7, 7), (64, 64, 1, 1), (1, 1), [0, 0, 0, 0], (1, 1), 1),
    ((0, 16, 8, 8), (16, 16, 3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
]


def np_conv_grads(x, w, g, stride, pads, dil, groups):
    """d<conv(x, w), g>/dx and /dw in float64."""
    nd = x.ndim - 2
    out_sz = g.shape[2:]
    full = [(out_sz[i] - 1) * stride[i] + dil[i] * (w.shape[2 + i] - 1) + 1 - pads[i][0] - pads[i][1]
            for i in range(nd)]
    outpad = [x.shape[2 + i] - full[i] for i in range(nd)]
    dx = np_conv_transpose(g, w, stride, pads, outpad, dil, groups)
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    O, cg = w.shape[0], w.shape[1]
    og = O // groups
    dw = np.zeros(w.shape)
    for o in range(O):
        gi = o // og
        for kidx in itertools.product(*[range(k) for k in w.shape[2:]]):
            sl = tuple(slice(kidx[i] * dil[i], kidx[i] * dil[i] + stride[i] * (out_sz[i] - 1) + 1, stride[i])
                       for i in range(nd))
            patch = xp[(slice(None), slice(gi * cg, (gi + 1) * cg)) + sl]  # [N, cg, *out]
            dw[(o, slice(None)) + kidx] = np.tensordot(g[:, o], patch, axes=([0] + list(range(1, nd + 1)),
                                                                             [0] + list(range(2, nd + 2))))
    return dx, dw


def run_conv(x, w, stride, pads, dil, groups, channels_last, g):
    """oar's conv2d forward and its gradients for upstream gradient g (all NCHW float64)."""
    fmt = "NHWC" if channels_last else "NCHW"
    to = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if channels_last else (lambda a: a)
    back = (lambda a: a.transpose(0, 3, 1, 2)) if channels_last else (lambda a: a)
    xt = oar.to_tensor(to(x).astype("float32"), stop_gradient=False)
    wt = oar.to_tensor(w.astype("float32"), stop_gradient=False)
    y = F.conv2d(xt, wt, stride=list(stride), padding=pads, dilation=list(dil), groups=groups, data_format=fmt)
    (y * oar.to_tensor(to(g).astype("float32"))).sum().backward()
    return back(y.numpy()), back(xt.grad.numpy()), wt.grad.numpy()


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_forced_candidate_matches_float64(monkeypatch, algo, case, channels_last):
    xs, ws, stride, p, dil, groups = CASES[case]
    monkeypatch.setenv("OAR_CONV_ALGO", algo)  # read at every call; the choice is cached per setting
    rng = np.random.default_rng(case)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
    pads = [(p[0], p[1]), (p[2], p[3])]
    ref = np_conv(x, w, stride, pads, dil, groups)
    g = rng.standard_normal(ref.shape)
    y, dx, dw = run_conv(x, w, stride, p, dil, groups, channels_last, g)
    rdx, rdw = np_conv_grads(x, w, g, stride, pads, dil, groups)
    assert y.shape == ref.shape and dx.shape == x.shape and dw.shape == w.shape
    # float32 sums of <= 1.3k products of unit-scale terms: relative error ~1e-6
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-3 * max(1, xs[0]))
