"""Convolutions at 2 threads run in batch slices on Oar's pool (Note [Convolutions on the
pool], docs/notes/thread_pool.md): each slice a one-thread convolution, the filter
gradient's slices summed after. Forward, data and filter gradients against float64 NumPy
at 1 and 2 threads for every candidate the tuning may pick, on odd batches (slices of
unequal length), a batch smaller than the thread count (not split), 0-size batches,
strides, padding, groups, channels-last, conv1d and conv3d; the split against the unsplit
convolution within float32 rounding; bf16 forward and data gradient; the inference
convolution with bias and relu (fused_conv2d) for each of its candidates, in batch slices
and, for fewer images than threads, in slices of its output channels; and a CNN training
loop at 2 threads that starts no OpenMP worker."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import oar
import pytest
from test_conv_algos import ALGOS, np_conv_grads
from test_conv_bf16 import CONV, FIRST, LAST
from test_conv_pool import np_conv

# (x shape N C *S, filter shape, stride, pads [(before, after)] per dim, dilation, groups)
CASES = [
    ((5, 16, 9, 11), (32, 16, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), 1),   # odd batch: slices 3 + 2
    ((3, 5, 13, 7), (7, 5, 3, 3), (2, 2), [(1, 0), (2, 1)], (1, 1), 1),
    ((4, 8, 10, 9), (12, 4, 3, 1), (1, 1), [(0, 2), (0, 0)], (1, 1), 2),
    ((7, 64, 7, 7), (64, 64, 1, 1), (1, 1), [(0, 0), (0, 0)], (1, 1), 1),
    ((1, 24, 11, 10), (40, 24, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), 1),  # batch < 2 threads: whole
    ((0, 16, 8, 8), (16, 16, 3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), 1),
    ((3, 6, 17), (10, 6, 5), (2,), [(2, 1)], (1,), 1),                           # conv1d
    ((3, 4, 5, 6, 7), (8, 4, 3, 3, 3), (1, 2, 1), [(1, 1)] * 3, (1, 1, 1), 1),  # conv3d
    ((3, 32, 47, 49), (6, 32, 3, 3), (2, 2), [(1, 1), (1, 1)], (1, 1), 1),  # stride 2, odd width: im2col's vector gather
]


def conv_and_grads(x, w, g, stride, pads, dil, groups, channels_last, dtype="float32"):
    """oar's convolution of x by w (called twice: the second call reuses the filter) and
    the gradients of <conv, g>, all returned NC... in float64."""
    nd = x.ndim - 2
    perm = (0, *range(2, nd + 2), 1) if channels_last else tuple(range(nd + 2))
    inv = tuple(np.argsort(perm))
    xt = oar.to_tensor(np.ascontiguousarray(x.transpose(perm)).astype("float32")).astype(dtype)
    wt = oar.to_tensor(w.astype("float32")).astype(dtype)
    xt.stop_gradient = wt.stop_gradient = False
    flat = [p for pair in pads for p in pair]
    for _ in range(2):
        y = CONV[nd](xt, wt, stride=list(stride), padding=flat, dilation=list(dil), groups=groups,
                     data_format=LAST[nd] if channels_last else FIRST[nd])
    gt = oar.to_tensor(np.ascontiguousarray(g.transpose(perm)).astype("float32")).astype(dtype)
    (y * gt).sum().backward()
    f64 = lambda t: t.astype("float32").numpy().astype(np.float64)  # noqa: E731
    return f64(y).transpose(inv), f64(xt.grad).transpose(inv), f64(wt.grad)


def case_data(case):
    xs, ws, stride, pads, dil, groups = CASES[case]
    rng = np.random.default_rng(100 + case)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))
    ref = np_conv(x, w, stride, pads, dil, groups)
    g = rng.standard_normal(ref.shape)
    return x, w, g, ref


@pytest.mark.parametrize("channels_last", [False, True], ids=["cfirst", "clast"])
@pytest.mark.parametrize("algo", ALGOS + [None])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_split_convolution_matches_float64(monkeypatch, threads, algo, case, channels_last):
    if algo is None:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)  # the tuned choice
    else:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)  # where it applies (else the tuned choice)
    monkeypatch.delenv("OAR_CONV_SPLIT", raising=False)
    xs, ws, stride, pads, dil, groups = CASES[case]
    x, w, g, ref = case_data(case)
    y, dx, dw = conv_and_grads(x, w, g, stride, pads, dil, groups, channels_last)
    rdx, rdw = np_conv_grads(x, w, g, stride, pads, dil, groups)
    assert y.shape == ref.shape and dx.shape == x.shape and dw.shape == w.shape
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, rdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, rdw, rtol=1e-4, atol=1e-3 * max(1, xs[0]))


@pytest.mark.parametrize("algo", ["onednn", "onednn-blocked", "im2col", "winograd"])
@pytest.mark.parametrize("case", [0, 1, 3, 7])
def test_split_equals_unsplit(monkeypatch, algo, case):
    """The same candidate on the whole batch at 1 thread and in slices at 2: the forward and
    data gradient per image within float32 rounding, the filter gradient (a sum over the
    batch, now in two parts) within its accumulated rounding."""
    monkeypatch.setenv("OAR_CONV_ALGO", algo)
    xs, ws, stride, pads, dil, groups = CASES[case]
    x, w, g, _ = case_data(case)
    prev = oar.get_num_threads()
    try:
        oar.set_num_threads(1)
        whole = conv_and_grads(x, w, g, stride, pads, dil, groups, False)
        oar.set_num_threads(2)
        split = conv_and_grads(x, w, g, stride, pads, dil, groups, False)
        monkeypatch.setenv("OAR_CONV_SPLIT", "0")  # oneDNN's own OpenMP threads, whole batch
        omp = conv_and_grads(x, w, g, stride, pads, dil, groups, False)
    finally:
        oar.set_num_threads(prev)
    for a, b, c in zip(whole, split, omp):
        scale = np.abs(a).max()
        np.testing.assert_allclose(b, a, rtol=0, atol=4e-6 * scale * np.sqrt(xs[0]))
        np.testing.assert_allclose(c, a, rtol=0, atol=4e-6 * scale * np.sqrt(xs[0]))


@pytest.mark.parametrize("case", [0, 1, 6, 7])
def test_bf16_split_matches_float64(monkeypatch, threads, case):
    """bfloat16 forward and data gradient run in slices too (the filter gradient stays whole:
    a bf16 partial would be rounded twice); bound as test_conv_bf16's."""
    from test_conv_bf16 import _check
    from test_lowp_gemm import HAS_BF16_HW
    if not HAS_BF16_HW:
        pytest.skip("no AVX512-BF16 / AMX: bf16 convolutions run through float32")
    xs, ws, stride, pads, dil, groups = CASES[case]
    x, w, g, _ = case_data(case)
    bf = lambda a: np.asarray(oar.to_tensor(a.astype("float32")).astype("bfloat16").astype("float32"), np.float64)  # noqa: E731
    x, w, g = bf(x), bf(w), bf(g)
    ref = np_conv(x, w, stride, pads, dil, groups)
    rdx, rdw = np_conv_grads(x, w, g, stride, pads, dil, groups)
    y, dx, dw = conv_and_grads(x, w, g, stride, pads, dil, groups, False, dtype="bfloat16")
    _check(y, ref, np_conv(np.abs(x), np.abs(w), stride, pads, dil, groups))
    _check(dx, rdx, np.abs(rdx).max())
    _check(dw, rdw, np.abs(rdw).max())


