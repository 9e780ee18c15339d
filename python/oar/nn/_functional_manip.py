"""oar.nn.functional: padding, resampling and embedding functionals (Paddle's
signatures): pad, interpolate/upsample, pixel_shuffle/unshuffle, grid_sample,
affine_grid, unfold/fold, embedding, one_hot, cosine_similarity, pairwise_distance,
normalize. Kernels: pad_nd, interp, grid_sample, im2col/col2im ops in
paddle_core/ops/manipulation.yaml; NHWC layouts are transposed views around them."""
import math
import numbers

import numpy as np

from .. import _C, _trace_state
from .._C import Tensor

_ops = _C.ops

__all__ = ["pad", "zeropad2d", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle",
           "grid_sample", "affine_grid", "unfold", "fold", "embedding", "one_hot",
           "cosine_similarity", "pairwise_distance", "normalize"]

_CHANNEL_LAST = {"NLC", "NHWC", "NDHWC"}
_FORMATS = {3: ("NCL", "NLC"), 4: ("NCHW", "NHWC"), 5: ("NCDHW", "NDHWC")}


def _int_list(v, op, arg):
    if isinstance(v, Tensor):
        v = v.numpy().reshape(-1).tolist()
    if isinstance(v, numbers.Integral):
        return [int(v)]
    try:
        return [int(i.item() if isinstance(i, Tensor) else i) for i in v]
    except TypeError:
        raise TypeError(f"{op}: {arg} must be an int or a list of ints, got {v!r}") from None


def _check_format(x, data_format, op):
    if x.ndim not in _FORMATS:
        raise ValueError(f"{op}: x must be 3-D, 4-D or 5-D, got shape {list(x.shape)}")
    if data_format is None:
        return _FORMATS[x.ndim][0]
    data_format = {"NCW": "NCL", "NWC": "NLC"}.get(data_format, data_format)  # Paddle's 3-D names
    if data_format not in _FORMATS[x.ndim]:
        raise ValueError(f"{op}: data_format must be one of {_FORMATS[x.ndim]} for a {x.ndim}-D "
                         f"input, got '{data_format}'")
    return data_format


def _to_channel_first(x):
    return _ops.transpose(x, [0, x.ndim - 1] + list(range(1, x.ndim - 1)))


def _to_channel_last(x):
    return _ops.transpose(x, [0] + list(range(2, x.ndim)) + [1])


