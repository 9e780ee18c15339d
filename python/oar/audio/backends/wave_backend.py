"""The 'wave_backend' of paddle.audio: 16-bit PCM WAV files through Python's wave module."""
import os
import wave

import numpy as np

import oar

__all__ = ["AudioInfo", "info", "load", "save"]


class AudioInfo:
    """What info() reports of an audio file."""

    def __init__(self, sample_rate, num_samples, num_channels, bits_per_sample, encoding):
        self.sample_rate = sample_rate
        self.num_samples = num_samples
        self.num_channels = num_channels
        self.bits_per_sample = bits_per_sample
        self.encoding = encoding

    def __repr__(self):
        return (f"AudioInfo(sample_rate={self.sample_rate}, num_samples={self.num_samples}, "
                f"num_channels={self.num_channels}, bits_per_sample={self.bits_per_sample}, "
                f"encoding={self.encoding})")


def _open(op, filepath):
    if not hasattr(filepath, "read") and not isinstance(filepath, (str, os.PathLike)):
        raise TypeError(f"{op}: filepath must be a path or a binary file object, got "
                        f"{type(filepath).__name__}")
    try:
        return wave.open(filepath if hasattr(filepath, "read") else os.fspath(filepath), "rb")
    except (wave.Error, EOFError) as e:
        raise NotImplementedError(f"{op}: {filepath!r} is not a PCM WAV file the wave backend "
                                  f"reads ({e}); other formats need the soundfile backend, "
                                  "which Oar does not ship") from None


def info(filepath):
    """Sample rate, frame count, channels and sample width of a WAV file."""
    with _open("info", filepath) as f:
        return AudioInfo(f.getframerate(), f.getnframes(), f.getnchannels(),
                         f.getsampwidth() * 8, "PCM_S")


def load(filepath, frame_offset=0, num_frames=-1, normalize=True, channels_first=True):
    """(waveform, sample_rate) of a 16-bit WAV file: float32 in [-1, 1) when normalize, else
    the raw sample values; [channels, time] when channels_first."""
    for arg, v, low in (("frame_offset", frame_offset, 0), ("num_frames", num_frames, -1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"load: {arg} must be an int >= {low}, got {v!r}")
    with _open("load", filepath) as f:
        channels, rate, frames, width = f.getnchannels(), f.getframerate(), f.getnframes(), \
            f.getsampwidth()
        if width != 2:
            raise NotImplementedError(f"load: only 16-bit PCM WAV is supported, the file has "
                                      f"{width * 8}-bit samples")
        f.setpos(min(frame_offset, frames))
        count = frames - min(frame_offset, frames) if num_frames == -1 else num_frames
        data = f.readframes(count)
    audio = np.frombuffer(data, dtype="<i2").astype(np.float32).reshape(-1, channels)
    if normalize:
        audio = audio / 2 ** 15
    out = oar.to_tensor(audio)
    return (oar.transpose(out, [1, 0]) if channels_first else out), rate


def save(filepath, src, sample_rate, channels_first=True, encoding=None, bits_per_sample=16):
    """Writes src ([channels, time] when channels_first) as 16-bit PCM: floating samples in
    [-1, 1] are scaled by 2**15 (and clipped), integer ones are written as they are."""
    if not isinstance(src, oar.Tensor) or src.ndim != 2:
        raise ValueError(f"save: src must be a 2-D Tensor, got {getattr(src, 'shape', type(src).__name__)}")
    if bits_per_sample not in (None, 16):
        raise ValueError(f"save: bits_per_sample must be 16 (16-bit PCM only), got {bits_per_sample}")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, np.integer)) or sample_rate <= 0:
        raise ValueError(f"save: sample_rate must be a positive int, got {sample_rate!r}")
    audio = src.numpy()
    if channels_first:
        audio = audio.T
    if audio.dtype.kind == "f":
        audio = np.clip(np.round(audio * 2 ** 15), -2 ** 15, 2 ** 15 - 1)
    audio = np.ascontiguousarray(audio.astype("<i2"))
    with wave.open(os.fspath(filepath), "wb") as f:
        f.setnchannels(audio.shape[1])
        f.setsampwidth(2)
        f.setframerate(int(sample_rate))
        f.writeframes(audio.tobytes())
