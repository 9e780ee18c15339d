"""oar.onnx.export of the ops beyond the basic set (loops, resampling, sorting, scatter and
gather, more elementwise math, random ops, det): each is exported inside a small layer,
run in ONNX Runtime on random inputs (a dynamic batch dim where the op allows one) and
compared with eager Oar."""
import numpy as np
import oar
import oar.nn.functional as F
import pytest
from oar import nn
from oar.static import InputSpec

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from test_onnx_export import _check, _op_types, _session


class _Fn(nn.Layer):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _feeds(**makers):
    """feeds_for(rng, n) from name -> (rng, n) -> array."""
    return lambda rng, n: {k: m(rng, n) for k, m in makers.items()}


def _f32(*shape, scale=1.0):
    return lambda rng, n: (rng.standard_normal([n, *shape]) * scale).astype("float32")


def _export_fn(tmp_path, tag, fn, spec, feeds, **kw):
    return _check(_Fn(fn), spec, feeds, tmp_path, tag, **kw)


# ------------------------------------------------------------------ cf.while -> Loop
def test_while_loop_becomes_loop(tmp_path):
    def fn(x):
        i = oar.zeros([1], "int64")

        def cond(i, y):
            return i < 4

        def body(i, y):
            return i + 1, F.relu(y) * 0.5 + y.mean(axis=1, keepdim=True)

        i, y = oar.static.nn.while_loop(cond, body, [i, x])
        return y, i

    m = _export_fn(tmp_path, "while", fn, [InputSpec([None, 5], "float32", "x")], _feeds(x=_f32(5)))
    assert "Loop" in _op_types(m)


def test_while_loop_data_dependent_trip_count(tmp_path):
    # the number of iterations depends on the input: the condition is computed in the body
    class Halve(nn.Layer):
        def forward(self, x):
            def cond(y, n):
                return y.abs().max() > 1.0

            def body(y, n):
                return y * 0.5, n + 1

            y, n = oar.static.nn.while_loop(cond, body, [x, oar.zeros([], "int32")])
            return y, n

    net = Halve()
    path = oar.onnx.export(net, str(tmp_path / "halve"), input_spec=[InputSpec([None, 3], "float32", "x")])
    sess = _session(path)
    for scale in (0.5, 3.0, 100.0):
        x = (np.random.default_rng(1).standard_normal([2, 3]) * scale).astype("float32")
        got = sess.run(None, {"x": x})
        ref = net(oar.to_tensor(x))
        np.testing.assert_allclose(got[0], ref[0].numpy(), rtol=1e-6)
        assert got[1] == ref[1].numpy() and got[1].dtype == np.int32


def test_python_while_in_to_static_and_nested_cond(tmp_path):
    # a Python while on a tensor converts to cf.while; a tensor if inside it to cf.if
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            s = x.sum() * 0.0
            while s < 3.0:
                if x.mean() > 0:
                    x = self.fc(x)
                else:
                    x = x + 1.0
                s = s + 1.0
            return x

    oar.seed(3)
    m = _check(Net(), [InputSpec([None, 4], "float32", "x")], _feeds(x=_f32(4)), tmp_path, "pywhile")
    assert "Loop" in _op_types(m)


# ------------------------------------------------------------------ interp -> Resize
_RESIZE_CASES = [
    ("nearest_scale", {"scale_factor": 2, "mode": "nearest"}),
    ("nearest_down", {"size": [4, 3], "mode": "nearest"}),
    ("nearest_odd", {"size": [13, 7], "mode": "nearest"}),
    ("nearest_frac", {"scale_factor": [1.5, 0.75], "mode": "nearest"}),
    ("bilinear", {"size": [13, 11], "mode": "bilinear"}),
    ("bilinear_ac", {"size": [13, 11], "mode": "bilinear", "align_corners": True}),
    ("bilinear_am1", {"size": [5, 11], "mode": "bilinear", "align_mode": 1}),
    ("bilinear_scale", {"scale_factor": [2.0, 0.5], "mode": "bilinear"}),
    ("bilinear_down", {"size": [3, 4], "mode": "bilinear"}),
    ("bicubic", {"size": [13, 11], "mode": "bicubic"}),
    ("bicubic_ac", {"size": [5, 12], "mode": "bicubic", "align_corners": True}),
]