@pytest.mark.parametrize("algo", ["onednn", "onednn-plain", "onednn-blocked", "im2col", "winograd", "direct-rows",
                                  "direct-channels", None])
@pytest.mark.parametrize("spec", [((5, 8, 6, 12), (16, 8, 3, 3), 1, 1, "relu", True),   # slices of 3 and 2
                                  ((4, 16, 5, 7), (8, 16, 3, 3), 2, 1, "", True),       # stride 2, odd sizes
                                  ((3, 8, 4, 4), (8, 8, 1, 1), 1, 0, "relu", False),    # 1x1
                                  ((1, 4, 5, 5), (8, 4, 3, 3), 1, 0, "relu", True),     # one image: whole
                                  ((0, 4, 5, 5), (8, 4, 3, 3), 1, 1, "", True)])        # 0-size batch
def test_fused_conv2d_split_matches_float64(monkeypatch, threads, algo, spec):
    """The inference convolution with bias and relu (conv_onednn_fused.cc) in batch slices:
    each candidate, twice (the tuning call, then the cached pick), against float64."""
    from oar import _C
    xs, ws, stride, pad, act, bias = spec
    if algo is None:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    else:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)
    monkeypatch.delenv("OAR_CONV_SPLIT", raising=False)
    rng = np.random.default_rng(sum(xs))
    x = rng.standard_normal(xs).astype("float32")
    w = rng.standard_normal(ws).astype("float32")
    b = rng.standard_normal(ws[0]).astype("float32")
    ref = np_conv(x.astype(np.float64), w.astype(np.float64), (stride,) * 2, [(pad, pad)] * 2, (1, 1), 1)
    if bias:
        ref = ref + b.astype(np.float64)[None, :, None, None]
    if act == "relu":
        ref = np.maximum(ref, 0)
    wt = oar.to_tensor(w)
    for _ in range(2):
        got = _C.ops.fused_conv2d(oar.to_tensor(x), wt, oar.to_tensor(b) if bias else None, [stride] * 2,
                                  [pad] * 4, [1, 1], 1, "NCHW", act).numpy()
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


