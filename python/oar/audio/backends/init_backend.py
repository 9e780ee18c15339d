"""Backend selection of paddle.audio: Oar ships the 'wave_backend' only."""
from . import wave_backend

__all__ = ["get_current_backend", "list_available_backends", "set_backend"]

_BACKENDS = {"wave_backend": wave_backend}
_current = ["wave_backend"]


def list_available_backends():
    """The backends that can be selected: ['wave_backend'] ('soundfile' needs paddleaudio)."""
    return list(_BACKENDS)


def get_current_backend():
    """The name of the backend paddle.audio.load/save/info use."""
    return _current[0]


def set_backend(backend_name):
    """Selects the backend of paddle.audio.load/save/info."""
    if backend_name not in _BACKENDS:
        raise NotImplementedError(f"set_backend: unknown backend {backend_name!r}; available: "
                                  f"{list_available_backends()} (soundfile needs paddleaudio, "
                                  "which Oar does not ship)")
    _current[0] = backend_name


def backend():
    return _BACKENDS[_current[0]]