@pytest.mark.parametrize("tag,kw", _RESIZE_CASES, ids=[c[0] for c in _RESIZE_CASES])
def test_interpolate_2d(tmp_path, tag, kw):
    m = _export_fn(tmp_path, tag, lambda x: F.interpolate(x, **kw), [InputSpec([None, 3, 6, 8], "float32", "x")],
                   _feeds(x=_f32(3, 6, 8)), atol=2e-5)
    assert "Resize" in _op_types(m)


def test_interpolate_1d_3d_nhwc_and_dynamic_spatial(tmp_path):
    def fn(a, b, c, d):
        return (F.interpolate(a, size=[9], mode="linear"), F.interpolate(a, scale_factor=3, mode="nearest"),
                F.interpolate(b, size=[3, 5, 4], mode="trilinear", align_corners=True),
                F.interpolate(b, scale_factor=2, mode="nearest"),
                F.interpolate(c, size=[7, 3], mode="bilinear", data_format="NHWC"),
                F.upsample(d, size=[10, 12], mode="bilinear"))

    spec = [InputSpec([None, 2, 5], "float32", "a"), InputSpec([None, 2, 2, 3, 4], "float32", "b"),
            InputSpec([None, 4, 6, 3], "float32", "c"), InputSpec([None, 2, None, None], "float32", "d")]
    _export_fn(tmp_path, "interp_nd", fn, spec,
               _feeds(a=_f32(2, 5), b=_f32(2, 2, 3, 4), c=_f32(4, 6, 3),
                      d=lambda rng, n: rng.standard_normal([n, 2, 5 + n, 7]).astype("float32")), atol=2e-5)