# ---- pad
def pad(x, pad, mode="constant", value=0.0, data_format=None, pad_from_left_axis=True, name=None):
    """Pads x. With mode 'constant' and len(pad) == 2 * x.ndim, pad lists (before, after) per
    dim from the first dim (from the last when pad_from_left_axis is False); otherwise pad
    holds (left, right[, top, bottom[, front, back]]) for the spatial dims, last dim first."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', "
                         f"got '{mode}'")
    p = _int_list(pad, "pad", "pad")
    r = x.ndim
    pads = [0] * (2 * r)
    if mode == "constant" and len(p) == 2 * r:
        for d in range(r):
            src = d if pad_from_left_axis else r - 1 - d
            pads[2 * d], pads[2 * d + 1] = p[2 * src], p[2 * src + 1]
    elif mode == "constant" and len(p) % 2 == 0 and 2 * max(r - 2, 0) < len(p) < 2 * r:
        # more pairs than spatial dims: the k-th pair pads the k-th dim from the last (Paddle)
        for k in range(len(p) // 2):
            d = r - 1 - k
            pads[2 * d], pads[2 * d + 1] = p[2 * k], p[2 * k + 1]
    else:
        fmt = _check_format(x, data_format, "pad")
        ns = r - 2
        if len(p) != 2 * ns and not (mode == "constant" and len(p) % 2 == 0 and len(p) < 2 * ns):
            raise ValueError(f"pad: pad {p} must have {2 * ns} entries for a {r}-D input in mode "
                             f"'{mode}'" + (f" (or {2 * r} to pad every dim)" if mode == "constant" else ""))
        spatial = list(range(1, r - 1)) if fmt in _CHANNEL_LAST else list(range(2, r))
        for k in range(len(p) // 2):  # k-th pair pads the k-th spatial dim from the end
            d = spatial[len(spatial) - 1 - k]
            pads[2 * d], pads[2 * d + 1] = p[2 * k], p[2 * k + 1]
    if any(v < 0 for v in pads):
        raise ValueError(f"pad: paddings must be >= 0, got {p}")
    return _ops._pad_nd(x, pads, mode, float(value))


def zeropad2d(x, padding, data_format="NCHW", name=None):
    return pad(x, _int_list(padding, "zeropad2d", "padding") * (4 if isinstance(padding, int) else 1),
               "constant", 0.0, data_format)


# ---- interpolate
_MODES = {"nearest", "linear", "bilinear", "trilinear", "bicubic", "area"}


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False,
                align_mode=0, data_format=None, name=None):
    """Resizes the spatial dims of x to `size` or by `scale_factor` (exactly one given)."""
    mode = mode.lower()
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode must be one of {sorted(_MODES)}, got '{mode}'")
    fmt = _check_format(x, data_format, "interpolate")
    ns = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: exactly one of size and scale_factor must be given, got "
                         f"size={size}, scale_factor={scale_factor}")
    if align_corners and mode in ("nearest", "area"):
        raise ValueError(f"interpolate: align_corners=True is not supported with mode '{mode}'")
    cl = fmt in _CHANNEL_LAST
    spatial = x.shape[1:-1] if cl else x.shape[2:]
    scales = []
    if size is not None:
        out = _int_list(size, "interpolate", "size")
        if len(out) == 1 and ns > 1:
            out = out * ns
        if len(out) != ns:
            raise ValueError(f"interpolate: size {out} must have {ns} entries for a {x.ndim}-D input")
    else:
        if isinstance(scale_factor, Tensor):
            scale_factor = scale_factor.numpy().reshape(-1).tolist()
        sc = [float(scale_factor)] * ns if isinstance(scale_factor, numbers.Number) else \
            [float(s) for s in scale_factor]
        if len(sc) != ns or any(s <= 0 for s in sc):
            raise ValueError(f"interpolate: scale_factor {scale_factor} must be positive, one per "
                             f"spatial dim ({ns})")
        out = [int(math.floor(n * s)) for n, s in zip(spatial, sc)]
        scales = sc
    if any(o <= 0 for o in out):
        raise ValueError(f"interpolate: the output size {out} must be positive (input spatial "
                         f"size {list(spatial)})")
    xc = _to_channel_first(x) if cl else x
    if mode == "area":  # Paddle's area interpolation is adaptive average pooling to `out`
        from . import _functional_cnn as cnn
        pool = {1: cnn.adaptive_avg_pool1d, 2: cnn.adaptive_avg_pool2d, 3: cnn.adaptive_avg_pool3d}[ns]
        y = pool(xc, out)
    else:
        y = _ops._interp(xc, out, scales, mode, bool(align_corners), int(align_mode))
    return _to_channel_last(y) if cl else y


def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
             data_format=None, name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


# ---- pixel shuffle
def pixel_shuffle(x, upscale_factor, data_format="NCHW", name=None):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r] (NHWC likewise)."""
    if x.ndim != 4:
        raise ValueError(f"pixel_shuffle: x must be 4-D, got shape {list(x.shape)}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"pixel_shuffle: data_format must be 'NCHW' or 'NHWC', got '{data_format}'")
    r = int(upscale_factor)
    if r <= 0:
        raise ValueError(f"pixel_shuffle: upscale_factor must be positive, got {upscale_factor}")
    if data_format == "NCHW":
        n, c, h, w = x.shape
    else:
        n, h, w, c = x.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the channel count ({c}) must be divisible by "
                         f"upscale_factor**2 ({r * r})")
    oc = c // (r * r)
    if data_format == "NCHW":
        t = _ops.reshape(x, [n, oc, r, r, h, w])
        t = _ops.transpose(t, [0, 1, 4, 2, 5, 3])
        return _ops.reshape(t, [n, oc, h * r, w * r])
    t = _ops.reshape(x, [n, h, w, oc, r, r])
    t = _ops.transpose(t, [0, 1, 4, 2, 5, 3])
    return _ops.reshape(t, [n, h * r, w * r, oc])


