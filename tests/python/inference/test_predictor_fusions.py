"""The predictor's CNN rewrites give the eager outputs: max_pool2d_with_index -> max_pool2d
(mask unused), conv2d + bias [+ relu] -> fused_conv2d, conv2d + inference batch_norm folded
into fused_conv2d (fold_parameters computes the filter and bias once); plus the OpCase
harness entries of the two new ops (forward vs float64 NumPy, gradient, bad inputs)."""
import os

import numpy as np
import oar
import oar.nn as nn
import oar.nn.functional as F
import pytest
from op_test_utils import OpCase, case_id, check_bad_inputs, check_forward, check_grad, tensor
from ops.test_conv_pool import np_conv, np_pool  # the conv/pool suite's NumPy references

_C = oar._C


def _predict(layer, tmp_path, shape, batches, ir_optim=True):
    layer.eval()
    prefix = os.path.join(str(tmp_path), "m")
    spec = [oar.static.InputSpec([None] + list(shape), "float32", "x")]
    oar.jit.save(layer, prefix, input_spec=spec)
    config = oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    config.switch_ir_optim(ir_optim)
    pred = oar.inference.create_predictor(config)
    rng = np.random.default_rng(0)
    for b in batches:
        x = rng.standard_normal((b,) + tuple(shape)).astype("float32")
        with oar.no_grad():
            ref = layer(oar.to_tensor(x)).numpy()
        got = pred.run([oar.to_tensor(x)])[0].numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    # The predictor runs a lowered program: each kernel.phi_kernel names the op it runs.
    return sorted({op.attrs().get("op_name", op.name) for op in pred.program.ops()})


class ConvBlock(nn.Layer):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2D(3, 8, 3, padding=1)
        self.c2 = nn.Conv2D(8, 8, 3, padding=1, bias_attr=False)
        self.bn = nn.BatchNorm2D(8)
        self.c3 = nn.Conv2D(8, 8, 1, bias_attr=False)
        self.bn3 = nn.BatchNorm2D(8)
        self.pool = nn.MaxPool2D(2, 2)
        self.pool3 = nn.MaxPool2D(3, 2, 1)

    def forward(self, x):
        y = self.pool(F.relu(self.c1(x)))
        z = F.relu(self.bn(self.c2(y)))
        return self.pool3(F.relu(self.bn3(self.c3(z)) + y))


def _randomize_bn(layer):
    rng = np.random.default_rng(1)
    for bn in (layer.bn, layer.bn3):
        bn._mean.set_value(rng.standard_normal(8).astype("float32"))
        bn._variance.set_value(rng.uniform(0.5, 2.0, 8).astype("float32"))
        bn.weight.set_value(rng.uniform(0.5, 1.5, 8).astype("float32"))
        bn.bias.set_value(rng.standard_normal(8).astype("float32"))


def test_cnn_fusions_equal_eager(tmp_path):
    oar.seed(0)
    layer = ConvBlock()
    _randomize_bn(layer)
    ops = _predict(layer, tmp_path, (3, 16, 16), (1, 3))
    assert "pd_op.fused_conv2d" in ops and "pd_op.max_pool2d" in ops, ops
    for gone in ("pd_op.batch_norm", "pd_op.conv2d", "pd_op.max_pool2d_with_index"):
        assert gone not in ops, ops
    # Without IR optimizations the program runs as traced.
    ops = _predict(layer, tmp_path / "raw", (3, 16, 16), (2,), ir_optim=False)
    assert "pd_op.batch_norm" in ops and "pd_op.fused_conv2d" not in ops


def test_lenet_and_resnet_fusions_equal_eager(tmp_path):
    oar.seed(0)
    ops = _predict(oar.vision.models.LeNet(), tmp_path / "lenet", (1, 28, 28), (1, 4))
    assert ops.count("pd_op.conv2d") == 0 and "pd_op.fused_conv2d" in ops
    oar.seed(0)
    net = oar.vision.models.resnet18(num_classes=10)
    ops = _predict(net, tmp_path / "resnet", (3, 32, 32), (2,))
    assert "pd_op.batch_norm" not in ops and "pd_op.conv2d" not in ops, ops


