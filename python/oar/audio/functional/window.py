"""paddle.audio.functional.get_window: the windows of scipy.signal.get_window (periodic when
fftbins, symmetric otherwise), computed in float64 NumPy and returned as a tensor of dtype."""
import numpy as np

import oar
from oar._windows import (_bartlett, _general_cosine, _kaiser, bartlett_window,  # noqa: F401
                          blackman_window, hamming_window, hann_window, kaiser_window)

__all__ = ["get_window"]


def _gaussian(m, std):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-n ** 2 / (2 * std * std))


def _general_gaussian(m, p, sig):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-0.5 * np.abs(n / sig) ** (2 * p))


def _exponential(m, center=None, tau=1.0):
    center = (m - 1) / 2 if center is None else center
    return np.exp(-np.abs(np.arange(m) - center) / tau)


def _triang(m):
    n = np.arange(1, (m + 1) // 2 + 1)
    w = 2 * n / (m + 1.0)
    if m % 2 == 0:
        w = (2 * n - 1.0) / m
        return np.concatenate([w, w[::-1]])
    return np.concatenate([w, w[-2::-1]])


def _bohman(m):
    if m <= 2:
        return np.zeros(m) if m == 2 else np.ones(m)
    fac = np.abs(np.linspace(-1, 1, m)[1:-1])
    w = (1 - fac) * np.cos(np.pi * fac) + 1.0 / np.pi * np.sin(np.pi * fac)
    return np.concatenate([[0.0], w, [0.0]])


def _cosine(m):
    return np.sin(np.pi / m * (np.arange(m) + 0.5)) if m else np.ones(0)


def _tukey(m, alpha=0.5):
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1.0:
        return _general_cosine(m, [0.5, 0.5])
    n = np.arange(m)
    width = int(np.floor(alpha * (m - 1) / 2.0))
    n1, n2, n3 = n[:width + 1], n[width + 1:m - width - 1], n[m - width - 1:]
    w1 = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * n1 / alpha / (m - 1))))
    w3 = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * n3 / alpha / (m - 1))))
    return np.concatenate([w1, np.ones(n2.shape), w3])


def _taylor(m, nbar=4, sll=30, norm=True):
    b = 10 ** (sll / 20)
    a = np.arccosh(b) / np.pi
    s2 = nbar ** 2 / (a ** 2 + (nbar - 0.5) ** 2)
    ma = np.arange(1, nbar)
    fm = np.empty(nbar - 1)
    signs = np.where(ma % 2 == 1, 1.0, -1.0)
    m2 = ma * ma
    for i in range(nbar - 1):
        numer = signs[i] * np.prod(1 - m2[i] / s2 / (a ** 2 + (ma - 0.5) ** 2))
        denom = 2 * np.prod(1 - m2[i] / m2[:i]) * np.prod(1 - m2[i] / m2[i + 1:])
        fm[i] = numer / denom

    def w_at(n):
        return 1 + 2 * np.dot(fm, np.cos(2 * np.pi * ma[:, None] * (n - m / 2.0 + 0.5) / m))
    w = w_at(np.arange(m))
    if norm:
        w = w / w_at((m - 1) / 2)
    return w


def _nuttall(m):
    return _general_cosine(m, [0.3635819, 0.4891775, 0.1365995, 0.0106411])


_WINDOWS = {  # name -> (function of (M, *params), number of required params)
    "hamming": (lambda m: _general_cosine(m, [0.54, 0.46]), 0),
    "hann": (lambda m: _general_cosine(m, [0.5, 0.5]), 0),
    "blackman": (lambda m: _general_cosine(m, [0.42, 0.50, 0.08]), 0),
    "bartlett": (_bartlett, 0), "triang": (_triang, 0), "bohman": (_bohman, 0),
    "cosine": (_cosine, 0), "nuttall": (_nuttall, 0), "tukey": (_tukey, 0), "taylor": (_taylor, 0),
    "gaussian": (_gaussian, 1), "general_gaussian": (_general_gaussian, 2),
    "exponential": (_exponential, 0), "kaiser": (_kaiser, 1),
}


def get_window(window, win_length, fftbins=True, dtype="float64"):
    """A window of win_length samples: a name ('hann', 'hamming', 'blackman', 'bartlett',
    'triang', 'bohman', 'cosine', 'nuttall', 'tukey', 'taylor') or a tuple of a name and its
    parameters (('gaussian', std), ('general_gaussian', p, sig), ('exponential', center, tau),
    ('kaiser', beta)). fftbins: periodic (for spectra) instead of symmetric."""
    op = "get_window"
    if isinstance(window, tuple) and window and isinstance(window[0], str):
        name, params = window[0], tuple(window[1:])
    elif isinstance(window, str):
        name, params = window, ()
    else:
        raise ValueError(f"{op}: window must be a name or a (name, params...) tuple, got {window!r}")
    if name not in _WINDOWS:
        raise ValueError(f"{op}: unknown window type {name!r}; known: {sorted(_WINDOWS)}")
    fn, needed = _WINDOWS[name]
    if len(params) < needed or (name in ("gaussian", "exponential", "kaiser") and not params):
        raise ValueError(f"{op}: the {name!r} window needs {max(needed, 1)} parameter(s): pass a "
                         f"tuple such as ({name!r}, value)")
    if isinstance(win_length, bool) or not isinstance(win_length, (int, np.integer)) \
            or not 0 <= win_length <= 1 << 31:
        raise ValueError(f"{op}: win_length must be an int in [0, 2**31], got {win_length!r}")
    m = int(win_length)
    if m <= 1:
        return oar.ones([m], dtype=dtype)
    w = fn(m + 1, *params)[:-1] if fftbins else fn(m, *params)
    return oar.to_tensor(np.asarray(w, dtype=np.float64), dtype=dtype)
