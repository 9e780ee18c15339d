"""oar.signal (frame, overlap_add, stft, istft) against float64 NumPy loops; gradients
against finite differences; round trips; bad inputs name the op and the argument."""
import numpy as np
import pytest

import oar
from oar import signal


def t64(a, grad=False):
    t = oar.to_tensor(np.asarray(a))
    t.stop_gradient = not grad
    return t


def ref_frame(x, fl, hop, axis):
    if axis == -1:
        nf = 1 + (x.shape[-1] - fl) // hop
        out = np.zeros(x.shape[:-1] + (fl, nf), x.dtype)
        for f in range(nf):
            for k in range(fl):
                out[..., k, f] = x[..., f * hop + k]
        return out
    nf = 1 + (x.shape[0] - fl) // hop
    out = np.zeros((nf, fl) + x.shape[1:], x.dtype)
    for f in range(nf):
        for k in range(fl):
            out[f, k] = x[f * hop + k]
    return out


def ref_overlap_add(x, hop, axis):
    if axis == -1:
        fl, nf = x.shape[-2:]
        out = np.zeros(x.shape[:-2] + ((nf - 1) * hop + fl,), x.dtype)
        for f in range(nf):
            for k in range(fl):
                out[..., f * hop + k] += x[..., k, f]
        return out
    nf, fl = x.shape[:2]
    out = np.zeros(((nf - 1) * hop + fl,) + x.shape[2:], x.dtype)
    for f in range(nf):
        for k in range(fl):
            out[f * hop + k] += x[f, k]
    return out


def ref_stft(x, n_fft, hop, win, window, center, pad_mode, normalized, onesided):
    w = np.ones(win) if window is None else window
    left = (n_fft - win) // 2
    w = np.concatenate([np.zeros(left), w, np.zeros(n_fft - win - left)])
    if center:
        p = n_fft // 2
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)],
                   mode="reflect" if pad_mode == "reflect" else "constant")
    nf = 1 + (x.shape[-1] - n_fft) // hop
    bins = n_fft // 2 + 1 if onesided else n_fft
    out = np.zeros(x.shape[:-1] + (bins, nf), np.complex128)
    k = np.arange(n_fft)
    for f in range(nf):
        seg = x[..., f * hop:f * hop + n_fft] * w
        for b in range(bins):
            out[..., b, f] = (seg * np.exp(-2j * np.pi * b * k / n_fft)).sum(-1)
    return out / np.sqrt(n_fft) if normalized else out


@pytest.mark.parametrize("shape,fl,hop,axis", [((11,), 4, 3, -1), ((2, 3, 9), 9, 1, -1),
                                               ((10, 2), 3, 2, 0), ((7, 2, 3), 1, 5, 0)])
def test_frame_and_overlap_add_match_reference(shape, fl, hop, axis):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    out = signal.frame(t64(x), fl, hop, axis)
    np.testing.assert_array_equal(out.numpy(), ref_frame(x, fl, hop, axis))
    back = signal.overlap_add(out, hop, axis)
    np.testing.assert_allclose(back.numpy(), ref_overlap_add(ref_frame(x, fl, hop, axis), hop,
                                                             axis), rtol=1e-12)
    xi = rng.integers(-5, 5, shape)
    np.testing.assert_array_equal(signal.frame(oar.to_tensor(xi), fl, hop, axis).numpy(),
                                  ref_frame(xi, fl, hop, axis))


def test_frame_overlap_add_gradients():
    rng = np.random.default_rng(1)
    x = t64(rng.normal(size=(2, 10)), grad=True)
    cot = rng.normal(size=(2, 4, 3))
    (signal.frame(x, 4, 3) * t64(cot)).sum().backward()
    # d/dx of sum(frame(x) * cot) is overlap_add(cot)
    np.testing.assert_allclose(x.grad.numpy(), ref_overlap_add(cot, 3, -1)[:, :10], rtol=1e-12)
    f = t64(rng.normal(size=(4, 3, 2)), grad=True)
    cot = rng.normal(size=(12, 2))
    (signal.overlap_add(f, 3, axis=0) * t64(cot)).sum().backward()
    np.testing.assert_allclose(f.grad.numpy(), ref_frame(cot, 3, 3, 0), rtol=1e-12)


@pytest.mark.parametrize("kw", [
    dict(n_fft=16), dict(n_fft=15, hop_length=4, win_length=11, window=True, normalized=True),
    dict(n_fft=8, center=False, onesided=False), dict(n_fft=12, pad_mode="constant")])
