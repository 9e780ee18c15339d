"""RoI ops of paddle.vision.ops: roi_align, roi_pool, psroi_pool and their layers.

Each is a composition: the sampling geometry (which input pixels feed which output bin, with
which weight) depends only on the boxes, which get no gradient in Paddle, so it is computed in
NumPy; the values are then one gather of the input plus a weighted sum (align), a masked max
(pool) or a masked mean (psroi), so the input's gradient comes from the gather's backward.
Every bin reads at most Kh rows x Kw columns (the largest bin's support), so the gather is
[R, ph, pw, Kh, Kw, C] - proportional to the boxes' area, never to H*W per box."""
import math

import numpy as np

from .. import nn
from .._creation import _full_on

__all__ = ["roi_align", "roi_pool", "psroi_pool", "RoIAlign", "RoIPool", "PSRoIPool"]

_FLOATS = ("float32", "float64")
_CHUNK = 1 << 22  # gathered elements per step (bounds the temporary memory)


def _oar():
    import oar

    return oar


def _dtype(t):
    return str(t.dtype).replace("paddle.", "")


def _check_tensor(op, name, t, ndim=None, dtypes=None):
    oar = _oar()
    if not isinstance(t, oar.Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if ndim is not None and len(t.shape) != ndim:
        raise ValueError(f"{op}: {name} must be a {ndim}-D Tensor, got shape {list(t.shape)}")
    if dtypes is not None and _dtype(t) not in dtypes:
        raise TypeError(f"{op}: {name} must have dtype in {list(dtypes)}, got {_dtype(t)}")


def _pair(op, name, v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v), int(v))
    elif isinstance(v, (list, tuple)) and len(v) == 2 and all(
        isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v
    ):
        v = (int(v[0]), int(v[1]))
    else:
        raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {v!r}")
    if v[0] <= 0 or v[1] <= 0:
        raise ValueError(f"{op}: {name} must be positive, got {list(v)}")
    return v


def _check_scale(op, spatial_scale):
    if isinstance(spatial_scale, bool) or not isinstance(spatial_scale, (int, float, np.floating)):
        raise TypeError(f"{op}: spatial_scale must be a float, got {spatial_scale!r}")
    if not math.isfinite(spatial_scale) or spatial_scale <= 0:
        raise ValueError(f"{op}: spatial_scale must be positive and finite, got {spatial_scale}")
    return float(spatial_scale)


def check_rois(op, x, boxes, boxes_num):
    """Validates (x [N,C,H,W], boxes [R,4], boxes_num [N]) and returns (boxes as float64
    NumPy, the image index of every box)."""
    _check_tensor(op, "x", x, 4, _FLOATS)
    _check_tensor(op, "boxes", boxes, 2, _FLOATS)
    if boxes.shape[1] != 4:
        raise ValueError(f"{op}: boxes must have shape [num_boxes, 4], got {list(boxes.shape)}")
    if _dtype(boxes) != _dtype(x):
        raise TypeError(f"{op}: boxes dtype {_dtype(boxes)} must equal x's dtype {_dtype(x)}")
    n, r = x.shape[0], boxes.shape[0]
    if boxes_num is None:
        if n != 1:
            raise ValueError(f"{op}: boxes_num is required when x holds {n} images (batch != 1)")
        counts = np.array([r], np.int64)
    else:
        _check_tensor(op, "boxes_num", boxes_num, 1, ("int32", "int64"))
        counts = boxes_num.numpy().astype(np.int64)
        if counts.shape[0] != n:
            raise ValueError(f"{op}: boxes_num must have one count per image ({n}), got shape "
                             f"{list(boxes_num.shape)}")
        if (counts < 0).any() or counts.sum() != r:
            raise ValueError(f"{op}: boxes_num must be non-negative and sum to the number of "
                             f"boxes {r}, got {counts.tolist()}")
    b = boxes.numpy().astype(np.float64)
    if not np.isfinite(b).all():
        raise ValueError(f"{op}: boxes must be finite")
    return b, np.repeat(np.arange(n, dtype=np.int64), counts)


def _geometry_type(x):
    return np.float32 if _dtype(x) == "float32" else np.float64


