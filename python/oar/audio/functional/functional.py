"""paddle.audio.functional: mel scales (HTK and Slaney), FFT bin frequencies, mel filter
banks, power to decibels and the DCT matrix of MFCCs (librosa's definitions)."""
import math

import numpy as np

import oar
import oar.nn.functional as F

__all__ = ["hz_to_mel", "mel_to_hz", "mel_frequencies", "fft_frequencies",
           "compute_fbank_matrix", "power_to_db", "create_dct"]

_F_SP = 200.0 / 3  # Slaney: linear below 1 kHz, 200/3 Hz per mel
_MIN_LOG_HZ, _MIN_LOG_MEL = 1000.0, 1000.0 / (200.0 / 3)
_LOGSTEP = math.log(6.4) / 27.0


def _positive_int(op, arg, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0 or v > 1 << 24:
        raise ValueError(f"{op}: {arg} must be a positive int (at most 2**24), got {v!r}")
    return int(v)


def hz_to_mel(freq, htk=False):
    """Hz to mels: 2595 log10(1 + f / 700) (htk), else Slaney's scale (linear below 1 kHz,
    logarithmic above). A float gives a float, a Tensor a Tensor."""
    if isinstance(freq, oar.Tensor):
        if htk:
            return 2595.0 * oar.log10(1.0 + freq / 700.0)
        lin = freq / _F_SP
        log = _MIN_LOG_MEL + oar.log(oar.maximum(freq, oar.full_like(freq, _MIN_LOG_HZ))
                                     / _MIN_LOG_HZ) / _LOGSTEP
        return oar.where(freq >= _MIN_LOG_HZ, log, lin)
    if isinstance(freq, bool) or not isinstance(freq, (int, float)):
        raise TypeError(f"hz_to_mel: freq must be a float or a Tensor, got {type(freq).__name__}")
    if htk:
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    if freq >= _MIN_LOG_HZ:
        return _MIN_LOG_MEL + math.log(freq / _MIN_LOG_HZ) / _LOGSTEP
    return freq / _F_SP


def mel_to_hz(mel, htk=False):
    """The inverse of hz_to_mel."""
    if isinstance(mel, oar.Tensor):
        if htk:
            return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
        return oar.where(mel >= _MIN_LOG_MEL,
                         _MIN_LOG_HZ * oar.exp(_LOGSTEP * (mel - _MIN_LOG_MEL)), _F_SP * mel)
    if isinstance(mel, bool) or not isinstance(mel, (int, float)):
        raise TypeError(f"mel_to_hz: mel must be a float or a Tensor, got {type(mel).__name__}")
    if htk:
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    if mel >= _MIN_LOG_MEL:
        return _MIN_LOG_HZ * math.exp(_LOGSTEP * (mel - _MIN_LOG_MEL))
    return _F_SP * mel


def mel_frequencies(n_mels=64, f_min=0.0, f_max=11025.0, htk=False, dtype="float32"):
    """n_mels frequencies (Hz) evenly spaced on the mel scale from f_min to f_max."""
    n_mels = _positive_int("mel_frequencies", "n_mels", n_mels)
    mels = np.linspace(hz_to_mel(float(f_min), htk), hz_to_mel(float(f_max), htk), n_mels)
    return mel_to_hz(oar.to_tensor(mels, dtype="float64"), htk).astype(dtype)


def fft_frequencies(sr, n_fft, dtype="float32"):
    """The center frequencies of the 1 + n_fft // 2 rfft bins at sample rate sr."""
    n_fft = _positive_int("fft_frequencies", "n_fft", n_fft)
    return oar.to_tensor(np.linspace(0, float(sr) / 2, 1 + n_fft // 2), dtype=dtype)


def compute_fbank_matrix(sr, n_fft, n_mels=64, f_min=0.0, f_max=None, htk=False,
                         norm="slaney", dtype="float32"):
    """The mel filter bank [n_mels, 1 + n_fft // 2]: triangles between neighbouring mel
    frequencies; norm 'slaney' scales each to unit area, a number p normalizes rows in p-norm."""
    op = "compute_fbank_matrix"
    n_mels = _positive_int(op, "n_mels", n_mels)
    n_fft = _positive_int(op, "n_fft", n_fft)
    f_max = float(sr) / 2 if f_max is None else f_max
    fft = fft_frequencies(sr, n_fft, "float64").numpy()
    mel_f = mel_frequencies(n_mels + 2, f_min, f_max, htk, "float64").numpy()
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    out = oar.to_tensor(weights)
    if norm == "slaney":
        out = out * oar.to_tensor(2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])).unsqueeze(1)
    elif isinstance(norm, (int, float)) and not isinstance(norm, bool):
        out = F.normalize(out, p=norm, axis=-1)
    elif norm is not None:
        raise ValueError(f"{op}: norm must be 'slaney', a number or None, got {norm!r}")
    return out.astype(dtype)


def power_to_db(spect, ref_value=1.0, amin=1e-10, top_db=80.0):
    """10 log10(max(amin, spect) / max(amin, ref_value)), floored at its max - top_db."""
    if amin <= 0:
        raise ValueError(f"power_to_db: amin must be strictly positive, got {amin}")
    if ref_value <= 0:
        raise ValueError(f"power_to_db: ref_value must be strictly positive, got {ref_value}")
    if not isinstance(spect, oar.Tensor):
        raise TypeError(f"power_to_db: spect must be a Tensor, got {type(spect).__name__}")
    log_spec = 10.0 * oar.log10(oar.maximum(spect, oar.full_like(spect, amin)))
    log_spec = log_spec - 10.0 * math.log10(max(amin, ref_value))
    if top_db is not None:
        if top_db < 0:
            raise ValueError(f"power_to_db: top_db must be non-negative, got {top_db}")
        log_spec = oar.maximum(log_spec, log_spec.max() - top_db)
    return log_spec


def create_dct(n_mfcc, n_mels, norm="ortho", dtype="float32"):
    """The DCT-II matrix [n_mels, n_mfcc] that turns log mel spectra into MFCCs ('ortho':
    orthonormal columns; None: unscaled, times 2)."""
    n_mfcc = _positive_int("create_dct", "n_mfcc", n_mfcc)
    n_mels = _positive_int("create_dct", "n_mels", n_mels)
    n = np.arange(n_mels, dtype=np.float64)
    k = np.arange(n_mfcc, dtype=np.float64)
    dct = np.cos(np.pi / n_mels * (n[:, None] + 0.5) * k[None, :])
    if norm is None:
        dct *= 2.0
    elif norm == "ortho":
        dct[:, 0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / n_mels)
    else:
        raise ValueError(f"create_dct: norm must be 'ortho' or None, got {norm!r}")
    return oar.to_tensor(dct, dtype=dtype)