def test_stft_matches_reference_and_istft_inverts(kw):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 50))
    n_fft = kw["n_fft"]
    hop = kw.get("hop_length", n_fft // 4)
    win = kw.get("win_length", n_fft)
    window = rng.uniform(0.5, 1.0, win) if kw.get("window") else None
    args = dict(kw, window=None if window is None else t64(window))
    out = signal.stft(t64(x), **args)
    ref = ref_stft(x, n_fft, hop, win, window, kw.get("center", True),
                   kw.get("pad_mode", "reflect"), kw.get("normalized", False),
                   kw.get("onesided", True))
    assert out.dtype == oar.complex128
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-9, atol=1e-9)
    one = signal.stft(t64(x[0]), **args)
    np.testing.assert_allclose(one.numpy(), ref[0], rtol=1e-9, atol=1e-9)
    if kw.get("center", True):
        inv = {k: v for k, v in args.items() if k != "pad_mode"}
        back = signal.istft(out, **inv)
        np.testing.assert_allclose(back.numpy(), x[:, :back.shape[-1]], rtol=1e-9, atol=1e-9)
        assert signal.istft(out, length=40, **inv).shape == [2, 40]
        np.testing.assert_allclose(signal.istft(out, length=40, **inv).numpy(), x[:, :40],
                                   rtol=1e-9, atol=1e-9)


def test_stft_complex_input_and_gradient():
    rng = np.random.default_rng(3)
    xc = rng.normal(size=30) + 1j * rng.normal(size=30)
    out = signal.stft(oar.to_tensor(xc), 8, onesided=False, center=False)
    np.testing.assert_allclose(out.numpy(), ref_stft(xc, 8, 2, 8, None, False, None, False,
                                                     False), rtol=1e-9, atol=1e-9)
    x = rng.normal(size=24)
    xt = t64(x, grad=True)
    out = signal.stft(xt, 8, hop_length=3)
    cot_r, cot_i = rng.normal(size=out.shape), rng.normal(size=out.shape)

    def f(v):
        s = ref_stft(v, 8, 3, 8, None, True, "reflect", False, True)
        return (s.real * cot_r + s.imag * cot_i).sum()

    (oar.real(out) * t64(cot_r) + oar.imag(out) * t64(cot_i)).sum().backward()
    fd = np.array([(f(x + e) - f(x - e)) / 2e-6 for e in np.eye(24) * 1e-6])
    np.testing.assert_allclose(xt.grad.numpy(), fd, rtol=1e-6, atol=1e-7)
    assert xt.stft(8, hop_length=3).shape == out.shape  # the Tensor method


def test_signal_bad_inputs():
    x = oar.rand([10])
    with pytest.raises(ValueError, match=r"frame: frame_length \(11\) must not exceed"):
        signal.frame(x, 11, 2)
    with pytest.raises(ValueError, match="frame: hop_length must be a positive int, got 0"):
        signal.frame(x, 4, 0)
    with pytest.raises(ValueError, match="frame: axis must be 0 or -1, got 1"):
        signal.frame(x, 4, 2, axis=1)
    with pytest.raises(ValueError, match="overlap_add: x must have at least 2 dims"):
        signal.overlap_add(x, 2)
    with pytest.raises(ValueError, match=r"stft: win_length \(20\) must not exceed n_fft"):
        signal.stft(x, 8, win_length=20)
    with pytest.raises(ValueError, match="stft: onesided must be False for complex input"):
        signal.stft(oar.to_tensor(np.ones(10, np.complex64)), 4)
    with pytest.raises(ValueError, match="stft: reflect padding of 10 needs more than"):
        signal.stft(x, 20)
    with pytest.raises(ValueError, match="stft: pad_mode must be"):
        signal.stft(x, 4, pad_mode="wrap")
    with pytest.raises(ValueError, match=r"stft: window must be a 1-D Tensor of win_length 4"):
        signal.stft(x, 4, window=oar.ones([3]))
    spec = signal.stft(oar.rand([40]), 8)
    with pytest.raises(ValueError, match=r"istft: x must have 6 frequency bins for n_fft=10 \(onesided=True\), got 5"):
        signal.istft(spec, 10)
    with pytest.raises(TypeError, match="istft: x must be complex"):
        signal.istft(oar.rand([5, 6]), 8)
    with pytest.raises(ValueError, match="istft: the window's squared overlap-add vanishes"):
        signal.istft(spec, 8, window=oar.zeros([8]))