def _cround(v):
    """C's round(): halves away from zero (NumPy rounds halves to even)."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _pack(weights):
    """Dense per-bin weights [R, P, L] -> (indices, weights) [R, P, K] of the K = max nonzero
    count columns of each row (padding: index 0, weight 0)."""
    nz = weights != 0
    k = max(int(nz.sum(-1).max()) if nz.size else 0, 1)
    order = np.argsort(~nz, axis=-1, kind="stable")[..., :k]
    w = np.take_along_axis(weights, order, -1)
    return order.astype(np.int64), w


def _gather_bins(table, base, ridx, cidx, width, reduce, rw=None, cw=None, mask=None):
    """table [T, C]; element (r, i, j, a, b) reads table row base[r] + ridx[r,i,a]*width +
    cidx[r,j,b] (base may also be [R, ph, pw]). reduce: 'sum' (weights rw x cw, one batched
    matmul), 'max' or 'mean' (over mask; masked-out elements read an appended row of -inf or
    0, so no select is needed). Returns [R, C, ph, pw]."""
    oar = _oar()
    r, ph, kh = ridx.shape
    pw, kw = cidx.shape[1], cidx.shape[2]
    t, c = table.shape
    dt, place = _dtype(table), table.place  # index and weight tensors go beside the table
    if reduce != "sum":
        fill = float("-inf") if reduce == "max" else 0.0
        table = oar.concat([table, _full_on(place, [1, c], fill, dt)])
    base = base.reshape(r, ph if base.ndim > 1 else 1, pw if base.ndim > 1 else 1, 1, 1)
    k = kh * kw
    per = max(ph * pw * k * c, 1)
    step = max(1, _CHUNK // per)
    outs = []
    for s in range(0, r, step):
        e = min(r, s + step)
        idx = base[s:e] + ridx[s:e, :, None, :, None] * width + cidx[s:e, None, :, None, :]
        if mask is not None:
            idx = np.where(mask[s:e].transpose(0, 1, 3, 2, 4), idx, t)
        g = oar.gather(table, oar.to_tensor(idx.reshape(-1), place=place))
        if reduce == "sum":
            w = rw[s:e, :, None, :, None] * cw[s:e, None, :, None, :]
            w = oar.to_tensor(w.reshape((e - s) * ph * pw, 1, k).astype(dt), place=place)
            o = oar.matmul(w, g.reshape([(e - s) * ph * pw, k, c]))
        else:
            g = g.reshape([(e - s) * ph * pw, k, c])
            m = mask[s:e].transpose(0, 1, 3, 2, 4).reshape(-1, k)
            if reduce == "max":
                o = g.amax(axis=1)
                empty = oar.to_tensor(~m.any(axis=1)[:, None], place=place)
                o = oar.where(empty, _full_on(place, [1], 0.0, dt), o)
            else:
                area = m.sum(axis=1).astype(np.float64)
                inv = np.where(area > 0, 1.0 / np.maximum(area, 1), 0.0)
                o = g.sum(axis=1) * oar.to_tensor(inv[:, None].astype(dt), place=place)
        outs.append(o.reshape([e - s, ph, pw, c]))
    out = outs[0] if len(outs) == 1 else oar.concat(outs, axis=0)
    return out.transpose([0, 3, 1, 2])


def _empty(x, c, ph, pw):
    """The [0, c, ph, pw] result for no boxes, still connected to x for autograd."""
    return x[:0].reshape([0, c, ph, pw])


_MAX_SAMPLES = 1 << 26  # in-image bilinear samples per axis, over all boxes and bins


def _align_weights(start, bin_size, grid, n_out, size):
    """Dense sampling weights [R, n_out, size] along one axis: the sum over grid[r] samples
    per bin of Paddle's clamped bilinear interpolation (zero outside [-1, size]). Only the
    samples that can fall inside [-1, size] are enumerated (a ragged range per bin), so a huge
    box or sampling_ratio costs the image's size, not the box's."""
    r = start.shape[0]
    wts = np.zeros((r, n_out, size))
    if r == 0 or int(grid.max()) <= 0:
        return wts
    g = np.maximum(grid, 1).astype(np.float64)[:, None]
    origin = start[:, None] + np.arange(n_out)[None, :] * bin_size[:, None]  # [R, n_out]
    step = bin_size[:, None] / g
    with np.errstate(divide="ignore", invalid="ignore"):
        k1 = (-1.0 - origin) / step - 0.5
        k2 = (size - origin) / step - 0.5
    inside = (origin >= -1.0) & (origin <= size)
    # a widened range (rounding), then the exact test below; step == 0: all or nothing
    kmin = np.where(step == 0, np.where(inside, 0, 1), np.floor(np.fmin(k1, k2)) - 1)
    kmax = np.where(step == 0, np.where(inside, g - 1, 0), np.ceil(np.fmax(k1, k2)) + 1)
    kmin = np.clip(kmin, 0, None)
    kmax = np.minimum(kmax, g - 1)
    kmax = np.where(grid[:, None] > 0, kmax, -1)
    count = np.clip(kmax - kmin + 1, 0, None).astype(np.int64)
    total = int(count.sum())
    if total > _MAX_SAMPLES:
        raise ValueError(f"roi_align: {total} bilinear samples along one axis exceed the limit "
                         f"{_MAX_SAMPLES}; lower sampling_ratio (got grids up to "
                         f"{int(grid.max())} per bin)")
    flat = count.reshape(-1)
    rr = np.repeat(np.arange(r), n_out)
    oo = np.tile(np.arange(n_out), r)
    first = np.repeat(kmin.reshape(-1).astype(np.int64), flat)
    offs = np.arange(total) - np.repeat(np.cumsum(flat) - flat, flat)
    kk = first + offs
    rr, oo = np.repeat(rr, flat), np.repeat(oo, flat)
    pos = start[rr] + oo * bin_size[rr] + (kk + 0.5) * bin_size[rr] / g[rr, 0]
    live = (pos >= -1.0) & (pos <= size)
    rr, oo, pos = rr[live], oo[live], np.clip(pos[live], 0.0, None)
    low = np.floor(pos).astype(np.int64)
    top = low >= size - 1
    low = np.where(top, size - 1, low)
    high = np.where(top, size - 1, low + 1)
    frac = np.where(top, 0.0, pos - low)
    np.add.at(wts, (rr, oo, low), 1.0 - frac)
    np.add.at(wts, (rr, oo, high), frac)
    return wts


def roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1,
              aligned=True, name=None):
    """RoI Align (Paddle's paddle.vision.ops.roi_align): x [N, C, H, W], boxes [R, 4] as
    (x1, y1, x2, y2), boxes_num [N] -> [R, C, ph, pw], each bin the mean of bilinear samples
    (sampling_ratio per axis, or ceil(bin size) when <= 0); aligned shifts by half a pixel."""
    op = "roi_align"
    b, bidx = check_rois(op, x, boxes, boxes_num)
    ph, pw = _pair(op, "output_size", output_size)
    scale = _check_scale(op, spatial_scale)
    if isinstance(sampling_ratio, bool) or not isinstance(sampling_ratio, (int, np.integer)):
        raise TypeError(f"{op}: sampling_ratio must be an int, got {sampling_ratio!r}")
    n, c, h, w = x.shape
    if b.shape[0] == 0:
        return _empty(x, c, ph, pw)
    if h == 0 or w == 0:  # every sample falls outside an empty image
        return _full_on(x.place, [b.shape[0], c, ph, pw], 0.0, _dtype(x))
    b = b * scale - (0.5 if aligned else 0.0)
    rw, rh = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    if not aligned:
        rw, rh = np.maximum(rw, 1.0), np.maximum(rh, 1.0)
    bh, bw = rh / ph, rw / pw
    if sampling_ratio > 0:
        gh = gw = np.full(b.shape[0], int(sampling_ratio))
    else:
        gh, gw = np.ceil(bh).astype(np.int64), np.ceil(bw).astype(np.int64)
    gh, gw = np.maximum(gh, 0), np.maximum(gw, 0)
    count = np.maximum(gh * gw, 1).astype(np.float64)
    wy = _align_weights(b[:, 1], bh, gh, ph, h) / count[:, None, None]
    wx = _align_weights(b[:, 0], bw, gw, pw, w)
    ridx, rwt = _pack(wy)
    cidx, cwt = _pack(wx)
    table = x.transpose([0, 2, 3, 1]).reshape([n * h * w, c])
    return _gather_bins(table, bidx * h * w, ridx, cidx, w, "sum", rwt, cwt)


def _range_index(lo, hi):
    k = max(int((hi - lo).max()) if lo.size else 0, 1)
    a = np.arange(k)
    idx = lo[..., None] + a
    valid = idx < hi[..., None]
    return np.where(valid, idx, 0), valid


def _masked_pool(x_table, base, ylo, yhi, xlo, xhi, width, reduce):
    ridx, rv = _range_index(ylo, yhi)
    cidx, cv = _range_index(xlo, xhi)
    mask = rv[:, :, :, None, None] & cv[:, None, None, :, :]
    return _gather_bins(x_table, base, ridx, cidx, width, reduce, mask=mask)


def roi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """RoI max pooling (Paddle's paddle.vision.ops.roi_pool): box corners are rounded after
    scaling, each of the ph x pw bins takes the max of its pixels (0 for an empty bin)."""
    op = "roi_pool"
    b, bidx = check_rois(op, x, boxes, boxes_num)
    ph, pw = _pair(op, "output_size", output_size)
    scale = _check_scale(op, spatial_scale)
    n, c, h, w = x.shape
    if b.shape[0] == 0:
        return _empty(x, c, ph, pw)
    ft = _geometry_type(x)  # bin edges in x's precision, as Paddle's kernel computes them
    b = _cround(b.astype(ft) * ft(scale))
    rh = np.maximum(b[:, 3] - b[:, 1] + 1, 1)
    rw = np.maximum(b[:, 2] - b[:, 0] + 1, 1)

    # bin edges: floor/ceil of i * bin size, offset by the box corner, then clamped
    ylo = np.clip(np.floor(np.arange(ph, dtype=ft)[None] * (rh / ph)[:, None]) + b[:, 1:2], 0, h)
    yhi = np.clip(np.ceil(np.arange(1, ph + 1, dtype=ft)[None] * (rh / ph)[:, None]) + b[:, 1:2], 0, h)
    xlo = np.clip(np.floor(np.arange(pw, dtype=ft)[None] * (rw / pw)[:, None]) + b[:, 0:1], 0, w)
    xhi = np.clip(np.ceil(np.arange(1, pw + 1, dtype=ft)[None] * (rw / pw)[:, None]) + b[:, 0:1], 0, w)
    table = x.transpose([0, 2, 3, 1]).reshape([n * h * w, c])
    return _masked_pool(table, bidx * h * w, ylo.astype(np.int64), yhi.astype(np.int64),
                        xlo.astype(np.int64), xhi.astype(np.int64), w, "max")


def psroi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """Position-sensitive RoI average pooling (Paddle's paddle.vision.ops.psroi_pool): x has
    C = out_channels * ph * pw channels; bin (i, j) of output channel k averages input channel
    (k * ph + i) * pw + j over its pixels -> [R, out_channels, ph, pw]."""
    op = "psroi_pool"
    b, bidx = check_rois(op, x, boxes, boxes_num)
    ph, pw = _pair(op, "output_size", output_size)
    scale = _check_scale(op, spatial_scale)
    n, c, h, w = x.shape
    if c % (ph * pw):
        raise ValueError(f"{op}: the channels of x ({c}) must be a multiple of output_size's "
                         f"area {ph} * {pw}")
    oc = c // (ph * pw)
    if b.shape[0] == 0:
        return _empty(x, oc, ph, pw)
    ft = _geometry_type(x)
    r, sc = _cround(b.astype(ft)), ft(scale)
    y0, x0 = r[:, 1] * sc, r[:, 0] * sc
    y1, x1 = (r[:, 3] + ft(1)) * sc, (r[:, 2] + ft(1)) * sc
    bh = np.maximum(y1 - y0, ft(0.1)) / ft(ph)
    bw = np.maximum(x1 - x0, ft(0.1)) / ft(pw)
    ylo = np.clip(np.floor(np.arange(ph, dtype=ft)[None] * bh[:, None] + y0[:, None]), 0, h)
    yhi = np.clip(np.ceil(np.arange(1, ph + 1, dtype=ft)[None] * bh[:, None] + y0[:, None]), 0, h)
    xlo = np.clip(np.floor(np.arange(pw, dtype=ft)[None] * bw[:, None] + x0[:, None]), 0, w)
    xhi = np.clip(np.ceil(np.arange(1, pw + 1, dtype=ft)[None] * bw[:, None] + x0[:, None]), 0, w)
    table = x.reshape([n, oc, ph, pw, h, w]).transpose([0, 2, 3, 4, 5, 1])
    table = table.reshape([n * ph * pw * h * w, oc])
    base = ((bidx[:, None, None] * ph + np.arange(ph)[None, :, None]) * pw +
            np.arange(pw)[None, None, :]) * h * w
    return _masked_pool(table, base, ylo.astype(np.int64), yhi.astype(np.int64),
                        xlo.astype(np.int64), xhi.astype(np.int64), w, "mean")


class RoIAlign(nn.Layer):
    """Layer form of roi_align: RoIAlign(output_size, spatial_scale=1.0)(x, boxes, boxes_num,
    aligned=True)."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num, aligned=True):
        return roi_align(x, boxes, boxes_num, self._output_size, self._spatial_scale,
                         aligned=aligned)


class RoIPool(nn.Layer):
    """Layer form of roi_pool: RoIPool(output_size, spatial_scale=1.0)(x, boxes, boxes_num)."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num):
        return roi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)

    def extra_repr(self):
        return f"output_size={self._output_size}, spatial_scale={self._spatial_scale}"


class PSRoIPool(nn.Layer):
    """Layer form of psroi_pool: PSRoIPool(output_size, spatial_scale=1.0)(x, boxes,
    boxes_num)."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num):
        return psroi_pool(x, boxes, boxes_num, self.output_size, self.spatial_scale)
