"""bfloat16 convolution (Note [bf16 convolution]): conv1d/2d/3d forward, its data and
filter gradients, on oneDNN's bf16 kernels where the CPU has AMX, or AVX512-BF16 that
outruns its float32 FMAs, and through float32 elsewhere (OAR_BF16_CONV=float | onednn
forces a path; both run here where the CPU has the instructions), against float64
NumPy on odd sizes, strides, asymmetric padding, dilation, groups, channels-last and
0-size batches; AMP O1/O2 on CPU runs conv2d in bf16.

Tolerance (documented, as the bf16 matmul's): the operands are bf16 (exact in float64),
products are accumulated in float32 and the result rounded once to bf16, so
|got - ref| <= 2^-8 |ref| + 2^-12 (|x| * |w|), where * is the same convolution (or
gradient) of the absolute values."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import oar
import oar.nn.functional as F
import pytest
from test_conv_algos import np_conv_grads
from test_conv_pool import np_conv
from test_lowp_gemm import HAS_BF16_HW, _bf16, _core_fn, bf16_onednn_default

HERE = os.path.dirname(os.path.abspath(__file__))
PATHS = ["onednn", "float"] if HAS_BF16_HW else ["float"]

# (x shape N C *S, filter shape, stride, pads [(before, after)] per dim, dilation, groups)
CASES = [
    ((2, 16, 9, 11), (32, 16, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), 1),
    ((3, 5, 13, 7), (7, 5, 3, 3), (2, 2), [(1, 0), (2, 1)], (1, 1), 1),
    ((1, 32, 12, 12), (48, 32, 3, 3), (2, 1), [(1, 1), (1, 1)], (2, 2), 1),
    ((2, 8, 10, 9), (12, 4, 3, 1), (1, 1), [(0, 2), (0, 0)], (1, 1), 2),
    ((2, 64, 7, 7), (64, 64, 1, 1), (1, 1), [(0, 0), (0, 0)], (1, 1), 1),
    ((0, 16, 8, 8), (16, 16, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), 1),
    ((2, 6, 17), (10, 6, 5), (2,), [(2, 1)], (1,), 1),                        # conv1d
    ((1, 4, 5, 6, 7), (8, 4, 3, 3, 3), (1, 2, 1), [(1, 1)] * 3, (1, 1, 1), 1),  # conv3d
]
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
LAST = {1: "NLC", 2: "NHWC", 3: "NDHWC"}
FIRST = {1: "NCL", 2: "NCHW", 3: "NCDHW"}


def _check(got, ref, bound_base):
    bound = 2.0**-8 * np.abs(ref) + 2.0**-12 * bound_base + 1e-30
    err = np.abs(got.astype(np.float64) - ref)
    assert got.shape == ref.shape
    assert np.all(err <= bound), f"max err/bound {np.max(err / bound)}"


def _run(x, w, g, stride, pads, dil, groups, channels_last):
    nd = x.ndim - 2
    perm = (0, *range(2, nd + 2), 1) if channels_last else tuple(range(nd + 2))
    inv = tuple(np.argsort(perm))
    xt = oar.to_tensor(np.ascontiguousarray(x.transpose(perm)).astype("float32")).astype("bfloat16")
    wt = oar.to_tensor(w.astype("float32")).astype("bfloat16")
    xt.stop_gradient = wt.stop_gradient = False
    flat = [p for pair in pads for p in pair]
    y = CONV[nd](xt, wt, stride=list(stride), padding=flat, dilation=list(dil), groups=groups,
                 data_format=LAST[nd] if channels_last else FIRST[nd])
    assert y.dtype == oar.bfloat16
    gt = oar.to_tensor(np.ascontiguousarray(g.transpose(perm)).astype("float32")).astype("bfloat16")
    (y * gt).sum().backward()  # dL/dy = gt exactly (ones * gt)
    assert xt.grad.dtype == oar.bfloat16 and wt.grad.dtype == oar.bfloat16
    f64 = lambda t: t.astype("float32").numpy().astype(np.float64)  # noqa: E731
    return f64(y).transpose(inv), f64(xt.grad).transpose(inv), f64(wt.grad)


@pytest.mark.parametrize("channels_last", [False, True], ids=["cfirst", "clast"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_bf16_conv_and_grads_match_float64(monkeypatch, path, case, channels_last):
    monkeypatch.setenv("OAR_BF16_CONV", path)
    assert _core_fn("oar_bf16_conv_path") == path
    xs, ws, stride, pads, dil, groups = CASES[case]
    rng = np.random.default_rng(case)
    x = _bf16(rng.standard_normal(xs))
    w = _bf16(rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:])))
    ref = np_conv(x, w, stride, pads, dil, groups)
    g = _bf16(rng.standard_normal(ref.shape))
    y, dx, dw = _run(x, w, g, stride, pads, dil, groups, channels_last)
    rdx, rdw = np_conv_grads(x, w, g, stride, pads, dil, groups)
    _check(y, ref, np_conv(np.abs(x), np.abs(w), stride, pads, dil, groups))
    adx, adw = np_conv_grads(np.abs(x), np.abs(w), np.abs(g), stride, pads, dil, groups)
    _check(dx, rdx, adx)
    _check(dw, rdw, adw)


def test_bf16_path_is_the_cpus(monkeypatch):
    monkeypatch.delenv("OAR_BF16_CONV", raising=False)
    assert _core_fn("oar_bf16_conv_path") == ("onednn" if bf16_onednn_default() else "float")


def test_capped_onednn_takes_the_float_path_in_a_child():
    """oneDNN capped to AVX2 (DNNL_MAX_CPU_ISA; bench --isa avx2): the bf16 convolution goes
    through float32, as on an AVX2 CPU; it used to ask oneDNN for bf16 kernels by cpuid
    and fail ("could not create a primitive descriptor iterator")."""
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = {[HERE, os.path.dirname(HERE)]!r}  # ops/ and tests/python (op_test_utils)
        import test_conv_bf16 as T
        print(T._core_fn("oar_bf16_conv_path"))
        for case in (0, 1, 5, 6, 7):  # odd, strided/asymmetric, 0-size batch, conv1d, conv3d
            for last in (False, True):
                T.test_bf16_conv_and_grads_match_float64(T.NoEnv(), "float", case, last)
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k != "OAR_BF16_CONV"}
    r = subprocess.run([sys.executable, "-c", code], env={**env, "DNNL_MAX_CPU_ISA": "AVX2"},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["float", "ok"]


class NoEnv:
    """monkeypatch's setenv for a run outside pytest (the child above)."""

    @staticmethod
    def setenv(name, value):
        os.environ[name] = value


