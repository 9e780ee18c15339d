"""oar.signal: Paddle's paddle.signal (frame, overlap_add, stft, istft).

frame is one index_select of overlapping windows; overlap_add is one index_add of the frames
into the signal (duplicate indices accumulate); stft/istft frame, window and transform with
oar.fft. All are compositions, so gradients flow through them."""
import numpy as np

from ._creation import _full_on

__all__ = ["frame", "overlap_add", "stft", "istft"]
_TENSOR_METHODS = ["stft", "istft"]  # served as Tensor methods by oar._lazy


def _oar():
    import oar

    return oar


def _check_x(op, x, min_ndim=1):
    oar = _oar()
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if len(x.shape) < min_ndim:
        raise ValueError(f"{op}: x must have at least {min_ndim} dims, got shape {list(x.shape)}")


def _pos_int(op, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
        raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    return int(v)


def _axis(op, axis):
    if axis not in (0, -1):
        raise ValueError(f"{op}: axis must be 0 or -1, got {axis!r}")
    return axis


def frame(x, frame_length, hop_length, axis=-1, name=None):
    """Slices x into overlapping frames along its last (axis=-1: [..., seq] -> [...,
    frame_length, num_frames]) or first (axis=0: [seq, ...] -> [num_frames, frame_length,
    ...]) dim; num_frames = 1 + (seq - frame_length) // hop_length."""
    oar = _oar()
    op = "frame"
    _check_x(op, x)
    fl = _pos_int(op, "frame_length", frame_length)
    hop = _pos_int(op, "hop_length", hop_length)
    _axis(op, axis)
    seq = x.shape[axis]
    if fl > seq:
        raise ValueError(f"{op}: frame_length ({fl}) must not exceed the length of x along axis "
                         f"{axis} ({seq})")
    nf = 1 + (seq - fl) // hop
    if axis == -1:
        idx = (np.arange(fl)[:, None] + hop * np.arange(nf)[None, :]).reshape(-1)
        out = oar.index_select(x, oar.to_tensor(idx, place=x.place), axis=-1)
        return out.reshape(list(x.shape[:-1]) + [fl, nf])
    idx = (hop * np.arange(nf)[:, None] + np.arange(fl)[None, :]).reshape(-1)
    out = oar.index_select(x, oar.to_tensor(idx, place=x.place), axis=0)
    return out.reshape([nf, fl] + list(x.shape[1:]))


def overlap_add(x, hop_length, axis=-1, name=None):
    """Sums overlapping frames back into a signal (the inverse layout of frame): axis=-1:
    [..., frame_length, num_frames] -> [..., (num_frames - 1) * hop_length + frame_length];
    axis=0: [num_frames, frame_length, ...] -> [seq, ...]."""
    oar = _oar()
    op = "overlap_add"
    _check_x(op, x, 2)
    hop = _pos_int(op, "hop_length", hop_length)
    _axis(op, axis)
    if axis == -1:
        fl, nf = x.shape[-2], x.shape[-1]
        lead = list(x.shape[:-2])
        idx = (np.arange(fl)[:, None] + hop * np.arange(nf)[None, :]).reshape(-1)
        vals = x.reshape(lead + [fl * nf])
        seq = (nf - 1) * hop + fl if nf else 0
        out = _full_on(x.place, lead + [seq], 0.0, x.dtype)
        return oar.index_add(out, oar.to_tensor(idx, place=x.place), -1, vals)
    nf, fl = x.shape[0], x.shape[1]
    rest = list(x.shape[2:])
    idx = (hop * np.arange(nf)[:, None] + np.arange(fl)[None, :]).reshape(-1)
    seq = (nf - 1) * hop + fl if nf else 0
    out = _full_on(x.place, [seq] + rest, 0.0, x.dtype)
    return oar.index_add(out, oar.to_tensor(idx, place=x.place), 0, x.reshape([nf * fl] + rest))


def _window(op, window, win_length, n_fft, dtype, place):
    """The window padded to n_fft; made on `place` (the signal's) when window is None."""
    oar = _oar()
    real = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
    if window is None:
        w = _full_on(place, [win_length], 1.0, real)
    else:
        if not isinstance(window, oar.Tensor) or list(window.shape) != [win_length]:
            raise ValueError(f"{op}: window must be a 1-D Tensor of win_length {win_length}, got "
                             f"{getattr(window, 'shape', window)!r}")
        w = window
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        w = oar.concat([_full_on(w.place, [left], 0.0, w.dtype), w,
                        _full_on(w.place, [n_fft - win_length - left], 0.0, w.dtype)])
    return w


def _lengths(op, n_fft, hop_length, win_length):
    n_fft = _pos_int(op, "n_fft", n_fft)
    hop = n_fft // 4 if hop_length is None else _pos_int(op, "hop_length", hop_length)
    win = n_fft if win_length is None else _pos_int(op, "win_length", win_length)
    if hop <= 0:
        raise ValueError(f"{op}: hop_length must be positive, got {hop} (n_fft // 4)")
    if win > n_fft:
        raise ValueError(f"{op}: win_length ({win}) must not exceed n_fft ({n_fft})")
    return n_fft, hop, win


def stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=True, name=None):
    """Short-time Fourier transform (Paddle's paddle.signal.stft): x [T] or [B, T] (real or
    complex) -> [(B,) n_fft // 2 + 1 (onesided) or n_fft, num_frames] complex. center pads
    n_fft // 2 on both sides (pad_mode 'reflect' or 'constant'); normalized scales by
    1 / sqrt(n_fft)."""
    oar = _oar()
    op = "stft"
    _check_x(op, x)
    if len(x.shape) > 2:
        raise ValueError(f"{op}: x must be 1-D or 2-D, got shape {list(x.shape)}")
    n_fft, hop, win = _lengths(op, n_fft, hop_length, win_length)
    dt = str(x.dtype).replace("paddle.", "")
    is_complex = dt.startswith("complex")
    if is_complex and onesided:
        raise ValueError(f"{op}: onesided must be False for complex input ({dt})")
    if dt not in ("float32", "float64", "complex64", "complex128"):
        x = x.astype("float32")
        dt = "float32"
    squeeze = len(x.shape) == 1
    if squeeze:
        x = x.unsqueeze(0)
    if center:
        if pad_mode not in ("reflect", "constant"):
            raise ValueError(f"{op}: pad_mode must be 'reflect' or 'constant', got {pad_mode!r}")
        p, t = n_fft // 2, x.shape[-1]
        if pad_mode == "reflect":
            if p >= t:
                raise ValueError(f"{op}: reflect padding of {p} needs more than {t} samples")
            idx = np.concatenate([np.arange(p, 0, -1), np.arange(t), np.arange(t - 2, t - 2 - p, -1)])
            x = oar.index_select(x, oar.to_tensor(idx, place=x.place), axis=-1)
        else:
            z = _full_on(x.place, [x.shape[0], p], 0.0, x.dtype)
            x = oar.concat([z, x, z], axis=-1)
    if x.shape[-1] < n_fft:
        raise ValueError(f"{op}: n_fft ({n_fft}) exceeds the (padded) signal length "
                         f"{x.shape[-1]}")
    frames = frame(x, n_fft, hop, axis=-1)  # [B, n_fft, num_frames]
    frames = frames * _window(op, window, win, n_fft, dt, x.place).unsqueeze(-1)
    norm = "ortho" if normalized else "backward"
    if onesided:
        out = oar.fft.rfft(frames, axis=-2, norm=norm)
    else:
        out = oar.fft.fft(frames, axis=-2, norm=norm)
    return out.squeeze(0) if squeeze else out


