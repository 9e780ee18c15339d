"""Fractional max pooling (Graham, 2015): fractional_max_pool2d/3d, composed of index_select,
argmax and take_along_axis so the gradient reaches each window's maximum only.

Windows along one dimension of size n into `out` outputs, for the random u in (0, 1)
(float32 arithmetic, as Paddle's kernel):
- without kernel_size (disjoint): alpha = n / out, u scaled into the range keeping every
  window non-empty (u * min((n // out + 2) / alpha - 1, (n + 1 - n // out) / alpha - (out - 1))),
  g(i) = ceil(alpha * (i + u) - 1); window i is [g(i) - g(0), g(i + 1) - g(0)), the last
  ending at n;
- with kernel_size k (overlapping): alpha = (n - k) / (out - 1), start(i) =
  floor((i + u) * alpha) - floor(u * alpha), the last window starting at n - k; each is k
  long. (Paddle 3.3.1's kernel can leave the last window past the input there and return
  -inf with mask -1; Oar keeps it inside, the rule of the paper and of PyTorch.)
Where alpha * (i + u) - 1 is (nearly) an exact integer, float rounding decides the window and
a window edge can differ from Paddle's by one: over input sizes 2..15, every output size and
u in {0.1, 0.3, 0.5, 0.77, 0.9}, 588 of 595 disjoint sequences are Paddle's exactly."""
import math
import numbers

import numpy as np

from .._C import Tensor

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d"]

_f32 = np.float32


def _windows(n, out, k, u):
    """[(start, end)] of the `out` windows over a dimension of size n."""
    if k:
        if out == 1:
            starts = [0]
        else:
            alpha = _f32(n - k) / _f32(out - 1)
            first = math.floor(_f32(u) * alpha)
            starts = [math.floor(_f32((_f32(i) + _f32(u)) * alpha)) - first for i in range(out - 1)]
            starts.append(n - k)
        return [(s, s + k) for s in starts]
    alpha = _f32(n) / _f32(out)
    base = n // out
    u_max = min(_f32(base + 2) / alpha - _f32(1), _f32(n + 1 - base) / alpha - _f32(out - 1))
    u = _f32(_f32(u) * u_max)

    def g(i):  # alpha * (i + u) - 1, i + u rounded to float32, the rest in double
        return math.ceil(float(alpha) * float(_f32(_f32(i) + u)) - 1.0)
    g0 = g(0)
    return [(max(g(i) - g0, 0), min(g(i + 1) - g0, n)) for i in range(out)]


def _index(windows):
    """[out, kmax] input positions of each window, short windows padded with their last
    position (a repeat changes neither the maximum nor its first position)."""
    bounds = np.array(windows, np.int64).reshape(-1, 2)
    kmax = int((bounds[:, 1] - bounds[:, 0]).max())
    return np.minimum(bounds[:, :1] + np.arange(kmax, dtype=np.int64), bounds[:, 1:] - 1)


def _sizes(v, nd, op, arg, spatial, allow_none):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        v = [int(v)] * nd
    elif isinstance(v, (list, tuple)) and len(v) == nd:
        v = [spatial[i] if (e is None and allow_none) else e for i, e in enumerate(v)]
    else:
        raise ValueError(f"{op}: {arg} must be an int or a list of {nd} ints, got {v!r}")
    if any(isinstance(e, bool) or not isinstance(e, numbers.Integral) or e < 1 for e in v):
        raise ValueError(f"{op}: {arg} must hold ints >= 1, got {v!r}")
    return [int(e) for e in v]


