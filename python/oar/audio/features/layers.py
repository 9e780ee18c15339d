"""paddle.audio.features: Spectrogram, MelSpectrogram, LogMelSpectrogram and MFCC layers of
waveforms [N, T] (or [T]). The short-time Fourier transform frames the (centre-padded)
signal with Oar's index ops and transforms each windowed frame with oar.fft.rfft, so the
features are differentiable in the waveform."""
import numpy as np

import oar
from oar._creation import _full_on
from oar.nn import Layer

from ..functional import compute_fbank_matrix, create_dct, get_window, power_to_db

__all__ = ["Spectrogram", "MelSpectrogram", "LogMelSpectrogram", "MFCC"]


def _check_int(op, arg, v, low=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not low <= v <= 1 << 24:
        raise ValueError(f"{op}: {arg} must be an int in [{low}, 2**24], got {v!r}")
    return int(v)


def _stft(op, x, n_fft, hop, window, center, pad_mode):
    """|frames| of x [N, T]: [N, n_fft // 2 + 1, frames] complex."""
    if not isinstance(x, oar.Tensor) or x.ndim not in (1, 2):
        raise ValueError(f"{op}: x must be a waveform Tensor [N, T] or [T], got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    squeeze = x.ndim == 1
    if squeeze:
        x = x.unsqueeze(0)
    t = x.shape[-1]
    if center:
        p = n_fft // 2
        if pad_mode == "reflect":
            if t <= p:
                raise ValueError(f"{op}: reflect padding of {p} needs more than {p} samples, "
                                 f"got {t}")
            idx = np.concatenate([np.arange(p, 0, -1), np.arange(t), t - 2 - np.arange(p)])
            x = oar.index_select(x, oar.to_tensor(idx.astype(np.int64), place=x.place), axis=-1)
        elif pad_mode == "constant":
            z = _full_on(x.place, [x.shape[0], p], 0, x.dtype)
            x = oar.concat([z, x, z], axis=-1)
        else:
            raise ValueError(f"{op}: pad_mode must be 'reflect' or 'constant', got {pad_mode!r}")
        t = x.shape[-1]
    if t < n_fft:
        raise ValueError(f"{op}: the signal ({t} samples after padding) is shorter than "
                         f"n_fft ({n_fft})")
    frames = (t - n_fft) // hop + 1
    idx = (np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    fr = oar.index_select(x, oar.to_tensor(idx.astype(np.int64), place=x.place), axis=-1)
    fr = fr.reshape([x.shape[0], frames, n_fft]) * window.astype(x.dtype)
    spec = oar.transpose(oar.fft.rfft(fr, axis=-1), [0, 2, 1])
    return spec.squeeze(0) if squeeze else spec


class Spectrogram(Layer):
    """|STFT(x)| ** power: [N, n_fft // 2 + 1, frames]."""

    def __init__(self, n_fft=512, hop_length=512, win_length=None, window="hann", power=1.0,
                 center=True, pad_mode="reflect", dtype="float32"):
        super().__init__()
        op = type(self).__name__
        self._n_fft = _check_int(op, "n_fft", n_fft)
        win_length = self._n_fft if win_length is None else _check_int(op, "win_length", win_length)
        if win_length > self._n_fft:
            raise ValueError(f"{op}: win_length ({win_length}) must not exceed n_fft ({n_fft})")
        self._hop = win_length // 4 if hop_length is None else _check_int(op, "hop_length", hop_length)
        if self._hop == 0:
            raise ValueError(f"{op}: hop_length must be positive (win_length {win_length} // 4 is 0)")
        if power <= 0:
            raise ValueError(f"{op}: power must be positive, got {power}")
        self.power, self._center, self._pad_mode = power, center, pad_mode
        w = get_window(window, win_length, fftbins=True, dtype=dtype)
        left = (self._n_fft - win_length) // 2  # a short window sits in the middle of the frame
        w = oar.concat([oar.zeros([left], dtype=dtype), w,
                        oar.zeros([self._n_fft - win_length - left], dtype=dtype)])
        self.register_buffer("fft_window", w)

    def forward(self, x):
        spec = _stft(type(self).__name__, x, self._n_fft, self._hop, self.fft_window,
                     self._center, self._pad_mode)
        return oar.pow(oar.abs(spec), self.power)


class MelSpectrogram(Layer):
    """The mel filter bank times the spectrogram: [N, n_mels, frames]."""

    def __init__(self, sr=22050, n_fft=2048, hop_length=512, win_length=None, window="hann",
                 power=2.0, center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None,
                 htk=False, norm="slaney", dtype="float32"):
        super().__init__()
        self._spectrogram = Spectrogram(n_fft, hop_length, win_length, window, power, center,
                                        pad_mode, dtype)
        self.n_mels, self.f_min, self.f_max, self.htk, self.norm = n_mels, f_min, f_max, htk, norm
        f_max = sr // 2 if f_max is None else f_max
        self.register_buffer("fbank_matrix", compute_fbank_matrix(
            sr, n_fft, n_mels, f_min, f_max, htk, norm, dtype))

    def forward(self, x):
        return oar.matmul(self.fbank_matrix, self._spectrogram(x))


class LogMelSpectrogram(Layer):
    """power_to_db of the mel spectrogram: [N, n_mels, frames]."""

    def __init__(self, sr=22050, n_fft=512, hop_length=None, win_length=None, window="hann",
                 power=2.0, center=True, pad_mode="reflect", n_mels=64, f_min=50.0, f_max=None,
                 htk=False, norm="slaney", ref_value=1.0, amin=1e-10, top_db=None,
                 dtype="float32"):
        super().__init__()
        self._melspectrogram = MelSpectrogram(sr, n_fft, hop_length, win_length, window, power,
                                              center, pad_mode, n_mels, f_min, f_max, htk, norm,
                                              dtype)
        self.ref_value, self.amin, self.top_db = ref_value, amin, top_db

    def forward(self, x):
        return power_to_db(self._melspectrogram(x), self.ref_value, self.amin, self.top_db)


class MFCC(Layer):
    """Mel-frequency cepstral coefficients: the DCT of the log mel spectrogram,
    [N, n_mfcc, frames]."""

    def __init__(self, sr=22050, n_mfcc=40, n_fft=512, hop_length=None, win_length=None,
                 window="hann", power=2.0, center=True, pad_mode="reflect", n_mels=64,
                 f_min=50.0, f_max=None, htk=False, norm="slaney", ref_value=1.0, amin=1e-10,
                 top_db=None, dtype="float32"):
        super().__init__()
        if isinstance(n_mfcc, bool) or not isinstance(n_mfcc, int) or not 0 < n_mfcc <= n_mels:
            raise ValueError(f"MFCC: n_mfcc must be an int in [1, n_mels = {n_mels}], got {n_mfcc!r}")
        self._log_melspectrogram = LogMelSpectrogram(
            sr, n_fft, hop_length, win_length, window, power, center, pad_mode, n_mels, f_min,
            f_max, htk, norm, ref_value, amin, top_db, dtype)
        self.register_buffer("dct_matrix", create_dct(n_mfcc, n_mels, dtype=dtype))

    def forward(self, x):
        logmel = self._log_melspectrogram(x)
        perm = [0, 2, 1] if logmel.ndim == 3 else [1, 0]
        return oar.transpose(oar.matmul(oar.transpose(logmel, perm), self.dct_matrix), perm)
