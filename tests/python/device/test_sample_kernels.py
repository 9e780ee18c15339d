"""Conformance of the sample device's C kernels (backends/examples/sample_device/kernels_*.cc):
every kernel the plugin registers is run through the op harness (OpCase) on sample:0 and
checked against the same op on the CPU, against a float64 NumPy reference where one is
given, and for gradients against finite differences; forward runs have the fallback off,
so they prove the plugin's kernel ran. An op without a sample kernel falls back, counted."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (BINARY_SHAPES, UNARY_SHAPES, OpCase, assert_close, check_forward,
                           check_grad, make_inputs, nonzero, normal, to_numpy)

DEV = "sample:0"
# Sample kernels vs the CPU's (different summation orders): (atol, rtol).
CPU_TOL = {"float32": (2e-5, 2e-5), "float64": (1e-11, 1e-11)}


def np_conv2d(x, w, stride=1, padding=0, dilation=1, groups=1):
    """float64 NCHW convolution, weight [OC, C / groups, KH, KW]."""
    s, p, d = stride, padding, dilation
    x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    oh, ow = (h - d * (kh - 1) - 1) // s + 1, (wd - d * (kw - 1) - 1) // s + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * d:i * d + s * (oh - 1) + 1:s, j * d:j * d + s * (ow - 1) + 1:s]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, i, j])
    return out


def np_pool(x, k, s, mode):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * s:i * s + k, j * s:j * s + k]
            out[:, :, i, j] = win.max(axis=(2, 3)) if mode == "max" else win.mean(axis=(2, 3))
    return out


def np_log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


LABELS = np.array([3, 0, 4, 1, 4, 2])  # 6 samples of 5 classes


def labels_like(x, values=LABELS):
    return oar.to_tensor(values.astype("int64"), place=x.place)


def ce_ref(x):
    return -np.mean(np_log_softmax(x)[np.arange(len(LABELS)), LABELS])


SOFT = np.random.default_rng(7).dirichlet(np.ones(5), size=6)
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5, 0.25])


# (case, kernels its forward runs, kernels its backward runs on the device)
CASES = [
    (OpCase("add", oar.add, np.add, inputs=[normal(), normal()], shapes=BINARY_SHAPES), ["add"], ["sum_to"]),
    (OpCase("subtract", oar.subtract, np.subtract, inputs=[normal(), normal()], shapes=BINARY_SHAPES),
     ["subtract"], ["neg", "sum_to"]),
    (OpCase("multiply", oar.multiply, np.multiply, inputs=[normal(), normal()], shapes=BINARY_SHAPES),
     ["multiply"], ["multiply", "sum_to"]),
    (OpCase("divide", oar.divide, np.divide, inputs=[normal(), nonzero()], shapes=BINARY_SHAPES), ["divide"], []),
    (OpCase("neg", oar.neg, np.negative, shapes=UNARY_SHAPES), ["neg"], ["neg"]),
    (OpCase("relu", F.relu, lambda x: np.maximum(x, 0), shapes=UNARY_SHAPES), ["relu"], ["relu_grad"]),
    (OpCase("scale", lambda x: oar.scale(x, 2.5, 0.5), lambda x: x * 2.5 + 0.5, shapes=UNARY_SHAPES), ["scale"],
     ["scale"]),
    (OpCase("scale_bias_first", lambda x: oar.scale(x, 2.5, 0.5, bias_after_scale=False), lambda x: (x + 0.5) * 2.5,
            op="scale"), ["scale"], ["scale"]),
    (OpCase("sum", oar.sum, np.sum, shapes=UNARY_SHAPES), ["sum"], []),
    (OpCase("sum_axis_keepdim", lambda x: oar.sum(x, axis=[0, 2], keepdim=True),
            lambda x: np.sum(x, axis=(0, 2), keepdims=True), inputs=[(2, 3, 4)], op="sum"), ["sum"], []),
    (OpCase("sum_float64_out", lambda x: oar.sum(x, axis=-1, dtype="float64"), lambda x: np.sum(x, axis=-1),
            dtypes=["float32"], out_dtype="float64", grad=False, op="sum"), ["sum"], []),
    (OpCase("mean", oar.mean, np.mean, shapes=[[(3, 4)], [()], [(2, 3, 5)]]), ["mean"], []),
    (OpCase("mean_axis", lambda x: oar.mean(x, axis=1), lambda x: np.mean(x, axis=1), inputs=[(2, 3, 4)], op="mean"),
     ["mean"], []),
    (OpCase("matmul", oar.matmul, np.matmul, inputs=[(3, 4), (4, 5)],
            shapes=[[(3, 4), (4, 5)], [(2, 3, 4), (4, 5)], [(2, 1, 3, 4), (3, 4, 2)], [(4,), (4, 5)], [(3, 4), (4,)],
                    [(4,), (4,)], [(0, 4), (4, 5)], [(3, 0), (0, 5)]]), ["matmul"], ["matmul"]),
    (OpCase("matmul_transposed", lambda x, y: oar.matmul(x, y, transpose_x=True, transpose_y=True),
            lambda x, y: np.swapaxes(x, -1, -2) @ np.swapaxes(y, -1, -2), inputs=[(4, 3), (5, 4)],
            shapes=[[(4, 3), (5, 4)], [(2, 4, 3), (5, 4)]], op="matmul"), ["matmul"], ["matmul"]),
    (OpCase("softmax", F.softmax, lambda x: np.exp(np_log_softmax(x)), shapes=[[(3, 5)], [(2, 3, 4)], [(0, 3)]]),
     ["softmax"], ["softmax_grad"]),
    (OpCase("softmax_axis0", lambda x: F.softmax(x, axis=0), lambda x: np.exp(np_log_softmax(x, 0)),
            inputs=[(3, 4, 2)], op="softmax"), ["softmax"], ["softmax_grad"]),
    (OpCase("log_softmax", F.log_softmax, np_log_softmax, shapes=[[(3, 5)], [(2, 3, 4)]]), ["log_softmax"],
     ["log_softmax_grad"]),
    (OpCase("cross_entropy", lambda x: F.cross_entropy(x, labels_like(x)), ce_ref, inputs=[(6, 5)]),
     ["cross_entropy"], ["cross_entropy_grad"]),
    (OpCase("cross_entropy_options", lambda x: F.cross_entropy(
        x, labels_like(x), weight=oar.to_tensor(WEIGHT.astype(x.dtype.name), place=x.place), ignore_index=4,
        reduction="sum", label_smoothing=0.1), None, inputs=[(6, 5)], op="cross_entropy"),
     ["cross_entropy"], ["cross_entropy_grad"]),
    (OpCase("cross_entropy_soft_none", lambda x: F.cross_entropy(
        x, oar.to_tensor(SOFT.astype(x.dtype.name), place=x.place), soft_label=True, reduction="none"),
        lambda x: -(SOFT * np_log_softmax(x)).sum(-1, keepdims=True), inputs=[(6, 5)], op="cross_entropy"),
     ["cross_entropy"], ["cross_entropy_grad"]),
    (OpCase("cross_entropy_axis1", lambda x: F.cross_entropy(
        x, labels_like(x, LABELS[:4].reshape(2, 1, 2)), axis=1), None, inputs=[(2, 5, 2)], op="cross_entropy"),
     ["cross_entropy"], ["cross_entropy_grad"]),
    (OpCase("conv2d", F.conv2d, np_conv2d, inputs=[(2, 3, 7, 6), (4, 3, 3, 3)],
            shapes=[[(2, 3, 7, 6), (4, 3, 3, 3)], [(0, 3, 7, 6), (4, 3, 3, 3)]], grad_shapes=[[(2, 3, 5, 4), (2, 3, 3, 3)]]),
     ["conv2d"], ["conv2d_transpose", "conv2d_grad_filter"]),
    (OpCase("conv2d_strided", lambda x, w: F.conv2d(x, w, stride=2, padding=1, dilation=2, groups=2),
            lambda x, w: np_conv2d(x, w, 2, 1, 2, 2), inputs=[(2, 4, 8, 7), (6, 2, 3, 2)],
            grad_shapes=[[(1, 4, 6, 5), (2, 2, 2, 2)]], op="conv2d"),
     ["conv2d"], ["conv2d_transpose", "conv2d_grad_filter"]),
    (OpCase("conv2d_nhwc", lambda x, w: F.conv2d(x, w, padding=1, data_format="NHWC"),
            lambda x, w: np_conv2d(x.transpose(0, 3, 1, 2), w, 1, 1).transpose(0, 2, 3, 1),
            inputs=[(2, 5, 6, 3), (4, 3, 3, 3)], grad_shapes=[[(1, 4, 3, 2), (2, 2, 3, 3)]], op="conv2d"),
     ["conv2d"], ["conv2d_transpose", "conv2d_grad_filter"]),
    (OpCase("conv2d_transpose", lambda x, w: F.conv2d_transpose(x, w, stride=2, padding=1, output_padding=1),
            None, inputs=[(2, 3, 4, 5), (3, 2, 3, 3)], grad_shapes=[[(1, 2, 3, 2), (2, 2, 3, 3)]]),
     ["conv2d_transpose"], ["conv2d", "conv2d_grad_filter"]),
    (OpCase("max_pool2d_with_index", lambda x: F.max_pool2d(x, 2, 2), lambda x: np_pool(x, 2, 2, "max"),
            inputs=[(2, 3, 6, 5)], shapes=[[(2, 3, 6, 5)], [(0, 3, 4, 4)]]),
     ["max_pool2d_with_index"], ["max_pool_index_grad"]),
    (OpCase("max_pool2d_padded_nhwc", lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True, data_format="NHWC"),
            None, inputs=[(2, 7, 6, 3)], op="max_pool2d_with_index"),
     ["max_pool2d_with_index"], ["max_pool_index_grad"]),
    (OpCase("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, [3, 2]), None, inputs=[(2, 3, 7, 5)],
            op="max_pool2d_with_index"), ["max_pool2d_with_index"], ["max_pool_index_grad"]),
    (OpCase("max_pool2d", lambda x: oar._C.ops.max_pool2d(x, [2, 2], [2, 2], [0, 0], False, False, "NCHW"),
            lambda x: np_pool(x, 2, 2, "max"), inputs=[(2, 3, 6, 5)], grad=False), ["max_pool2d"], []),
    (OpCase("avg_pool2d", lambda x: F.avg_pool2d(x, 2, 2), lambda x: np_pool(x, 2, 2, "avg"), inputs=[(2, 3, 6, 5)]),
     ["avg_pool2d"], ["avg_pool_grad"]),
    (OpCase("avg_pool2d_inclusive_nhwc", lambda x: F.avg_pool2d(x, 3, 2, padding=1, exclusive=False,
                                                                 data_format="NHWC"),
            None, inputs=[(2, 7, 6, 3)], op="avg_pool2d"), ["avg_pool2d"], ["avg_pool_grad"]),
    (OpCase("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, [3, 2]), None, inputs=[(2, 3, 7, 5)],
            op="avg_pool2d"), ["avg_pool2d"], ["avg_pool_grad"]),
    (OpCase("assign_strided", lambda x: oar.assign(x.transpose([1, 0])), lambda x: x.T, inputs=[(3, 4)],
            op="assign"), ["assign"], []),
]
IDS = [c.name for c, _, _ in CASES]


@pytest.fixture
def on_sample(sample):
    oar.set_device(DEV)
    yield
    oar.device.synchronize(DEV)
    oar.set_device("cpu")
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})


def no_fallback():
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})


@pytest.mark.parametrize("case,fwd,bwd", CASES, ids=IDS)
def test_forward_matches_cpu(case, fwd, bwd, on_sample):
    """The op on sample:0 (its kernels only: the fallback is off) equals it on the CPU,
    for every dtype and shape set (0-size and broadcast shapes included)."""
    rng = np.random.default_rng(5)
    for dtype in case.dtypes:
        for shapes in case.shape_sets():
            arrays, tensors = make_inputs(case, dtype, shapes, rng)
            assert all(t.place.device_str() == DEV for t in tensors)
            no_fallback()
            out = case.fn_oar(*tensors, **case.attrs)
            oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
            ref = case.fn_oar(*[t.cpu() for t in tensors], **case.attrs)
            where = f"{case.name} dtype={dtype} shapes={shapes}"
            assert out.place.device_str() == DEV, where
            assert out.dtype == ref.dtype and out.shape == ref.shape, where
            assert_close(to_numpy(out), to_numpy(ref), out.dtype.name, CPU_TOL, where)


@pytest.mark.parametrize("case,fwd,bwd", [c for c in CASES if c[0].fn_numpy is not None],
                         ids=[c[0].name for c in CASES if c[0].fn_numpy is not None])
def test_forward_matches_numpy(case, fwd, bwd, on_sample):
    no_fallback()
    check_forward(case)


@pytest.mark.parametrize("case,fwd,bwd", [c for c in CASES if c[0].grad], ids=[c[0].name for c in CASES if c[0].grad])
def test_gradients(case, fwd, bwd, on_sample):
    """Gradients on sample:0 against finite differences, and equal to the CPU's; where
    the case lists its backward kernels, the backward runs with the fallback off (its
    kernels are the device's)."""
    check_grad(case)
    rng = np.random.default_rng(9)
    for shapes in case.grad_shapes or case.shape_sets()[:2]:
        _, tensors = make_inputs(case, "float64", shapes, rng)
        cpu = [t.cpu() for t in tensors]
        for ts in (tensors, cpu):
            for t in ts:
                t.stop_gradient = False
            out = case.fn_oar(*ts, **case.attrs)
            seed = oar.ones_like(out)
            if bwd and ts is tensors:
                no_fallback()
            out.backward(seed)
            oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
        for i, (d, c) in enumerate(zip(tensors, cpu)):
            assert d.grad.place.device_str() == DEV
            assert_close(d.grad.numpy(), c.grad.numpy(), "float64", CPU_TOL, f"{case.name} grad {i} {shapes}")


def test_conv_over_several_image_chunks(on_sample):
    """The convolutions' GEMMs take a chunk of images at a time (its im2col columns kept
    under 4 Mi elements): 5 images of 72 x 128 x 128 columns each go in chunks of 3 and 2.
    Forward and both gradients equal the CPU's, with groups and through a NHWC view."""
    rng = np.random.default_rng(11)
    x_np = rng.standard_normal((5, 16, 130, 130)).astype("float64")
    w_np = rng.standard_normal((6, 8, 3, 3)).astype("float64")
    results = []
    for place in (DEV, "cpu"):
        x = oar.to_tensor(x_np, place=place, stop_gradient=False)
        w = oar.to_tensor(w_np, place=place, stop_gradient=False)
        if place == DEV:
            no_fallback()
        y = F.conv2d(x, w, groups=2)
        z = F.conv2d(x.transpose([0, 2, 3, 1]), w, groups=2, data_format="NHWC")
        (y * y).sum().backward()
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
        results.append([y.numpy(), z.numpy(), x.grad.numpy(), w.grad.numpy()])
    for name, d, c in zip(["out", "out_nhwc", "x_grad", "w_grad"], *results):
        np.testing.assert_allclose(d, c, rtol=1e-10, atol=1e-8, err_msg=name)
    np.testing.assert_allclose(results[0][1], results[0][0].transpose(0, 2, 3, 1), rtol=1e-12)


# The kernels the cases above run on the device; tests/cpp/backends/test_sample_device.cc
# checks the plugin registers exactly these (for float32 and float64).
COVERED = sorted({k for _, fwd, bwd in CASES for k in fwd + bwd} | {"cast", "full", "full_like"})


def test_covered_kernels_are_the_registered_ones():
    assert COVERED == sorted([
        "add", "assign", "avg_pool2d", "avg_pool_grad", "cast", "conv2d", "conv2d_grad_filter", "conv2d_transpose",
        "cross_entropy", "cross_entropy_grad", "divide", "full", "full_like", "log_softmax", "log_softmax_grad",
        "matmul", "max_pool2d", "max_pool2d_with_index", "max_pool_index_grad", "mean", "multiply", "neg", "relu",
        "relu_grad", "scale", "softmax", "softmax_grad", "subtract", "sum", "sum_to"])


ALL_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def test_cast_between_every_dtype_pair(on_sample):
    values = np.array([[0.0, 1.0, 2.5], [3.75, 7.0, 100.5]])  # float -> unsigned of a negative is undefined
    for src in ALL_DTYPES:
        x_cpu = oar.to_tensor(values, place="cpu").astype(src)
        x = x_cpu._copy_to(DEV, True)
        for dst in ALL_DTYPES:
            no_fallback()
            y = x.astype(dst)
            oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
            want = x_cpu.astype(dst)
            assert y.dtype == want.dtype and y.place.device_str() == DEV
            np.testing.assert_array_equal(to_numpy(y.cpu()), to_numpy(want), err_msg=f"{src} -> {dst}")


def test_full_and_full_like_every_dtype(on_sample):
    for dtype in ALL_DTYPES:
        no_fallback()
        x = oar.full([2, 3], 3, dtype=dtype)
        z = oar.full([0, 3], 1, dtype=dtype)
        y = oar.full_like(x, 1)
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})
        assert x.place.device_str() == DEV and x.dtype.name == dtype and z.shape == [0, 3]
        oar.set_device("cpu")
        want = oar.full([2, 3], 3, dtype=dtype)
        want_like = oar.full_like(want, 1)
        oar.set_device(DEV)
        np.testing.assert_array_equal(to_numpy(x.cpu()), to_numpy(want), err_msg=dtype)
        np.testing.assert_array_equal(to_numpy(y.cpu()), to_numpy(want_like), err_msg=dtype)