# (x shape, filter shape, stride, pad, groups, activation, bias, threads): fewer images than
# threads, so the inference convolution runs in channel slices (Note [Convolutions on the pool])
CHANNEL_SPECS = [
    ((1, 8, 9, 11), (32, 8, 3, 3), 1, 1, 1, "relu", True, 2),     # two blocks of 16: one a slice
    ((1, 16, 7, 9), (48, 16, 3, 3), 2, 1, 1, "", True, 2),        # three blocks: slices of 2 and 1
    ((1, 6, 12, 10), (64, 6, 1, 1), 1, 0, 1, "relu", False, 2),   # 1x1, no bias
    ((2, 8, 9, 7), (48, 8, 3, 3), 1, 1, 1, "relu", True, 3),      # 2 images at 3 threads: each slice both
    ((1, 32, 8, 9), (32, 1, 3, 3), 1, 1, 32, "relu", True, 2),    # depthwise: 16 groups a block
    ((1, 16, 5, 7), (32, 1, 3, 3), 2, 1, 16, "", True, 2),        # depthwise, 2 outputs per group
    ((1, 8, 6, 6), (64, 2, 3, 3), 1, 1, 4, "relu", True, 2),      # 4 groups of 16 outputs
    ((1, 8, 6, 6), (24, 8, 3, 3), 1, 1, 1, "relu", True, 2),      # 24 channels: not whole blocks, whole
]


@pytest.mark.parametrize("algo", ["onednn", "onednn-plain", "onednn-blocked", "im2col", "winograd", "direct-rows",
                                  "direct-channels", None])
@pytest.mark.parametrize("spec", CHANNEL_SPECS)
def test_fused_conv2d_channel_slices_match_float64(monkeypatch, algo, spec):
    """The inference convolution of fewer images than threads, in slices of its output
    channels (and of a group convolution's groups) on the pool: each candidate, on a new
    filter and then its packed slices, against float64 and against the unsplit
    convolution (OAR_CONV_SPLIT=0) within float32 rounding."""
    from oar import _C
    xs, ws, stride, pad, groups, act, bias, threads = spec
    if algo is None:
        monkeypatch.delenv("OAR_CONV_ALGO", raising=False)
    else:
        monkeypatch.setenv("OAR_CONV_ALGO", algo)
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x = rng.standard_normal(xs).astype("float32")
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype("float32")
    b = rng.standard_normal(ws[0]).astype("float32")
    ref = np_conv(x.astype(np.float64), w.astype(np.float64), (stride,) * 2, [(pad, pad)] * 2, (1, 1), groups)
    if bias:
        ref = ref + b.astype(np.float64)[None, :, None, None]
    if act == "relu":
        ref = np.maximum(ref, 0)
    wt = oar.to_tensor(w)

    def run():
        return _C.ops.fused_conv2d(oar.to_tensor(x), wt, oar.to_tensor(b) if bias else None, [stride] * 2,
                                   [pad] * 4, [1, 1], groups, "NCHW", act).numpy()

    prev = oar.get_num_threads()
    try:
        oar.set_num_threads(threads)
        monkeypatch.delenv("OAR_CONV_SPLIT", raising=False)
        split = [run() for _ in range(3)]
        monkeypatch.setenv("OAR_CONV_SPLIT", "0")
        whole = run()
    finally:
        oar.set_num_threads(prev)
    for got in split + [whole]:
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(split[-1], whole, rtol=0, atol=4e-6 * max(np.abs(ref).max(), 1.0))