def test_nan_in_pooling_windows_matches_the_index_kernel():
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 9)).astype("float32")
    x[0, 0, 0, 0] = np.nan  # a window's first element: NaN wins
    x[0, 1, 3, 3] = np.nan  # a later element: skipped
    x[1, 2, 5, 0] = np.nan
    for k, s, p, ceil in [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (2, 1, 0, False)]:
        t = tensor(x)
        a = _C.ops.max_pool2d(t, [k, k], [s, s], [p] * 4, ceil, False, "NCHW").numpy()
        b = _C.ops.max_pool2d_with_index(t, [k, k], [s, s], [p] * 4, ceil, False, "NCHW")[0].numpy()
        np.testing.assert_array_equal(a, b)


def test_tiled_2x2_pooling_rows_match_the_index_kernel():
    # 2x2 stride 2 over an exactly tiled input runs as one loop over all output rows, 8
    # outputs per AVX2 step: widths with and without a remainder, NaNs at every position
    rng = np.random.default_rng(1)
    for shape in [(2, 3, 28, 28), (1, 2, 4, 36), (3, 2, 10, 10), (2, 1, 2, 32), (0, 2, 4, 4)]:
        for _ in range(10):
            x = rng.standard_normal(shape).astype("float32")
            if x.size:
                x.flat[rng.integers(0, x.size, max(1, x.size // 20))] = np.nan
            t = tensor(x)
            a = _C.ops.max_pool2d(t, [2, 2], [2, 2], [0] * 4, False, False, "NCHW").numpy()
            b = _C.ops.max_pool2d_with_index(t, [2, 2], [2, 2], [0] * 4, False, False, "NCHW")[0].numpy()
            np.testing.assert_array_equal(a, b)


def test_strided_pooling_rows_match_the_index_kernel():
    # Stride 1 and 2 windows run 8 outputs per AVX2 step over a row padded with -inf:
    # ResNet's 3x3/2 stem pool, ceil mode, padding 2, and rows with and without a
    # remainder of 8, NaNs anywhere (first elements of windows included)
    rng = np.random.default_rng(2)
    for shape in [(2, 3, 32, 32), (1, 2, 9, 37), (1, 1, 5, 16)]:
        for k, s, p, ceil in [(3, 2, 1, False), (3, 2, 1, True), (3, 1, 1, False), (5, 2, 2, False),
                              (2, 1, 0, True), (4, 2, 1, True)]:
            x = rng.standard_normal(shape).astype("float32")
            x.flat[rng.integers(0, x.size, max(1, x.size // 15))] = np.nan
            t = tensor(x)
            a = _C.ops.max_pool2d(t, [k, k], [s, s], [p] * 4, ceil, False, "NCHW").numpy()
            b = _C.ops.max_pool2d_with_index(t, [k, k], [s, s], [p] * 4, ceil, False, "NCHW")[0].numpy()
            np.testing.assert_array_equal(a, b)
            clean = rng.standard_normal(shape)
            got = _C.ops.max_pool2d(tensor(clean), [k, k], [s, s], [p] * 4, ceil, False, "NCHW").numpy()
            ref = _C.ops.max_pool2d_with_index(tensor(clean), [k, k], [s, s], [p] * 4, ceil, False,
                                               "NCHW")[0].numpy()
            np.testing.assert_array_equal(got, ref)  # float64: the scalar path


def _fused_np(x, w, b, stride, pads, dil, groups, act):
    out = np_conv(x, w, stride, pads, dil, groups)
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return np.maximum(out, 0) if act == "relu" else out


def _fused_case(name, xs, ws, stride, pad, act, bias=True):
    pads = [pad] * 4

    def fn_oar(x, w, *b):
        return _C.ops.fused_conv2d(x, w, b[0] if b else None, [stride] * 2, pads, [1, 1], 1, "NCHW", act)

    def fn_np(x, w, *b):
        return _fused_np(x, w, b[0] if b else None, [stride] * 2, [(pad, pad)] * 2, [1, 1], 1, act)
    inputs = [xs, ws] + ([(ws[0],)] if bias else [])
    return OpCase(name, fn_oar, fn_np, inputs=inputs, shapes=[inputs], grad=False, op="fused_conv2d",
                  tol={"float32": (2e-4, 2e-4)})


FUSED_CASES = [
    _fused_case("fused_conv2d_bias_relu", (2, 3, 7, 6), (4, 3, 3, 3), 1, 1, "relu"),
    _fused_case("fused_conv2d_bias", (1, 5, 8, 8), (6, 5, 3, 3), 2, 1, ""),
    _fused_case("fused_conv2d_relu_nobias", (2, 4, 5, 5), (3, 4, 1, 1), 1, 0, "relu", bias=False),
    _fused_case("fused_conv2d_empty_batch", (0, 3, 5, 5), (4, 3, 3, 3), 1, 1, "relu"),
]

FUSED_BAD = OpCase(
    "fused_conv2d_bad", lambda x, w, b, **k: _C.ops.fused_conv2d(x, w, b, **k), None, op="fused_conv2d",
    attrs=dict(strides=[1, 1], paddings=[0, 0, 0, 0], dilations=[1, 1], groups=1, data_format="NCHW",
               activation="relu"),
    bad_inputs=[
        ([tensor(np.ones((1, 3, 5, 5))), tensor(np.ones((4, 3, 3, 3))), tensor(np.ones(3))], ValueError,
         "bias"),
        ([tensor(np.ones((1, 3, 5, 5))), tensor(np.ones((4, 3, 3, 3))), tensor(np.ones(4), "float64")],
         TypeError, "bias"),
        ([tensor(np.ones((1, 3, 5, 5))), tensor(np.ones((4, 3, 3, 3))), tensor(np.ones(4))], ValueError,
         "activation", dict(strides=[1, 1], paddings=[0, 0, 0, 0], dilations=[1, 1], groups=1,
                            data_format="NCHW", activation="gelu")),
        ([tensor(np.ones((3, 5, 5))), tensor(np.ones((4, 3, 3, 3))), tensor(np.ones(4))], ValueError, "4-D"),
        ([tensor(np.ones((1, 2, 5, 5))), tensor(np.ones((4, 3, 3, 3))), tensor(np.ones(4))], ValueError,
         "channels"),
    ])

POOLS = [((2, 3, 8, 8), 2, 2, 0, False), ((2, 3, 7, 8), 3, 2, 1, False), ((2, 3, 7, 8), 3, 2, 1, True),
         ((1, 2, 6, 5), 2, 1, 0, False), ((0, 3, 4, 4), 2, 2, 0, False)]


def _pool_case(i, spec):
    xs, k, s, p, ceil = spec

    def fn_oar(x):
        return _C.ops.max_pool2d(x, [k, k], [s, s], [p] * 4, ceil, False, "NCHW")

    def fn_np(x):
        return np_pool(x, [k, k], [s, s], [(p, p)] * 2, "max", ceil)
    return OpCase(f"max_pool2d_noindex_{i}", fn_oar, fn_np, inputs=[xs], shapes=[[xs]],
                  grad_shapes=[[xs]] if xs[0] else [], op="max_pool2d")


POOL_CASES = [_pool_case(i, spec) for i, spec in enumerate(POOLS)]

POOL_BAD = OpCase(
    "max_pool2d_bad", lambda x, **k: _C.ops.max_pool2d(x, **k), None, op="max_pool2d",
    attrs=dict(kernel_size=[2, 2], strides=[2, 2], paddings=[0, 0, 0, 0], ceil_mode=False, adaptive=False,
               data_format="NCHW"),
    bad_inputs=[
        ([tensor(np.ones((3, 5, 5)))], ValueError, "4-D"),
        ([tensor(np.ones((1, 3, 5, 5)))], ValueError, "data_format",
         dict(kernel_size=[2, 2], strides=[2, 2], paddings=[0, 0, 0, 0], ceil_mode=False, adaptive=False,
              data_format="NCL")),
        ([tensor(np.ones((1, 3, 5, 5)))], ValueError, "stride",
         dict(kernel_size=[2, 2], strides=[0, 2], paddings=[0, 0, 0, 0], ceil_mode=False, adaptive=False,
              data_format="NCHW")),
    ])


@pytest.mark.parametrize("case", FUSED_CASES + POOL_CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c.grad_shapes], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [FUSED_BAD, POOL_BAD], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


@pytest.mark.parametrize("algo", ["onednn", "onednn-plain", "onednn-blocked", "im2col", "winograd", "direct-rows",
                                  "direct-channels"])
@pytest.mark.parametrize("spec", [((3, 8, 6, 6), (16, 8, 3, 3), 1, 1, "relu", True),   # 3x3, batch folded
                                  ((2, 16, 5, 7), (8, 16, 3, 3), 2, 1, "", True),      # stride 2, odd sizes
                                  ((2, 8, 4, 4), (8, 8, 1, 1), 1, 0, "relu", False),   # 1x1: no im2col copy
                                  ((1, 4, 5, 5), (8, 4, 3, 3), 1, 0, "relu", True),    # one image
                                  ((2, 3, 9, 12), (7, 3, 3, 3), 1, 1, "relu", True)])  # rows of 12: direct-rows
def test_fused_conv2d_each_algorithm(monkeypatch, algo, spec):
    """Every candidate the fused convolution's tuning may pick (OAR_CONV_ALGO forces one)
    gives the float64 NumPy result, bias and relu included."""
    xs, ws, stride, pad, act, bias = spec
    monkeypatch.setenv("OAR_CONV_ALGO", algo)
    rng = np.random.default_rng(sum(xs) + len(algo))
    x = rng.standard_normal(xs).astype("float32")
    w = rng.standard_normal(ws).astype("float32")
    b = rng.standard_normal(ws[0]).astype("float32") if bias else None
    for _ in range(2):  # the tuning call, then the cached pick
        got = _C.ops.fused_conv2d(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(b) if bias else None,
                                  [stride] * 2, [pad] * 4, [1, 1], 1, "NCHW", act).numpy()
        ref = _fused_np(x.astype(np.float64), w.astype(np.float64), b, [stride] * 2, [(pad, pad)] * 2, [1, 1], 1,
                        act)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec", [((13, 64, 16, 16), (64, 64, 3, 3), [1, 1, 1, 1], "relu", True),  # 2 chunks
                                  ((2, 5, 7, 9), (6, 5, 3, 3), [1, 1, 1, 1], "", False),            # odd sizes
                                  ((1, 3, 4, 6), (4, 3, 3, 3), [2, 2, 2, 2], "relu", True),         # pad 2
                                  ((2, 4, 1, 1), (3, 4, 3, 3), [1, 1, 1, 1], "", True),             # 1x1 image
                                  ((1, 9, 6, 5), (10, 9, 3, 3), [0, 1, 2, 1], "relu", True),        # uneven pads
                                  ((3, 16, 3, 3), (8, 16, 3, 3), [0, 0, 0, 0], "", True)])          # one tile
def test_winograd_geometries(monkeypatch, spec):
    """The Winograd F(2x2, 3x3) candidate (conv_winograd.cc) on partial tiles, paddings up
    to 2, channel counts that are not multiples of 8 and batches split into chunks."""
    xs, ws, pads, act, bias = spec
    monkeypatch.setenv("OAR_CONV_ALGO", "winograd")
    rng = np.random.default_rng(xs[0] * 31 + xs[1])
    x = rng.standard_normal(xs).astype("float32")
    w = rng.standard_normal(ws).astype("float32")
    b = rng.standard_normal(ws[0]).astype("float32") if bias else None
    got = _C.ops.fused_conv2d(oar.to_tensor(x), oar.to_tensor(w), oar.to_tensor(b) if bias else None, [1, 1], pads,
                              [1, 1], 1, "NCHW", act).numpy()
    ref = _fused_np(x.astype(np.float64), w.astype(np.float64), b, [1, 1], [(pads[0], pads[1]), (pads[2], pads[3])],
                    [1, 1], 1, act)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-4)
