"""paddle.audio's feature layers against a float64 NumPy STFT (reflect/constant padding,
short windows, hop), finite-difference gradients in the waveform, and the WAV backend's
round trip, info and bad inputs."""
import numpy as np
import pytest
import scipy.fft
import scipy.signal

import oar
import oar.audio as A
import oar.audio.functional as AF
from oar.audio.features import MFCC, LogMelSpectrogram, MelSpectrogram, Spectrogram

RNG = np.random.default_rng(7)


def np_stft(x, n_fft, hop, win_length, center=True, pad_mode="reflect"):
    w = scipy.signal.get_window("hann", win_length, fftbins=True)
    left = (n_fft - win_length) // 2
    w = np.concatenate([np.zeros(left), w, np.zeros(n_fft - win_length - left)])
    if center:
        x = np.pad(x, [(0, 0), (n_fft // 2, n_fft // 2)], mode=pad_mode)
    frames = (x.shape[-1] - n_fft) // hop + 1
    fr = np.stack([x[:, i * hop:i * hop + n_fft] for i in range(frames)], axis=1)
    return np.fft.rfft(fr * w, axis=-1).transpose(0, 2, 1)


@pytest.mark.parametrize("n_fft, hop, win_length, center, pad_mode, power", [
    (64, 16, None, True, "reflect", 1.0), (32, 7, 20, True, "constant", 2.0),
    (16, 16, 16, False, "reflect", 1.5)])
def test_spectrogram_against_numpy(n_fft, hop, win_length, center, pad_mode, power):
    x = RNG.standard_normal((2, 200))
    layer = Spectrogram(n_fft, hop, win_length, "hann", power, center, pad_mode, dtype="float64")
    out = layer(oar.to_tensor(x)).numpy()
    ref = np.abs(np_stft(x, n_fft, hop, win_length or n_fft, center, pad_mode)) ** power
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-9)
    assert list(layer(oar.to_tensor(x[0])).shape) == list(ref.shape[1:])


def test_spectrogram_gradient_in_the_waveform():
    x = RNG.standard_normal((1, 24))
    layer = Spectrogram(8, 4, None, "hann", 2.0, dtype="float64")
    wgt = RNG.standard_normal(layer(oar.to_tensor(x)).shape)

    def loss(v):
        return float((layer(oar.to_tensor(v)).numpy() * wgt).sum())
    t = oar.to_tensor(x)
    t.stop_gradient = False
    (layer(t) * oar.to_tensor(wgt)).sum().backward()
    num = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += 1e-6
        xm[i] -= 1e-6
        num[i] = (loss(xp) - loss(xm)) / 2e-6
    np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-5, atol=1e-6)


def test_mel_logmel_mfcc_compose():
    x = RNG.standard_normal((2, 800))
    sr, n_fft = 8000, 128
    spec = np.abs(np_stft(x, n_fft, 32, n_fft)) ** 2
    fb = AF.compute_fbank_matrix(sr, n_fft, 20, 50.0, sr // 2, dtype="float64").numpy()
    mel = MelSpectrogram(sr, n_fft, 32, n_mels=20, dtype="float64")(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(mel, fb @ spec, rtol=1e-9, atol=1e-12)
    logmel = LogMelSpectrogram(sr, n_fft, 32, n_mels=20, top_db=60.0, dtype="float64")(oar.to_tensor(x)).numpy()
    ref = 10 * np.log10(np.maximum(fb @ spec, 1e-10))
    np.testing.assert_allclose(logmel, np.maximum(ref, ref.max() - 60.0), rtol=1e-9)
    mfcc = MFCC(sr, 13, n_fft, 32, n_mels=20, dtype="float64")(oar.to_tensor(x)).numpy()
    dct = scipy.fft.dct(np.eye(20), type=2, norm="ortho", axis=-1)[:, :13]
    np.testing.assert_allclose(mfcc, np.einsum("bmt,mk->bkt", 10 * np.log10(np.maximum(fb @ spec, 1e-10)), dct),
                               rtol=1e-8, atol=1e-8)


def test_feature_bad_inputs():
    with pytest.raises(ValueError, match="Spectrogram: win_length .* must not exceed n_fft"):
        Spectrogram(16, win_length=32)
    with pytest.raises(ValueError, match="Spectrogram: x must be a waveform Tensor"):
        Spectrogram(16, 4)(oar.zeros([1, 2, 3]))
    with pytest.raises(ValueError, match="reflect padding of 8 needs more than 8 samples"):
        Spectrogram(16, 4)(oar.zeros([1, 5]))
    with pytest.raises(ValueError, match="MFCC: n_mfcc must be an int in"):
        MFCC(n_mfcc=100, n_mels=64)


@pytest.mark.parametrize("channels", [1, 3])
def test_wav_round_trip(tmp_path, channels):
    path = str(tmp_path / "a.wav")
    x = RNG.uniform(-0.99, 0.99, (channels, 500)).astype(np.float32)
    A.save(path, oar.to_tensor(x), 16000)
    info = A.info(path)
    assert (info.sample_rate, info.num_samples, info.num_channels, info.bits_per_sample) == (16000, 500, channels, 16)
    y, sr = A.load(path)
    assert sr == 16000 and y.dtype == oar.float32 and list(y.shape) == [channels, 500]
    np.testing.assert_allclose(y.numpy(), np.round(x * 2 ** 15) / 2 ** 15, atol=1e-7)
    part, _ = A.load(path, frame_offset=100, num_frames=50, normalize=False, channels_first=False)
    np.testing.assert_array_equal(part.numpy(), np.round(x * 2 ** 15).T[100:150])


def test_wav_clips_and_backends(tmp_path):
    path = str(tmp_path / "b.wav")
    A.save(path, oar.to_tensor([[1.0, -1.0, 2.0]]), 8000)
    y, _ = A.load(path, normalize=False)
    np.testing.assert_array_equal(y.numpy(), [[32767, -32768, 32767]])
    assert A.backends.list_available_backends() == ["wave_backend"]
    assert A.backends.get_current_backend() == "wave_backend"
    with pytest.raises(NotImplementedError, match="set_backend: unknown backend 'soundfile'"):
        A.backends.set_backend("soundfile")
    with pytest.raises(ValueError, match="save: src must be a 2-D Tensor"):
        A.save(path, oar.zeros([3]), 8000)
    with pytest.raises(ValueError, match="save: bits_per_sample must be 16"):
        A.save(path, oar.zeros([1, 3]), 8000, bits_per_sample=24)
    bad = tmp_path / "c.wav"
    bad.write_bytes(b"not a wav file")
    with pytest.raises(NotImplementedError, match="load: .* is not a PCM WAV file"):
        A.load(str(bad))