class _UNet(nn.Layer):
    """A small UNet: conv encoder, pooling, bilinear and nearest upsampling, skip concat."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU())
        self.e2 = nn.Sequential(nn.Conv2D(8, 16, 3, padding=1), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2D(16, 16, 3, padding=1), nn.ReLU())
        self.d2 = nn.Conv2D(32, 8, 3, padding=1)
        self.d1 = nn.Conv2D(16, 4, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        a = self.e1(x)                                    # 16x16
        b = self.e2(F.max_pool2d(a, 2))                   # 8x8
        c = self.mid(F.max_pool2d(b, 2))                  # 4x4
        c = F.interpolate(c, scale_factor=2, mode="bilinear", align_corners=True)
        y = F.relu(self.d2(oar.concat([c, b], axis=1)))
        y = self.up(y)
        y = self.d1(oar.concat([y, a], axis=1))
        return F.pad(y, [1, 1, 1, 1], mode="reflect")


def test_unet(tmp_path):
    oar.seed(11)
    m = _check(_UNet(), [InputSpec([None, 3, 16, 16], "float32", "x")], _feeds(x=_f32(3, 16, 16)), tmp_path,
               "unet", rtol=1e-4, atol=1e-4)
    assert {"Resize", "Pad", "MaxPool", "Concat"} <= _op_types(m)


# ------------------------------------------------------------------ padding, grid sample
def test_pad_modes(tmp_path):
    def fn(x, i):
        return (F.pad(x, [1, 2, 0, 3], mode="constant", value=1.5), F.pad(x, [2, 1, 1, 0], mode="reflect"),
                F.pad(x, [1, 2, 3, 1], mode="replicate"), F.pad(x, [2, 1, 1, 3], mode="circular"),
                F.pad(i, [1, 1, 2, 0], value=7))

    _export_fn(tmp_path, "pad", fn, [InputSpec([None, 2, 4, 5], "float32", "x"),
                                     InputSpec([None, 2, 3, 3], "int32", "i")],
               _feeds(x=_f32(2, 4, 5), i=lambda rng, n: rng.integers(-5, 5, [n, 2, 3, 3]).astype("int32")))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
def test_grid_sample(tmp_path, mode, padding_mode, align):
    def fn(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align)

    spec = [InputSpec([None, 2, 5, 6], "float32", "x"), InputSpec([None, 4, 3, 2], "float32", "grid")]
    # a grid a little beyond [-1, 1] exercises the padding; off the half-way points of nearest
    _export_fn(tmp_path, f"grid_{mode}_{padding_mode}_{align}", fn, spec,
               _feeds(x=_f32(2, 5, 6), grid=lambda rng, n: rng.uniform(-1.2, 1.2, [n, 4, 3, 2]).astype("float32")),
               atol=2e-5)


# ------------------------------------------------------------------ sorting -> TopK
def test_sort_argsort_topk_kthvalue(tmp_path):
    def fn(x, i):
        vals, idx = oar.topk(x, 3, axis=1)
        lo, lidx = oar.topk(x, 2, axis=-1, largest=False, sorted=False)
        kv, ki = oar.kthvalue(x, 2, axis=1)
        kk, kki = oar.kthvalue(x, 3, axis=-1, keepdim=True)
        return (oar.sort(x, axis=1), oar.argsort(x, axis=-1, descending=True), vals, idx, lo, lidx, kv, ki,
                kk, kki, oar.sort(i, axis=0, descending=True), oar.argsort(i, axis=1))

    def ints(rng, n):   # many ties: the order among equal values must be Oar's (stable)
        return rng.integers(0, 3, [n, 6]).astype("int64")

    m = _export_fn(tmp_path, "sort", fn, [InputSpec([None, 5, 4], "float32", "x"), InputSpec([None, 6], "int64", "i")],
                   _feeds(x=_f32(5, 4), i=ints), batches=(1, 4))
    assert "TopK" in _op_types(m)


# ------------------------------------------------------------------ scatter / gather
def _ids(low, high, shape):
    return lambda rng, n: rng.integers(low, high, shape).astype("int64")


@pytest.mark.parametrize("opset", [17, 18])   # the last write found by an [M, M] comparison / by ScatterND max
def test_scatter_overwrite_and_add(tmp_path, opset):
    def fn(x, idx, upd):
        return oar.scatter(x, idx, upd, overwrite=True), oar.scatter(x, idx, upd, overwrite=False)

    spec = [InputSpec([7, 3], "float32", "x"), InputSpec([None], "int64", "idx"), InputSpec([None, 3], "float32", "upd")]

    def feeds(rng, n):   # n updates with repeated (and negative) rows: the last write wins
        return {"x": rng.standard_normal([7, 3]).astype("float32"),
                "idx": rng.integers(-7, 7, [n * 3]).astype("int64"),
                "upd": rng.standard_normal([n * 3, 3]).astype("float32")}

    m = _export_fn(tmp_path, "scatter", fn, spec, feeds, batches=(1, 4), opset_version=opset)
    assert "ScatterND" in _op_types(m)


def test_scatter_nd_add_gather_nd_index_add(tmp_path):
    def fn(x, idx, upd, rows, val):
        return (oar.scatter_nd_add(x, idx, upd), oar.gather_nd(x, idx), oar.index_add(x, rows, 1, val),
                oar.index_add(x, rows, -1, val.transpose([0, 2, 1]) * 2.0))

    spec = [InputSpec([None, 4, 4], "float32", "x"), InputSpec([3, 2], "int64", "idx"),
            InputSpec([3, 4], "float32", "upd"), InputSpec([5], "int64", "rows"),
            InputSpec([None, 5, 4], "float32", "val")]

    def feeds(rng, n):
        return {"x": rng.standard_normal([n, 4, 4]).astype("float32"),
                "idx": np.stack([rng.integers(0, n, 3), rng.integers(0, 4, 3)], 1).astype("int64"),
                "upd": rng.standard_normal([3, 4]).astype("float32"),
                "rows": rng.integers(0, 4, [5]).astype("int64"),
                "val": rng.standard_normal([n, 5, 4]).astype("float32")}

    m = _export_fn(tmp_path, "scatter_nd", fn, spec, feeds)
    assert {"ScatterND", "GatherND"} <= _op_types(m)


@pytest.mark.parametrize("reduce", ["assign", "add", "mul", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_put_along_axis(tmp_path, reduce, include_self):
    # assign: include_self=False runs it at opset 16 (the [M, M] comparison), True at 18
    opset = 16 if reduce == "assign" and not include_self else 18

    def fn(x, idx, val):
        return (oar.put_along_axis(x, idx, val, 1, reduce, include_self=include_self),
                oar.take_along_axis(x, idx, 1))

    spec = [InputSpec([None, 5, 3], "float32", "x"), InputSpec([None, 4, 3], "int64", "idx"),
            InputSpec([None, 4, 3], "float32", "val")]
    _export_fn(tmp_path, f"put_{reduce}_{include_self}", fn, spec,
               _feeds(x=_f32(5, 3), idx=lambda rng, n: rng.integers(-5, 5, [n, 4, 3]).astype("int64"),
                      val=_f32(4, 3)), opset_version=opset)


@pytest.mark.parametrize("opset", [16, 18])
def test_index_put_and_advanced_indexing(tmp_path, opset):
    class Net(nn.Layer):
        def forward(self, x, i, j, v):
            y = x.clone()
            y[i, j] = v                     # index_put, repeated positions: the last wins
            z = x.clone()
            z[i] = 2.0                      # whole rows, broadcast value
            w = oar.index_put(x, (i, j), v, accumulate=True)
            return y, z, w, x[i, j], x[j]

    spec = [InputSpec([None, 6, 3], "float32", "x"), InputSpec([None], "int64", "i"),
            InputSpec([None], "int64", "j"), InputSpec([None, 3], "float32", "v")]

    def feeds(rng, n):
        k = 5 * n
        return {"x": rng.standard_normal([n + 2, 6, 3]).astype("float32"),
                "i": rng.integers(-(n + 2), n + 2, [k]).astype("int64"),
                "j": rng.integers(-2, 2, [k]).astype("int64"),
                "v": rng.standard_normal([k, 3]).astype("float32")}

    m = _check(Net(), spec, feeds, tmp_path, "index_put", opset_version=opset)
    assert {"ScatterND", "GatherND"} <= _op_types(m)


def test_roll_diagonal(tmp_path):
    def fn(x):
        return (oar.roll(x, 2, 1), oar.roll(x, [-1, 5], [0, 2]), oar.roll(x, 3), oar.diagonal(x, 0, 1, 2),
                oar.diagonal(x, 1, 1, 2), oar.diagonal(x, -2, 2, 1))

    _export_fn(tmp_path, "roll", fn, [InputSpec([None, 4, 5], "float32", "x")], _feeds(x=_f32(4, 5)),
               batches=(2, 3))


# ------------------------------------------------------------------ elementwise and reductions
class _Math(nn.Layer):
    def forward(self, x, y, i, j):
        j = oar.where(j < 0, j - 1, j + 1)   # never 0 (the trace runs on zeros too)
        a = x.abs() + 1.5
        halves = oar.round(x * 2.0) * 0.5   # exact ties: round half away from zero
        return (oar.log2(a), oar.log10(a), oar.asinh(x), oar.acosh(a), oar.atanh(oar.tanh(x) * 0.9),
                oar.trunc(x), oar.round(halves), oar.round(x * 7.0, decimals=1),
                oar.isinf(x / (x > 0).astype("float32")), oar.isfinite(x / (x > 0).astype("float32")),
                oar.nan_to_num(oar.log(x), nan=0.5, posinf=9.0), oar.fmax(x, oar.sqrt(y)), oar.fmin(x, oar.sqrt(y)),
                oar.atan2(x, y), oar.lerp(x, y, oar.sigmoid(x)), oar.remainder(x, y + 0.1 * oar.sign(y)),
                oar.floor_divide(x, y), oar.remainder(i, j), oar.floor_divide(i, j), oar.fmax(i, j),
                F.celu(x, 0.7), F.tanhshrink(x), F.hardshrink(x, 0.4), F.softshrink(x, 0.3),
                F.thresholded_relu(x, 0.2), F.smooth_l1_loss(x, y, reduction="none", delta=0.6),
                F.binary_cross_entropy_with_logits(x, oar.sigmoid(y), reduction="none"),
                oar.all(x > -1.0, axis=1), oar.any(x > 1.0), oar.any(i > 2, axis=[1], keepdim=True),
                oar.linalg.norm(x, p=3, axis=1), oar.linalg.norm(x, p=1, axis=-1), oar.linalg.norm(x, axis=1),
                oar.linalg.norm(x, p=float("inf"), axis=1), oar.eye(3, 5) + x[:, :1, None],
                oar.linspace(-1, 2, 6) * x, oar.isinf(i.astype("int32")))


def test_math_ops(tmp_path):
    spec = [InputSpec([None, 6], "float32", "x"), InputSpec([None, 6], "float32", "y"),
            InputSpec([None, 6], "int64", "i"), InputSpec([None, 6], "int64", "j")]

    def feeds(rng, n):
        j = rng.integers(-4, 4, [n, 6])
        y = (rng.standard_normal([n, 6]) * 2).astype("float32")
        y[:, 0] = 0.0
        return {"x": (rng.standard_normal([n, 6]) * 2).astype("float32"), "y": y,
                "i": rng.integers(-9, 9, [n, 6]).astype("int64"), "j": j.astype("int64")}

    m = _check(_Math(), spec, feeds, tmp_path, "math", atol=3e-5, rtol=3e-5)
    assert {"Celu", "Shrink", "Mod", "IsInf"} <= _op_types(m)


def test_det_and_matmul_linalg(tmp_path):
    def fn(x, y):
        return (oar.linalg.det(x), oar.linalg.det(x[0]), oar.linalg.multi_dot([x[0], y, x[0]]),
                oar.bmm(x, x), oar.linalg.matrix_power(x, 3) if hasattr(oar.linalg, "matrix_power") else x)

    m = _export_fn(tmp_path, "det", fn, [InputSpec([None, 3, 3], "float32", "x"), InputSpec([3, 3], "float32", "y")],
                   _feeds(x=_f32(3, 3), y=lambda rng, n: rng.standard_normal([3, 3]).astype("float32")),
                   rtol=1e-4, atol=1e-4)
    assert "Det" in _op_types(m)


def test_conv3d_transpose_and_max_pool(tmp_path):
    oar.seed(5)
    net = nn.Sequential(nn.Conv3DTranspose(2, 3, 3, stride=2, padding=1), nn.ReLU())
    _check(net, [InputSpec([None, 2, 3, 4, 3], "float32", "x")], _feeds(x=_f32(2, 3, 4, 3)), tmp_path, "convt3d")


# ------------------------------------------------------------------ random ops
def test_random_ops_keep_their_distribution(tmp_path):
    class Rand(nn.Layer):
        def forward(self, x):
            u = oar.uniform([4000], min=-2.0, max=3.0)
            g = oar.normal(1.5, 2.0, [4000])
            r = oar.randint(2, 7, [4000])
            p = oar.randperm(50)
            d = F.dropout(x, 0.25, training=True)   # uniform + compare
            return u, g, r, p, d

    net = Rand()
    path = oar.onnx.export(net, str(tmp_path / "rand"), input_spec=[InputSpec([3, 1000], "float32", "x")])
    types = _op_types(onnx.load(path))
    assert {"RandomUniform", "RandomNormal"} <= types
    sess = _session(path)
    x = np.ones([3, 1000], "float32")
    u, g, r, p, d = sess.run(None, {"x": x})
    ref = [t.numpy() for t in net(oar.to_tensor(x))]
    for got, want in zip((u, g, r, p, d), ref):
        assert got.shape == want.shape and got.dtype == want.dtype
    assert -2.0 <= u.min() and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.1 and abs(u.std() - 5 / 12 ** 0.5) < 0.1
    assert abs(g.mean() - 1.5) < 0.15 and abs(g.std() - 2.0) < 0.15
    assert set(np.unique(r)) == {2, 3, 4, 5, 6}
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    kept = d != 0
    np.testing.assert_allclose(d[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.03
    # a second run draws new numbers
    assert not np.array_equal(sess.run(None, {"x": x})[0], u)


# ------------------------------------------------------------------ what stays refused
@pytest.mark.parametrize("name,fn", [
    ("pd_op.inv", lambda x: oar.linalg.inv(x)),
    ("pd_op.cholesky", lambda x: oar.linalg.cholesky(oar.matmul(x, x, transpose_y=True) + oar.eye(3) * 3.0)),
    ("pd_op.cumprod", lambda x: oar.cumprod(x, 1)),
    ("pd_op.mode", lambda x: oar.mode(x)[0]),
    ("pd_op.put_along_axis", lambda x: oar.put_along_axis(x, oar.zeros([3, 1], "int64"), 1.0, 1, "mean")),
])
def test_still_unsupported_ops_name_the_op(tmp_path, name, fn):
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
        oar.onnx.export(_Fn(fn), str(tmp_path / "bad"), input_spec=[InputSpec([3, 3], "float32", "x")])
    assert not (tmp_path / "bad.onnx").exists()


def test_opset_too_low_for_a_scatter_is_an_error(tmp_path):
    def fn(x, i):
        return oar.scatter_nd_add(x, i, x[:2])

    with pytest.raises(NotImplementedError, match="pd_op.scatter_nd_add.*opset 16"):
        oar.onnx.export(_Fn(fn), str(tmp_path / "low"), opset_version=14,
                        input_spec=[InputSpec([4, 3], "float32", "x"), InputSpec([2, 1], "int64", "i")])


# ------------------------------------------------------------------ pooling with unequal bins
def test_adaptive_pooling_unequal_bins(tmp_path):
    def fn(x, v):
        return (F.adaptive_avg_pool2d(x, [3, 4]), F.adaptive_max_pool2d(x, [4, 3]), F.adaptive_avg_pool2d(x, [7, 9]),
                F.adaptive_avg_pool3d(v, [2, 3, 1]), F.adaptive_max_pool2d(x, [5, 1]))

    m = _export_fn(tmp_path, "adaptive", fn, [InputSpec([None, 2, 5, 7], "float32", "x"),
                                              InputSpec([None, 2, 3, 5, 4], "float32", "v")],
                   _feeds(x=_f32(2, 5, 7), v=_f32(2, 3, 5, 4)))
    assert "ReduceMax" in _op_types(m)


def test_vgg11(tmp_path):
    # 32x32 inputs reach the 7x7 adaptive pool as 1x1: every bin repeats the one pixel
    oar.seed(12)
    _check(oar.vision.models.vgg11(num_classes=10), [InputSpec([None, 3, 32, 32], "float32", "x")],
           _feeds(x=_f32(3, 32, 32)), tmp_path, "vgg11", batches=(1, 2), rtol=1e-4, atol=1e-4)


def test_slice_scatter(tmp_path):
    def fn(x, v):
        a = oar.slice_scatter(x, v, axes=[2], starts=[1], ends=[6], strides=[2])
        b = oar.slice_scatter(x, v[:, :2, :1] * 3.0, axes=[1, 2], starts=[-2, 4], ends=[10, -1], strides=[1, 1])
        c = oar.slice_scatter(x, oar.full([1], 2.5), axes=[0], starts=[0], ends=[1], strides=[1])
        return a, b, c

    spec = [InputSpec([None, 4, 6], "float32", "x"), InputSpec([None, 4, 3], "float32", "v")]
    m = _export_fn(tmp_path, "slice_scatter", fn, spec, _feeds(x=_f32(4, 6), v=_f32(4, 3)))
    assert "ScatterND" in _op_types(m)


def test_sort_puts_nan_last_as_oar_does(tmp_path):
    class Sort(nn.Layer):
        def forward(self, x):
            return oar.sort(x, axis=-1), oar.argsort(x, axis=-1, descending=True), oar.topk(x, 2)[1]

    net = Sort()
    path = oar.onnx.export(net, str(tmp_path / "nan"), input_spec=[InputSpec([None, 5], "float32", "x")])
    x = np.array([[1, np.nan, -2, 3, np.nan], [np.nan, 0, 0, -1, 5]], "float32")
    for got, want in zip(_session(path).run(None, {"x": x}), net(oar.to_tensor(x))):
        np.testing.assert_array_equal(got, want.numpy())


def test_nested_loops_read_outer_values(tmp_path):
    # an inner while inside an outer while's body, both reading a parameter of the layer
    class Nested(nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([3, 3])

        def forward(self, x):
            def outer_cond(i, y):
                return i < 3

            def outer_body(i, y):
                def inner_cond(j, z):
                    return j < i + 1

                def inner_body(j, z):
                    return j + 1, F.tanh(oar.matmul(z, self.w)) + x

                _, y = oar.static.nn.while_loop(inner_cond, inner_body, [oar.zeros([1], "int64"), y])
                return i + 1, y

            _, y = oar.static.nn.while_loop(outer_cond, outer_body, [oar.zeros([1], "int64"), x])
            return y

    oar.seed(21)
    m = _check(Nested(), [InputSpec([None, 3], "float32", "x")], _feeds(x=_f32(3)), tmp_path, "nested", opset_version=14)
    loops = [n for n in m.graph.node if n.op_type == "Loop"]
    assert len(loops) == 1 and any(n.op_type == "Loop" for n in loops[0].attribute[0].g.node)