def _tuned_geometries(code, **env):
    """The convolution geometries a fresh process tunes (OAR_CONV_TUNE_LOG) running `code`
    at two threads."""
    env = dict(os.environ, OMP_NUM_THREADS="2", OAR_CONV_TUNE_LOG="1", **env)
    env.pop("OAR_CONV_ALGO", None)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    return [line.split("]", 1)[1].split(":", 1)[0].strip() for line in p.stderr.splitlines()
            if line.startswith("[oar conv tune] F")]


def test_one_image_runs_in_channel_slices_on_the_pool():
    """At two threads a one-image inference convolution is tuned and run as two slices of
    its output channels (the 1-image, 16-channel geometry), eager under no_grad and in the
    predictor alike; with OAR_CONV_SPLIT=0 it runs whole (32 channels), oneDNN threading it."""
    code = """
        import tempfile, numpy as np, oar
        oar.set_num_threads(2)
        m = oar.nn.Sequential(oar.nn.Conv2D(8, 32, 3, padding=1), oar.nn.ReLU())
        m.eval()
        x = oar.to_tensor(np.random.default_rng(0).standard_normal((1, 8, 13, 11)).astype("float32"))
        with oar.no_grad():
            ref = m(x).numpy()
        d = tempfile.mkdtemp()
        oar.jit.save(m, d + "/m", input_spec=[oar.static.InputSpec([None, 8, 13, 11], "float32", "x")])
        cfg = oar.inference.Config(d + "/m.pdmodel", d + "/m.pdiparams")
        cfg.set_cpu_math_library_num_threads(2)
        got = oar.inference.create_predictor(cfg).run([x])[0].numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    """
    sliced = "F2,0,1,8,16,1,13,13,3,1,1,1,1,11,11,3,1,1,1,1,"
    whole = sliced.replace(",8,16,1,", ",8,32,1,")
    split = _tuned_geometries(code)
    assert sliced + "b-" in split and sliced + "br" in split, split  # eager (bias), predictor (bias, relu)
    assert not any(g.startswith(whole) for g in split), split
    unsplit = _tuned_geometries(code, OAR_CONV_SPLIT="0")
    assert whole + "b-" in unsplit and not any(g.startswith(sliced) for g in unsplit), unsplit


@pytest.mark.parametrize("wake", ["0", "67108864"], ids=["worker-woken", "caller-only"])
def test_cnn_training_starts_no_openmp_worker(wake):
    """A CNN training loop (conv, batch norm, relu, max pool, linear, cross-entropy, AdamW) at
    2 threads runs its convolutions on the pool: no OpenMP worker thread is started (libgomp
    starts one at its first 2-thread region and keeps it), whether the pool's worker runs a
    slice (wake grain 0) or the caller runs them all (the grain at its cap)."""
    code = textwrap.dedent(
        """
        import os, numpy as np, oar
        oar.set_num_threads(2)
        nn = oar.nn
        def tasks():
            return len(os.listdir("/proc/self/task"))
        base = tasks()
        layers, cin = [], 3
        for cout in (8, 16):
            layers += [nn.Conv2D(cin, cout, 3, padding=1), nn.BatchNorm2D(cout), nn.ReLU(), nn.MaxPool2D(2)]
            cin = cout
        m = nn.Sequential(*layers, nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
        opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=m.parameters())
        rng = np.random.default_rng(0)
        x = oar.to_tensor(rng.standard_normal((9, 3, 16, 16)).astype("float32"))
        y = oar.to_tensor(rng.integers(0, 10, (9,)).astype("int64"))
        for _ in range(3):
            loss = oar.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
        assert np.isfinite(float(loss))
        print(base, tasks(), oar._C._parallel_info()["workers"])
        """
    )
    env = dict(os.environ, OMP_NUM_THREADS="2", OAR_PARALLEL_WAKE_GRAIN=wake)
    env.pop("OAR_CONV_SPLIT", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    base, after, workers = (int(v) for v in p.stdout.split()[-3:])
    assert after - base == workers, (base, after, workers)
