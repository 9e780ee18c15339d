"""paddle.audio.functional and the top-level windows against scipy / float64 NumPy
references: windows, mel scales, filter banks, decibels, the DCT matrix; bad inputs."""
import math

import numpy as np
import pytest
import scipy.fft
import scipy.signal

import oar
import oar.audio.functional as AF

WINDOWS = ["hamming", "hann", "blackman", "bartlett", "triang", "bohman", "cosine", "nuttall",
           "tukey", "taylor", ("gaussian", 7.0), ("general_gaussian", 1.5, 5.0),
           ("exponential", None, 3.0), ("kaiser", 8.6)]


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("fftbins", [True, False])
def test_get_window_matches_scipy(window, n, fftbins):
    if window[0] == "exponential" and fftbins and n > 1:  # scipy refuses this one: by definition
        ref = np.exp(-np.abs(np.arange(n) - n / 2) / 3.0)
    else:
        ref = scipy.signal.get_window(window, n, fftbins=fftbins) if n else np.zeros(0)
    out = AF.get_window(window, n, fftbins=fftbins)
    assert out.dtype == oar.float64 and list(out.shape) == [n]
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)


def test_get_window_bad_inputs():
    with pytest.raises(ValueError, match="get_window: the 'gaussian' window needs"):
        AF.get_window("gaussian", 8)
    with pytest.raises(ValueError, match="get_window: unknown window type 'nope'"):
        AF.get_window("nope", 8)
    with pytest.raises(ValueError, match="get_window: win_length must be an int"):
        AF.get_window("hann", -1)
    assert AF.get_window("hann", 8, dtype="float32").dtype == oar.float32


@pytest.mark.parametrize("name, scipy_name, kw", [
    ("hann_window", "hann", {}), ("blackman_window", "blackman", {}),
    ("bartlett_window", "bartlett", {}), ("kaiser_window", ("kaiser", 12.0), {}),
    ("kaiser_window", ("kaiser", 8.6), {"beta": 8.6}),
    ("hamming_window", ("general_hamming", 0.54), {})])
@pytest.mark.parametrize("n", [1, 2, 9, 400])
@pytest.mark.parametrize("periodic", [True, False])
def test_top_level_windows(name, scipy_name, kw, n, periodic):
    out = getattr(oar, name)(n, periodic, **kw)
    ref = scipy.signal.get_window(scipy_name, n, fftbins=periodic)
    assert out.dtype == oar.float32 and out.stop_gradient
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-6)


def test_top_level_window_options():
    w = oar.hamming_window(256, alpha=0.5, beta=0.5, dtype="float64", requires_grad=True)
    np.testing.assert_allclose(w.numpy(), scipy.signal.get_window("hann", 256), atol=1e-12)
    assert not w.stop_gradient and list(oar.hann_window(0).shape) == [0]
    with pytest.raises(ValueError, match="hann_window: window_length must be a non-negative int"):
        oar.hann_window(-3)


def np_hz_to_mel(f, htk):
    f = np.asarray(f, dtype=np.float64)
    if htk:
        return 2595.0 * np.log10(1.0 + f / 700.0)
    return np.where(f >= 1000, 15.0 + np.log(np.maximum(f, 1e-30) / 1000) / (np.log(6.4) / 27), f * 3 / 200)


@pytest.mark.parametrize("htk", [True, False])
def test_mel_scale_round_trip(htk):
    f = np.array([0.0, 3.0, 440.0, 999.0, 1000.0, 4000.0, 11025.0])
    mel = AF.hz_to_mel(oar.to_tensor(f), htk)
    np.testing.assert_allclose(mel.numpy(), np_hz_to_mel(f, htk), rtol=1e-12)
    np.testing.assert_allclose(AF.mel_to_hz(mel, htk).numpy(), f, atol=1e-9)
    for v in f:
        assert math.isclose(AF.hz_to_mel(float(v), htk), float(np_hz_to_mel(v, htk)), rel_tol=1e-12)
        assert math.isclose(AF.mel_to_hz(AF.hz_to_mel(float(v), htk), htk), v, abs_tol=1e-9)
    with pytest.raises(TypeError, match="hz_to_mel: freq must be a float or a Tensor"):
        AF.hz_to_mel("3")


def test_mel_and_fft_frequencies():
    out = AF.mel_frequencies(64, 0.5, 10000, True, "float64").numpy()
    ref = 700.0 * (10 ** (np.linspace(np_hz_to_mel(0.5, True), np_hz_to_mel(10000, True), 64) / 2595) - 1)
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    np.testing.assert_allclose(AF.fft_frequencies(16000, 128).numpy(), np.fft.rfftfreq(128, 1 / 16000))
    with pytest.raises(ValueError, match="mel_frequencies: n_mels must be a positive int"):
        AF.mel_frequencies(0)


@pytest.mark.parametrize("norm", ["slaney", 1.0, None])
@pytest.mark.parametrize("htk", [False, True])
def test_fbank_matrix_against_the_triangle_definition(norm, htk):
    sr, n_fft, n_mels = 16000, 64, 10
    out = AF.compute_fbank_matrix(sr, n_fft, n_mels, f_min=20.0, htk=htk, norm=norm, dtype="float64").numpy()
    fft = np.linspace(0, sr / 2, 1 + n_fft // 2)
    edges = AF.mel_frequencies(n_mels + 2, 20.0, sr / 2, htk, "float64").numpy()
    ref = np.zeros((n_mels, fft.size))
    for i in range(n_mels):
        lo, c, hi = edges[i:i + 3]
        for j, f in enumerate(fft):
            ref[i, j] = max(0.0, min((f - lo) / (c - lo), (hi - f) / (hi - c)))
        if norm == "slaney":
            ref[i] *= 2.0 / (hi - lo)
        elif norm == 1.0:
            ref[i] /= max(np.abs(ref[i]).sum(), 1e-12)
    np.testing.assert_allclose(out, ref, atol=1e-12)


def test_power_to_db():
    s = np.abs(np.random.default_rng(0).standard_normal((3, 5))) ** 2 * 100
    out = AF.power_to_db(oar.to_tensor(s), ref_value=2.0, amin=1e-3, top_db=20.0).numpy()
    ref = 10 * np.log10(np.maximum(s, 1e-3)) - 10 * np.log10(2.0)
    np.testing.assert_allclose(out, np.maximum(ref, ref.max() - 20.0), rtol=1e-12)
    np.testing.assert_allclose(AF.power_to_db(oar.to_tensor(s), top_db=None).numpy(),
                               10 * np.log10(np.maximum(s, 1e-10)), rtol=1e-12)
    with pytest.raises(ValueError, match="power_to_db: amin must be strictly positive"):
        AF.power_to_db(oar.to_tensor(s), amin=0)


@pytest.mark.parametrize("n_mfcc, n_mels", [(23, 257), (5, 5), (1, 3)])
def test_create_dct_matches_scipy(n_mfcc, n_mels):
    ref = scipy.fft.dct(np.eye(n_mels), type=2, norm="ortho", axis=-1)[:, :n_mfcc]
    np.testing.assert_allclose(AF.create_dct(n_mfcc, n_mels, dtype="float64").numpy(), ref, atol=1e-12)
    ref2 = scipy.fft.dct(np.eye(n_mels), type=2, axis=-1)[:, :n_mfcc]
    np.testing.assert_allclose(AF.create_dct(n_mfcc, n_mels, None, "float64").numpy(), ref2, atol=1e-12)
    with pytest.raises(ValueError, match="create_dct: norm must be 'ortho' or None"):
        AF.create_dct(n_mfcc, n_mels, "backward")
