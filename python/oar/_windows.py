"""Paddle's top-level window functions (paddle.hann_window, hamming_window, kaiser_window,
blackman_window, bartlett_window), the torch-style signature: a periodic window of length N
is the symmetric window of length N + 1 without its last sample. Served lazily (oar._lazy)."""
import numpy as np

import oar

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
           "kaiser_window"]


def _length(op, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{op}: window_length must be a non-negative int, got {n!r}")
    if n > 1 << 31:
        raise ValueError(f"{op}: window_length {n} is too large (at most 2**31)")
    return int(n)


def _general_cosine(m, coeffs):
    """sum_k (-1)^k a_k cos(2 pi k n / (m - 1)): a symmetric window of length m."""
    if m <= 1:
        return np.ones(m)
    fac = np.linspace(-np.pi, np.pi, m)
    w = np.zeros(m)
    for k, a in enumerate(coeffs):
        w += a * np.cos(k * fac)
    return w


def _bartlett(m):
    if m <= 1:
        return np.ones(m)
    n = np.arange(m)
    return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _kaiser(m, beta):
    if m <= 1:
        return np.ones(m)
    n = np.arange(m)
    alpha = (m - 1) / 2.0
    return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(float(beta))


def _finish(op, fn, n, periodic, dtype, requires_grad, device=None, pin_memory=False):
    n = _length(op, n)
    w = fn(n + 1)[:-1] if periodic and n > 1 else fn(n)  # length 1: [1.]
    out = oar.to_tensor(w.astype(np.float64), dtype=dtype or "float32", place=device)
    if pin_memory:
        out = out.pin_memory()
    out.stop_gradient = not requires_grad
    return out


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype="float32",
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _finish("hamming_window", lambda m: _general_cosine(m, [alpha, beta]), window_length,
                   periodic, dtype, requires_grad, device, pin_memory)


def hann_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _finish("hann_window", lambda m: _general_cosine(m, [0.5, 0.5]), window_length,
                   periodic, dtype, requires_grad, device, pin_memory)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype="float32", layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)."""
    return _finish("kaiser_window", lambda m: _kaiser(m, beta), window_length, periodic, dtype,
                   requires_grad, device, pin_memory)


def blackman_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _finish("blackman_window", lambda m: _general_cosine(m, [0.42, 0.50, 0.08]),
                   window_length, periodic, dtype, requires_grad, device, pin_memory)


def bartlett_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The triangular window 1 - |2n / (N - 1) - 1|."""
    return _finish("bartlett_window", _bartlett, window_length, periodic, dtype, requires_grad, device, pin_memory)