def istft(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=True, length=None, return_complex=False, name=None):
    """Inverse short-time Fourier transform (Paddle's paddle.signal.istft): x [(B,) n_fft //
    2 + 1 (onesided) or n_fft, num_frames] complex -> [(B,) T] by windowed overlap-add,
    divided by the summed squared window (which must not vanish: the NOLA condition)."""
    oar = _oar()
    op = "istft"
    _check_x(op, x, 2)
    if len(x.shape) > 3:
        raise ValueError(f"{op}: x must be 2-D or 3-D, got shape {list(x.shape)}")
    n_fft, hop, win = _lengths(op, n_fft, hop_length, win_length)
    dt = str(x.dtype).replace("paddle.", "")
    if not dt.startswith("complex"):
        raise TypeError(f"{op}: x must be complex (an stft result), got {dt}")
    if return_complex and onesided:
        raise ValueError(f"{op}: return_complex=True needs onesided=False")
    want = n_fft // 2 + 1 if onesided else n_fft
    if x.shape[-2] != want:
        raise ValueError(f"{op}: x must have {want} frequency bins for n_fft={n_fft} "
                         f"(onesided={onesided}), got {x.shape[-2]}")
    squeeze = len(x.shape) == 2
    if squeeze:
        x = x.unsqueeze(0)
    nf = x.shape[-1]
    norm = "ortho" if normalized else "backward"
    if onesided:
        frames = oar.fft.irfft(x, n=n_fft, axis=-2, norm=norm)
    else:
        frames = oar.fft.ifft(x, n=n_fft, axis=-2, norm=norm)
        if not return_complex:
            frames = oar.real(frames)
    w = _window(op, window, win, n_fft, dt, x.place)
    out = overlap_add(frames * w.unsqueeze(-1).astype(frames.dtype) if return_complex
                      else frames * w.unsqueeze(-1), hop, axis=-1)
    env = overlap_add((w * w).unsqueeze(-1).expand([n_fft, nf]), hop, axis=-1)
    start = n_fft // 2 if center else 0
    if length is None:
        end = out.shape[-1] - (n_fft // 2 if center else 0)
    else:
        length = _pos_int(op, "length", length)
        end = start + length
        if end > out.shape[-1]:
            extra = end - out.shape[-1]
            out = oar.concat([out, _full_on(out.place, [out.shape[0], extra], 0.0, out.dtype)], axis=-1)
            env = oar.concat([env, _full_on(env.place, [extra], 1.0, env.dtype)])
    out, env = out[:, start:end], env[start:end]
    if env.size and float(env.abs().min()) < 1e-11:
        raise ValueError(f"{op}: the window's squared overlap-add vanishes somewhere (the NOLA "
                         f"condition fails for n_fft={n_fft}, hop_length={hop}, "
                         f"win_length={win})")
    out = out / env.astype(out.dtype)
    return out.squeeze(0) if squeeze else out