def test_an_op_without_a_sample_kernel_falls_back(on_sample, capfd):
    x = oar.to_tensor(np.array([0.25, 1.0, 4.0], "float64"))
    y = oar.expm1(x)  # the sample device has no expm1 kernel
    assert y.place.device_str() == DEV
    np.testing.assert_allclose(y.numpy(), np.expm1([0.25, 1.0, 4.0]), rtol=1e-12)
    assert "expm1 has no sample kernel for float64; running its CPU kernel with copies" in capfd.readouterr().err
    no_fallback()
    with pytest.raises(TypeError, match=r"expm1: no kernel on sample:0 for dtype float64 \(its kernels there: none\)"):
        oar.expm1(x)
    z = x + x  # add has a sample kernel: it runs with the fallback off
    np.testing.assert_array_equal(z.numpy(), [0.5, 2.0, 8.0])


BACKWARD_VIEWS = {  # views whose strides walk an axis backwards, as NumPy's (same keys)
    "rows reversed": lambda t: t[::-1], "columns reversed": lambda t: t[:, ::-1],
    "both, stepped": lambda t: t[::-2, ::-1], "one reversed row": lambda t: t[::-1][:1],
    "transposed reversal": lambda t: t[::-1, 1:].T,
}


@pytest.mark.parametrize("view", list(BACKWARD_VIEWS), ids=list(BACKWARD_VIEWS))
def test_backward_views_reach_the_kernels_forward(view, on_sample):
    """Note [Forward strides for plugin kernels] (backends/runtime/kernel_ext.cc): the
    plugin's kernels (the fallback is off) take views with negative strides as inputs,
    which the sample kernels refuse to walk, and compute what NumPy does on them."""
    a = np.random.default_rng(3).standard_normal((5, 6))
    x, want_x = BACKWARD_VIEWS[view](oar.to_tensor(a)), BACKWARD_VIEWS[view](a)
    assert min(x.strides) < 0, x.strides
    no_fallback()
    for name, got, want in [
        ("add", x + 1.0, want_x + 1.0),
        ("multiply by itself", x * x, want_x * want_x),
        ("subtract a row", x - x[:1], want_x - want_x[:1]),
        ("matmul", oar.matmul(x, x.t()), want_x @ want_x.T),
        ("softmax", F.softmax(x, -1), np.exp(want_x) / np.exp(want_x).sum(-1, keepdims=True)),
        ("sum over rows", x.sum(0), want_x.sum(0)),
        ("clone", x.clone(), want_x),
        ("cast", x.astype("float32"), want_x.astype("float32")),
    ]:
        assert got.place.device_str() == DEV, name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-12, err_msg=f"{view}: {name}")