def pixel_unshuffle(x, downscale_factor, data_format="NCHW", name=None):
    """[N, C, H*r, W*r] -> [N, C*r*r, H, W] (NHWC likewise)."""
    if x.ndim != 4:
        raise ValueError(f"pixel_unshuffle: x must be 4-D, got shape {list(x.shape)}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"pixel_unshuffle: data_format must be 'NCHW' or 'NHWC', got "
                         f"'{data_format}'")
    r = int(downscale_factor)
    if r <= 0:
        raise ValueError(f"pixel_unshuffle: downscale_factor must be positive, got {downscale_factor}")
    if data_format == "NCHW":
        n, c, h, w = x.shape
    else:
        n, h, w, c = x.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height {h} and width {w} must be divisible by "
                         f"downscale_factor ({r})")
    if data_format == "NCHW":
        t = _ops.reshape(x, [n, c, h // r, r, w // r, r])
        t = _ops.transpose(t, [0, 1, 3, 5, 2, 4])
        return _ops.reshape(t, [n, c * r * r, h // r, w // r])
    t = _ops.reshape(x, [n, h // r, r, w // r, r, c])
    t = _ops.transpose(t, [0, 1, 3, 5, 2, 4])
    return _ops.reshape(t, [n, h // r, w // r, c * r * r])


# ---- sampling grids
def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True, name=None):
    """Samples x [N, C, H, W] at grid [N, Ho, Wo, 2] (x, y in [-1, 1])."""
    return _ops._grid_sample(x, grid, mode, padding_mode, bool(align_corners))


def _linspace_grid(n, align_corners, dtype):
    if align_corners:
        v = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(n)
    else:
        v = (2.0 * np.arange(n) + 1.0) / n - 1.0
    return v


def affine_grid(theta, out_shape, align_corners=True, name=None):
    """Sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of the affine maps theta [N, 2, 3]
    (or [N, 3, 4]) for an output of out_shape [N, C, H, W] (or [N, C, D, H, W])."""
    shape = _int_list(out_shape, "affine_grid", "out_shape")
    if theta.ndim != 3 or theta.shape[1:] not in ([2, 3], [3, 4]):
        raise ValueError(f"affine_grid: theta must have shape [N, 2, 3] or [N, 3, 4], got "
                         f"{list(theta.shape)}")
    nd = theta.shape[1]
    if len(shape) != nd + 2 or shape[0] != theta.shape[0]:
        raise ValueError(f"affine_grid: out_shape {shape} must be [N, C, " +
                         ("H, W]" if nd == 2 else "D, H, W]") + f" with N = {theta.shape[0]}")
    sizes = shape[2:]
    axes = [_linspace_grid(s, align_corners, theta.dtype) for s in sizes]  # D?, H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [mesh[i].reshape(-1) for i in range(nd)][::-1]  # x (W) first
    base = np.stack(coords + [np.ones_like(coords[0])], axis=1)  # [P, nd + 1]
    base_t = _C.to_tensor(base, theta.dtype, theta.place)
    grid = _ops.matmul(base_t, theta, False, True)  # [N, P, nd]
    return _ops.reshape(grid, [shape[0]] + sizes + [nd])


# ---- im2col
def _pair(v, op, arg, n=2):
    vals = _int_list(v, op, arg)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise ValueError(f"{op}: {arg} must be an int or {n} ints, got {v}")
    return vals


def _paddings4(paddings, op):
    p = _int_list(paddings, op, "paddings")
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    if len(p) == 4:
        return p
    raise ValueError(f"{op}: paddings must be an int, 2 or 4 ints, got {paddings}")


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """Sliding blocks of x [N, C, H, W] as columns [N, C*kh*kw, L] (im2col)."""
    return _ops._im2col(x, _pair(kernel_sizes, "unfold", "kernel_sizes"),
                        _pair(strides, "unfold", "strides"), _paddings4(paddings, "unfold"),
                        _pair(dilations, "unfold", "dilations"))


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """Sums columns [N, C*kh*kw, L] back into images [N, C, H, W] (col2im)."""
    return _ops._col2im(x, _pair(output_sizes, "fold", "output_sizes"),
                        _pair(kernel_sizes, "fold", "kernel_sizes"), _pair(strides, "fold", "strides"),
                        _paddings4(paddings, "fold"), _pair(dilations, "fold", "dilations"))


# ---- embedding and friends
def _check_index_range(x, n, op, arg):
    if x.dtype.name not in ("int32", "int64"):
        raise TypeError(f"{op}: {arg} must be an int32 or int64 tensor, got {x.dtype.name}")
    tracer = _trace_state.tracer()
    if x.size and not (tracer is not None and tracer.is_traced(x)):  # a traced x has no values yet
        r = _C._int_min_max(x)  # one pass in C++ on a contiguous CPU tensor
        if r is None:
            v = x._numpy_view(writable=False)  # no copy (Note [numpy() copies])
            r = int(v.min()), int(v.max())
        lo, hi = r
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(f"{op}: {arg} value {bad} is out of range [0, {n})")


def embedding(x, weight, padding_idx=None, max_norm=None, norm_type=2.0, sparse=False, name=None):
    """Rows of weight [num_embeddings, dim] at the ids x; rows at padding_idx are zero and
    get no gradient."""
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D, got shape {list(weight.shape)}")
    n = weight.shape[0]
    if _trace_state.active:
        # The ids are data of the converted program: gather checks them when it runs.
        if x.dtype.name not in ("int32", "int64"):
            raise TypeError(f"embedding: x must be an int32 or int64 tensor, got {x.dtype.name}")
    else:
        _check_index_range(x, n, "embedding", "x")
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError(f"embedding: padding_idx {padding_idx} is out of range [{-n}, {n})")
        padding_idx = padding_idx % n
    out = _ops.gather(weight, x, 0)  # ids of any rank: [*ids.shape, dim]
    if padding_idx is not None:
        pad = _ops.full([], padding_idx, x.dtype, x.place)
        keep = _ops.cast(_ops.not_equal(x, pad), weight.dtype)
        out = out * _ops.unsqueeze(keep, [-1])
    return out


def one_hot(x, num_classes, name=None):
    """float32 one-hot vectors [*, num_classes] of the int ids x."""
    if not isinstance(num_classes, numbers.Integral) or num_classes <= 0:
        raise ValueError(f"one_hot: num_classes must be a positive int, got {num_classes}")
    _check_index_range(x, num_classes, "one_hot", "x")
    try:
        classes = _ops.arange(0, num_classes, 1, x.dtype, x.place)
    except MemoryError as e:  # name the op the user called, not its helper
        raise MemoryError(f"one_hot: num_classes={num_classes}: {e}") from None
    return _ops.cast(_ops.equal(_ops.unsqueeze(x, [-1]), classes), _C.DataType.float32)


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """sum(x1 * x2) / sqrt(max(|x1|^2 |x2|^2, eps^2)) along axis (inputs broadcast)."""
    w12 = _ops.sum(x1 * x2, [axis], None, False)
    w1 = _ops.sum(x1 * x1, [axis], None, False)
    w2 = _ops.sum(x2 * x2, [axis], None, False)
    return w12 / _ops.sqrt(_ops.clip(w1 * w2, float(eps) ** 2, 3.4e38))


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    """p-norm of x - y + epsilon along the last dim."""
    from .. import linalg
    if x.ndim not in (1, 2) or y.ndim not in (1, 2):
        raise ValueError(f"pairwise_distance: x and y must be 1-D or 2-D, got shapes {list(x.shape)} "
                         f"and {list(y.shape)}")
    return linalg.vector_norm(x - y + epsilon, p, axis=-1, keepdim=keepdim)


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    """x / max(||x||_p along axis, epsilon)."""
    from .. import linalg
    nrm = linalg.vector_norm(x, float(p), axis=axis, keepdim=True)
    return x / _ops.clip(nrm, float(epsilon), 3.4e38)


from ._errors import named_errors as _named_errors  # noqa: E402

cosine_similarity = _named_errors("cosine_similarity")(cosine_similarity)
pairwise_distance = _named_errors("pairwise_distance")(pairwise_distance)
normalize = _named_errors("normalize")(normalize)
upsample = _named_errors("upsample")(upsample)
