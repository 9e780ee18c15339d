"""paddle.audio: audio file I/O (16-bit WAV), windows, mel scales and spectrogram features.
Loaded on first use (`oar.audio`), not by `import oar`."""
from . import backends, features, functional  # noqa: F401
from .backends import init_backend as _init


def load(filepath, frame_offset=0, num_frames=-1, normalize=True, channels_first=True):
    """(waveform, sample_rate) of an audio file, through the current backend."""
    return _init.backend().load(filepath, frame_offset, num_frames, normalize, channels_first)


def info(filepath):
    """AudioInfo (sample rate, frames, channels, bits per sample) of an audio file."""
    return _init.backend().info(filepath)


def save(filepath, src, sample_rate, channels_first=True, encoding=None, bits_per_sample=16):
    """Writes a waveform tensor to an audio file, through the current backend."""
    return _init.backend().save(filepath, src, sample_rate, channels_first, encoding,
                                bits_per_sample)


__all__ = ["functional", "features", "backends", "load", "info", "save"]