BAD_LABEL = r"sample device: cross_entropy(_grad)?: label value 7 at position 1 is out of range for 3 classes"


def test_a_bad_label_raises_naming_the_op(on_sample):
    # The labels are checked on the device (the host never waits for them): the error
    # comes from the next call that waits for the device, as on a GPU, and only once.
    x = oar.to_tensor(np.zeros((2, 3), "float32"))
    loss = F.cross_entropy(x, oar.to_tensor(np.array([0, 7], "int64")))
    with pytest.raises(ValueError, match=BAD_LABEL):
        loss.numpy()
    good = F.cross_entropy(x, oar.to_tensor(np.array([0, 2], "int64")))
    np.testing.assert_allclose(good.numpy(), np.log(3.0), rtol=1e-6)
    # In training: the forward and the backward both find it; item() raises.
    w = oar.to_tensor(np.zeros((2, 3), "float32"), stop_gradient=False)
    loss = F.cross_entropy(w * 2, oar.to_tensor(np.array([[0], [7]], "int32")))
    loss.backward()
    with pytest.raises(ValueError, match=BAD_LABEL):
        loss.item()
    # An explicit synchronize reports it too; ignore_index is not out of range.
    F.cross_entropy(x, oar.to_tensor(np.array([0, 7], "int64")))
    with pytest.raises(ValueError, match=BAD_LABEL):
        oar.device.synchronize(DEV)
    ok = F.cross_entropy(x, oar.to_tensor(np.array([0, 7], "int64")), ignore_index=7)
    assert np.isfinite(ok.item())