def _fractional_max_pool(x, output_size, kernel_size, random_u, return_mask, nd, op):
    import oar
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a Tensor, got {type(x).__name__}")
    if x.ndim != nd + 2:
        raise ValueError(f"{op}: x must be a {nd + 2}-D tensor, got shape {list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must be a float tensor, got {x.dtype.name}")
    spatial = list(x.shape[2:])
    out = _sizes(output_size, nd, op, "output_size", spatial, True)
    k = [0] * nd if kernel_size is None else _sizes(kernel_size, nd, op, "kernel_size", spatial,
                                                    False)
    for d in range(nd):
        need = out[d] + max(k[d] - 1, 0)
        if spatial[d] < need:
            what = f"output_size {out[d]}" + (f" + kernel_size {k[d]} - 1" if k[d] else "")
            raise ValueError(f"{op}: input size {spatial[d]} of spatial dimension {d} is less "
                             f"than {what} = {need}")
    if random_u is None:
        u = 0.0
        while u == 0.0:  # a draw in (0, 1) from oar's generator (paddle.seed fixes it)
            u = float(oar.uniform([1], "float32", 0.0, 1.0))
    else:
        if isinstance(random_u, bool) or not isinstance(random_u, numbers.Real) or \
                not 0 < random_u < 1:
            raise ValueError(f"{op}: random_u must be a float in (0, 1), got {random_u!r}")
        u = float(random_u)
    n, c = x.shape[0], x.shape[1]
    wins = [_windows(spatial[d], out[d], k[d], u) for d in range(nd)]
    gathered = n * c * int(np.prod([len(w) * max(e - s for s, e in w) for w in wins],
                                   dtype=np.float64))
    if gathered > 2**31:  # the windows are gathered into one tensor before the max
        raise ValueError(f"{op}: the windows of x (shape {list(x.shape)}) hold {gathered} "
                         f"elements in all, more than 2**31; use smaller windows "
                         f"(kernel_size) or pool in parts")
    idx = [_index(w) for w in wins]
    # gather every window: [N, C, o1, k1, o2, k2, ...]
    y = x
    for d in range(nd):
        axis = 2 + 2 * d
        o, kk = idx[d].shape
        y = y.index_select(oar.to_tensor(idx[d].reshape(-1), place=x.place), axis=axis)
        y = y.reshape(list(y.shape[:axis]) + [o, kk] + list(y.shape[axis + 1:]))
    perm = [0, 1] + [2 + 2 * d for d in range(nd)] + [3 + 2 * d for d in range(nd)]
    window = int(np.prod([i.shape[1] for i in idx]))
    y = y.transpose(perm).reshape([n, c] + out + [window])
    arg = y.argmax(axis=-1, keepdim=True)
    value = oar.take_along_axis(y, arg, axis=-1).squeeze(-1)
    if not return_mask:
        return value
    # the flat position in the input's spatial plane of each window element, [o..., k...]
    flat = np.zeros([1] * (2 * nd), np.int64)
    for d in range(nd):
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = idx[d].shape
        flat = flat + idx[d].reshape(shape) * int(np.prod(spatial[d + 1:], dtype=np.int64))
    flat = flat.reshape(out + [-1])
    pos_t = oar.to_tensor(flat, place=x.place).reshape([1, 1] + out + [-1])
    pos_t = pos_t.expand([n, c] + out + [flat.shape[-1]])
    mask = oar.take_along_axis(pos_t, arg, axis=-1).squeeze(-1).astype("int32")
    return value, mask


def fractional_max_pool2d(x, output_size, kernel_size=None, random_u=None, return_mask=False,
                          name=None):
    """Fractional max pooling over [N, C, H, W] into output_size (int or [H, W], None keeping
    the input's size); kernel_size None: disjoint windows; random_u in (0, 1), None draws one
    from oar's generator; return_mask: also each maximum's index in the input's H*W plane."""
    return _fractional_max_pool(x, output_size, kernel_size, random_u, return_mask, 2,
                                "fractional_max_pool2d")


def fractional_max_pool3d(x, output_size, kernel_size=None, random_u=None, return_mask=False,
                          name=None):
    """Fractional max pooling over [N, C, D, H, W] (see fractional_max_pool2d); the mask
    indexes the input's D*H*W volume."""
    return _fractional_max_pool(x, output_size, kernel_size, random_u, return_mask, 3,
                                "fractional_max_pool3d")