@pytest.mark.parametrize("level", ["O1", "O2"])
def test_amp_runs_conv2d_in_bf16(level):
    """conv2d is on the white list: under auto_cast(bfloat16) it runs in bf16 and the
    float32 parameters get float32 gradients close to float32 training's."""
    oar.seed(3)
    net = oar.nn.Conv2D(8, 16, 3, padding=1)
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 8, 10, 10)).astype("float32"))
    ref = net(x)
    ref.sum().backward()
    gw_ref = net.weight.grad.numpy().copy()
    net.clear_gradients()
    if level == "O2":
        net = oar.amp.decorate(models=net, level="O2", dtype="bfloat16")
    with oar.amp.auto_cast(level=level, dtype="bfloat16"):
        y = net(x)  # O1: the bias add (gray list, mixed dtypes) runs in float32
        assert F.conv2d(x, net.weight, padding=1).dtype == oar.bfloat16
    np.testing.assert_allclose(y.astype("float32").numpy(), ref.numpy(), rtol=0.05, atol=0.05)
    y.astype("float32").sum().backward()
    gw = net.weight.grad.astype("float32").numpy()
    np.testing.assert_allclose(gw, gw_ref, rtol=0.02, atol=0.02 * np.abs(gw_ref).max())


def test_bad_dtypes_name_the_op():
    x = oar.ones([1, 2, 4, 4], dtype="float16")
    with pytest.raises(Exception, match=r"conv2d: input must be float32, float64 or bfloat16, got float16"):
        F.conv2d(x, oar.ones([3, 2, 3, 3], dtype="float16"))
    xb = oar.ones([1, 2, 4, 4]).astype("bfloat16")
    with pytest.raises(Exception, match=r"conv2d: filter dtype float32 differs from the input dtype bfloat16"):
        F.conv2d(xb, oar.ones([3, 2, 3, 3]))


@pytest.mark.skipif(not HAS_BF16_HW, reason="the bf16 kernels need AVX512-BF16 or AMX")
def test_bf16_reused_filter_follows_every_write(monkeypatch):
    """The bf16 forward keeps a reused filter reordered too (Note [Filters reused across
    calls]): a write through the tensor's uint16 NumPy view (no version counter) is seen."""
    monkeypatch.setenv("OAR_BF16_CONV", "onednn")
    monkeypatch.setenv("OAR_CONV_ALGO", "onednn-blocked")  # a layout that reorders the filter
    rng = np.random.default_rng(11)
    x = _bf16(rng.standard_normal((2, 32, 9, 9)))
    w = _bf16(rng.standard_normal((32, 32, 3, 3)) / 17)
    xt = oar.to_tensor(x.astype("float32")).astype("bfloat16")
    wt = oar.to_tensor(w.astype("float32")).astype("bfloat16")
    pads = [(1, 1), (1, 1)]

    def check(w):
        for _ in range(3):  # first sight, packing, packed and compared
            y = F.conv2d(xt, wt, padding=1).astype("float32").numpy().astype(np.float64)
            _check(y, np_conv(x, w, (1, 1), pads, (1, 1), 1), np_conv(np.abs(x), np.abs(w), (1, 1), pads, (1, 1), 1))

    check(w)
    bits = np.asarray(wt, copy=False)  # uint16 bits, sharing the filter's memory
    bits[5, 7, 2, 0] = 0x4000  # 2.0 in bf16
    w2 = w.copy()
    w2[5, 7, 2, 0] = 2.0
    check(w2)
