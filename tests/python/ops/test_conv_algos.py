"""Every candidate the float32 convolution's tuning may pick (Note [Convolution tuning]:
oneDNN's preferred layouts, the plain ones, channels in vector-width blocks, im2col +
GEMM, Winograd F(2x2,3x3)), forced with OAR_CONV_ALGO, forward and both gradients against
float64 NumPy: odd sizes, strides, asymmetric padding, dilation, groups, channels-last,
0-size batch. And the filters kept across calls (Note [Filters reused across calls]):
reused, written in place, written behind the version counter, and the same bits on the
first call of a filter as on later ones."""
import itertools

import numpy as np
import oar
import oar.nn.functional as F
import pytest
from test_conv_pool import np_conv, np_conv_transpose

ALGOS = ["onednn", "onednn-plain", "onednn-blocked", "im2col", "winograd"]

# (x shape NCHW, filter shape, stride, pads [top, bottom, left, right], dilation, groups)
CASES = [
    ((2, 16, 9, 11), (32, 16, 3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
    ((3, 5, 13, 7), (7, 5, 3, 3), (2, 2), [1, 0, 2, 1], (1, 1), 1),
    ((1, 32, 12, 12), (48, 32, 3, 3), (2, 1), [1, 1, 1, 1], (2, 2), 1),
    ((2, 8, 10, 9), (12, 4, 3, 1), (1, 1), [0, 2, 0, 0], (1, 1), 2),
    ((2, 64, 7, 7), (64, 64, 1, 1), (1, 1), [0, 0, 0, 0], (1, 1), 1),
    ((0, 16, 8, 8), (16, 16, 3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
    ((2, 24, 11, 10), (40, 24, 3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),  # Winograd: partial tiles
    # stride 2 along the width (im2col's vector gather: rows of 26 and 25 outputs, the
    # last 8 overlapping and masked at the row's end): odd sizes, asymmetric padding with
    # dilation; and stride 3
    ((2, 32, 49, 51), (8, 32, 3, 3), (2, 2), [1, 1, 1, 1], (1, 1), 1),
    ((1, 4, 45, 50), (6, 4, 3, 3), (2, 2), [0, 2, 1, 0], (2, 1), 1),
    ((1, 3, 80, 71), (5, 3, 3, 3), (3, 3), [1, 1, 0, 2], (1, 1), 1),
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


def run_conv(x, w, stride, pads, dil, groups, channels_last, g, calls=1):
    """oar's conv2d forward and its gradients for upstream gradient g (all NCHW float64);
    the forward is called `calls` times on the same filter (the last result is returned:
    from the second call on, the filter counts as reused)."""
    fmt = "NHWC" if channels_last else "NCHW"
    to = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if channels_last else (lambda a: a)
    back = (lambda a: a.transpose(0, 3, 1, 2)) if channels_last else (lambda a: a)
    xt = oar.to_tensor(to(x).astype("float32"), stop_gradient=False)
    wt = oar.to_tensor(w.astype("float32"), stop_gradient=False)
    for _ in range(calls):
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
    y, dx, dw = run_conv(x, w, stride, p, dil, groups, channels_last, g, calls=3)
    rdx, rdw = np_conv_grads(x, w, g, stride, pads, dil, groups)
    assert y.shape == ref.shape and dx.shape == x.shape and dw.shape == w.shape
    # float32 sums of <= 1.3k products of unit-scale terms: relative error ~1e-6
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-3 * max(1, xs[0]))


@pytest.mark.parametrize("path", ["train", "infer"])
@pytest.mark.parametrize("algo", ["winograd", "onednn-blocked", None])
def test_reused_filter_follows_every_write(monkeypatch, threads, algo, path):
    """A filter seen again unchanged is kept packed (for Winograd: transformed); writes in
    place (version counter) and through a NumPy view (no version counter; the view marks
    the storage shared out after the filter was packed) are both seen. At 2 threads the
    batch of 2 runs as two slices (Winograd's share one transformed filter). Both forward
    kernels: conv2d's (a filter that wants a gradient) and fused_conv2d's (no gradient
    flows: eager inference)."""
    if algo:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)
    else:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 32, 12, 12))
    w0 = rng.standard_normal((32, 32, 3, 3)) / 17
    xt = oar.to_tensor(x.astype("float32"))
    wt = oar.to_tensor(w0.astype("float32"), stop_gradient=path == "infer")
    pads = [(1, 1), (1, 1)]

    def check(w):
        for _ in range(3):  # first sight, packing, packed and compared
            y = F.conv2d(xt, wt, padding=1)
            assert y.stop_gradient == (path == "infer")
            np.testing.assert_allclose(y.numpy(), np_conv(x, w, (1, 1), pads, (1, 1), 1), rtol=1e-4, atol=1e-4)

    check(w0)
    w1 = w0 * -0.5
    wt.set_value(w1.astype("float32"))  # in place: a new version
    check(w1)
    w2 = w1.copy()
    w2[3, 5, 1, 2] += 1.0
    view = np.asarray(wt, copy=False)  # shares the filter's memory; writing it bumps no version counter
    assert np.shares_memory(view, np.asarray(wt, copy=False))
    view[3, 5, 1, 2] += 1.0
    check(w2)
    view[0, 0, 0, 0] -= 0.5  # the storage is shared out now: each call compares the bytes
    w2[0, 0, 0, 0] -= 0.5
    check(w2)
    # another filter of the same geometry, alternating with the first
    other = rng.standard_normal((32, 32, 3, 3)) / 17
    ot = oar.to_tensor(other.astype("float32"))
    for _ in range(3):
        np.testing.assert_allclose(F.conv2d(xt, ot, padding=1).numpy(),
                                   np_conv(x, other, (1, 1), pads, (1, 1), 1), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(F.conv2d(xt, wt, padding=1).numpy(),
                                   np_conv(x, w2, (1, 1), pads, (1, 1), 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", ["train", "infer"])
def test_reused_filter_follows_writes_through_dlpack(monkeypatch, path):
    """A consumer of the filter's DLPack export (here NumPy) writes it with no version
    counter: the export marks the storage shared out, and the packed filter is checked
    against its bytes."""
    monkeypatch.setenv("OAR_CONV_ALGO", "onednn-blocked")  # a candidate that packs the filter
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 16, 9, 9))
    w = rng.standard_normal((16, 16, 3, 3)) / 12
    xt = oar.to_tensor(x.astype("float32"))
    wt = oar.to_tensor(w.astype("float32"), stop_gradient=path == "infer")
    for _ in range(3):
        F.conv2d(xt, wt, padding=1)
    alias = np.from_dlpack(wt.detach())
    alias[2, 3] *= -1.0
    w[2, 3] *= -1.0
    for _ in range(3):
        np.testing.assert_allclose(F.conv2d(xt, wt, padding=1).numpy(),
                                   np_conv(x, w, (1, 1), [(1, 1), (1, 1)], (1, 1), 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", ["train", "infer"])
@pytest.mark.parametrize("shape", [((2, 32, 12, 12), (32, 32, 3, 3), 1), ((2, 16, 15, 13), (24, 16, 3, 3), 2),
                                   ((1, 64, 7, 7), (64, 64, 1, 1), 1)], ids=str)
def test_first_and_later_calls_give_the_same_bits(monkeypatch, shape, path):
    """The tuned candidate is the same whether the filter is new or reused (only its
    packing is kept), so a network gives the same bits on its first call as later, and
    static graphs equal eager ones; in training (conv2d's kernel) and in inference
    (fused_conv2d's)."""
    monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    xs, ws, stride = shape
    rng = np.random.default_rng(5)
    x = oar.to_tensor(rng.standard_normal(xs).astype("float32"))
    outs = []
    for _ in range(2):  # a new filter of the same geometry each time: first sight, then reuse
        w = oar.to_tensor(rng.standard_normal(ws).astype("float32"), stop_gradient=path == "infer")
        outs.append([F.conv2d(x, w, stride=stride, padding=ws[2] // 2).numpy() for _ in range(4)])
    for calls in outs:
        for y in calls[1:]:
            np.testing.assert_array_equal(y, calls[0])


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_winograd_products_split_by_thread(monkeypatch, threads):
    """At t threads dividing 16 the 16 Winograd products run whole, 16 / t per thread, in one
    region: against float64 at 1, 2 and 4 threads, on a batch that spans two image chunks
    (13 images of 64 channels) and odd sizes with partial tiles; gradients too."""
    monkeypatch.setenv("OAR_CONV_ALGO", "winograd")
    rng = np.random.default_rng(threads)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for xs, ws in (((13, 64, 16, 16), (64, 64, 3, 3)), ((3, 24, 11, 9), (40, 24, 3, 3))):
            x, w = rng.standard_normal(xs), rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
            ref = np_conv(x, w, (1, 1), [(1, 1), (1, 1)], (1, 1), 1)
            g = rng.standard_normal(ref.shape)
            y, dx, dw = run_conv(x, w, (1, 1), [1, 1, 1, 1], (1, 1), 1, False, g, calls=2)
            rdx, rdw = np_conv_grads(x, w, g, (1, 1), [(1, 1), (1, 1)], (1, 1), 1)
            np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-3 * xs[0])
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("path", ["train", "infer"])
@pytest.mark.parametrize("algo", ALGOS + [None])
@pytest.mark.parametrize("shape", [((5, 16, 40, 50), (24, 16, 3, 3), 1),    # 320 KB per image: slices 3 + 2
                                   ((3, 8, 97, 101), (8, 8, 3, 3), 2),      # 393 KB: slices 2 + 1, stride 2
                                   ((0, 8, 97, 101), (8, 8, 3, 3), 2)], ids=str)
def test_cache_slices_match_float64_and_the_whole_batch(monkeypatch, algo, shape, path):
    """Note [Convolutions in cache slices]: at one thread a batch whose activations pass 1 MiB
    may run as consecutive slices of images (unequal slices here, each length tuned as its
    own geometry): forced on, every candidate against float64, and against the whole batch
    within float32 rounding, on a new and on a reused filter; conv2d's forward (a filter that
    wants a gradient) and fused_conv2d's (no gradient flows)."""
    if algo is None:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    else:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)
    xs, ws, stride = shape
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
    ref = np_conv(x, w, (stride, stride), [(1, 1), (1, 1)], (1, 1), 1)
    xt, wt = oar.to_tensor(x.astype("float32")), oar.to_tensor(w.astype("float32"), stop_gradient=path == "infer")
    prev = oar.get_num_threads()
    outs = {}
    try:
        oar.set_num_threads(1)
        for mode in ["1", "0"]:
            monkeypatch.setenv("OAR_CONV_CACHE_SLICES", mode)
            outs[mode] = [F.conv2d(xt, wt, stride=stride, padding=1).numpy() for _ in range(3)]
            with oar.no_grad():  # the inference form's slices time themselves when not forced
                monkeypatch.delenv("OAR_CONV_CACHE_SLICES")
                outs["timed"] = [F.conv2d(xt, wt, stride=stride, padding=1).numpy() for _ in range(2)]
    finally:
        oar.set_num_threads(prev)
    for y in outs["1"] + outs["0"] + outs["timed"]:
        assert y.shape == ref.shape
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    scale = max(np.abs(ref).max(initial=0.0), 1.0)
    for y in outs["1"]:
        np.testing.assert_allclose(y, outs["0"][0], rtol=0, atol=4e-6 * scale)


@pytest.mark.parametrize("mode", ["1", None])
@pytest.mark.parametrize("algo", ["onednn-blocked", "im2col", None])
def test_cache_slices_in_pool_chunks(monkeypatch, algo, mode):
    """At two threads each pool chunk of Note [Convolutions on the pool] may run in cache
    slices (Note [Convolutions in cache slices]): 10 images of 320 KB split into two chunks
    of 5, each sliced 3 + 2 when forced ("1") or when its first call's timing picks it
    (None); against float64, on a new and on a reused filter, and with a batch of 3 (chunks
    of 2 and 1)."""
    if algo is None:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    else:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)
    if mode is None:
        monkeypatch.delenv("OAR_CONV_CACHE_SLICES", raising=False)
    else:
        monkeypatch.setenv("OAR_CONV_CACHE_SLICES", mode)
    rng = np.random.default_rng(12)
    prev = oar.get_num_threads()
    try:
        oar.set_num_threads(2)
        for xs in ((10, 16, 40, 50), (3, 16, 40, 50)):
            x, w = rng.standard_normal(xs), rng.standard_normal((24, 16, 3, 3)) / 12.0
            ref = np_conv(x, w, (1, 1), [(1, 1), (1, 1)], (1, 1), 1)
            xt, wt = oar.to_tensor(x.astype("float32")), oar.to_tensor(w.astype("float32"))
            for _ in range(3):
                y = F.conv2d(xt, wt, padding=1).numpy()
                np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("algo", ALGOS + ["direct-rows", "direct-channels", None])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_inference_candidate_matches_float64(monkeypatch, algo, case, channels_last):
    """An eager convolution no gradient flows from runs fused_conv2d, with F.conv2d's bias
    as its post-op: every candidate against float64, on a filter reused over calls (first
    sight, then packed)."""
    xs, ws, stride, p, dil, groups = CASES[case]
    if algo:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)
    else:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    rng = np.random.default_rng(100 + case)
    x = rng.standard_normal(xs)
    w = rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
    b = rng.standard_normal(ws[0])
    pads = [(p[0], p[1]), (p[2], p[3])]
    ref = np_conv(x, w, stride, pads, dil, groups) + b[None, :, None, None]
    to = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if channels_last else (lambda a: a)
    xt = oar.to_tensor(to(x).astype("float32"))
    wt = oar.to_tensor(w.astype("float32"), stop_gradient=False)  # no_grad: no gradient flows all the same
    bt = oar.to_tensor(b.astype("float32"), stop_gradient=False)
    with oar.no_grad():
        for _ in range(3):
            y = F.conv2d(xt, wt, bt, stride=list(stride), padding=p, dilation=list(dil), groups=groups,
                         data_format="NHWC" if channels_last else "NCHW")
            got = y.numpy().transpose(0, 3, 1, 2) if channels_last else y.numpy()
            assert got.shape == ref.shape and y.stop_gradient
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def _ops_run(fn):
    with oar.profiler.Profiler(on_trace_ready=lambda p: None) as prof:
        out = fn()
    return out, {n for n, _, _ in prof.op_stats()}


def test_which_kernel_an_eager_convolution_runs():
    """fused_conv2d (the predictor's inference convolution, the bias as its post-op) where
    no gradient flows in float32 on the CPU; conv2d where a gradient flows, in float64,
    under autocast (its bf16 kernel) and while to_static traces (the program keeps conv2d
    for the IR's conv fusions)."""
    rng = np.random.default_rng(3)
    conv = oar.nn.Conv2D(4, 6, 3, padding=1)
    x = oar.to_tensor(rng.standard_normal((2, 4, 5, 5)).astype("float32"))
    with oar.no_grad():
        y, ran = _ops_run(lambda: conv(x))
    assert "fused_conv2d" in ran and "conv2d" not in ran and "add" not in ran, ran
    y_train, ran = _ops_run(lambda: conv(x))
    assert "conv2d" in ran and "fused_conv2d" not in ran and not y_train.stop_gradient, ran
    np.testing.assert_allclose(y.numpy(), y_train.numpy(), rtol=1e-5, atol=1e-5)
    w = conv.weight.detach()
    _, ran = _ops_run(lambda: F.conv2d(x, w, padding=1))  # every input stop_gradient
    assert "fused_conv2d" in ran, ran
    with oar.no_grad():
        _, ran = _ops_run(lambda: F.conv2d(x.astype("float64"), w.astype("float64"), padding=1))
        assert "conv2d" in ran and "fused_conv2d" not in ran, ran
        with oar.amp.auto_cast(dtype="bfloat16"):  # conv2d is on the white list: bf16 (its inputs cast)
            yb, ran = _ops_run(lambda: F.conv2d(x, w, padding=1))
        assert "fused_conv2d" not in ran and "cast" in ran and yb.dtype == oar.bfloat16, (ran, yb.dtype)
        f = oar.jit.to_static(lambda t: F.conv2d(t, w, padding=1))
        f(x)
        text = str(f.main_program)
        assert "pd_op.conv2d" in text and "pd_op.fused_conv2d" not in text
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \[6\], got \[5\]"):
        with oar.no_grad():
            F.conv2d(x, w, oar.zeros([5]), padding=1)


def test_inference_convolution_drops_the_packs_of_dead_filters(monkeypatch):
    """Eager inference code may convolve with a new filter tensor at every call: the packed
    form of a filter whose storage died is dropped when the next filter is packed, so memory
    stays flat (before: up to 1024 dead packs, here 9.4 MB each)."""
    monkeypatch.setenv("OAR_CONV_ALGO", "onednn-blocked")  # a candidate that packs the filter

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((1, 512, 2, 2)).astype("float32"))
    w = rng.standard_normal((512, 512, 3, 3)).astype("float32")
    alive = []  # some filters live on for a few calls, so the dead ones' addresses are not all reused
    with oar.no_grad():
        for i in range(70):
            if i == 10:
                before = rss_mib()
            wt = oar.to_tensor(w * (1 + i))
            if i % 2 == 0:
                alive = alive[-2:] + [wt]
            F.conv2d(x, wt, padding=1)
    grown = rss_mib() - before
    assert grown < 150, f"RSS grew {grown:.0f} MiB over 60 calls with new 9.4 MB filters"
