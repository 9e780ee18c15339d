"""Deformable convolution (v1, and v2 with a mask) of paddle.vision.ops: deform_conv2d and
DeformConv2D. Composed as bilinear sampling (four gathers weighted by the fractional parts of
the offset positions, so x, offset and mask all get gradients) into im2col columns, then a
grouped matmul with the weight."""
import numpy as np

from .. import nn
from .._creation import _full_on
from ._roi import _check_tensor, _dtype

__all__ = ["deform_conv2d", "DeformConv2D"]

_FLOATS = ("float32", "float64")
_CHUNK = 1 << 24  # sampled elements per step


def _oar():
    import oar

    return oar


def _pair(op, name, v, low):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = [int(v)] * 2
    elif isinstance(v, (list, tuple)) and len(v) == 2 and all(
        isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v
    ):
        v = [int(e) for e in v]
    else:
        raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {v!r}")
    if min(v) < low:
        raise ValueError(f"{op}: {name} must be >= {low}, got {v}")
    return v


def _sample(oar, x, offset, mask, kh, kw, stride, padding, dilation, dg, ho, wo):
    """Bilinear samples [N, dg, K, Ho*Wo, C/dg] of x at the deformed kernel positions, times
    mask; out-of-image corners read zero."""
    n, c, h, w = x.shape
    k = kh * kw
    dt = _dtype(x)
    off = offset.reshape([n, dg, k, 2, ho * wo])
    base_y = (np.arange(ho) * stride[0] - padding[0])[:, None, None, None] + \
        (np.arange(kh) * dilation[0])[None, None, :, None]
    base_x = (np.arange(wo) * stride[1] - padding[1])[None, :, None, None] + \
        (np.arange(kw) * dilation[1])[None, None, None, :]
    base_y = np.broadcast_to(base_y, (ho, wo, kh, kw)).transpose(2, 3, 0, 1).reshape(k, ho * wo)
    base_x = np.broadcast_to(base_x, (ho, wo, kh, kw)).transpose(2, 3, 0, 1).reshape(k, ho * wo)
    place = x.place  # index and weight tensors go beside x
    py = off[:, :, :, 0] + oar.to_tensor(base_y.astype(dt), place=place)
    px = off[:, :, :, 1] + oar.to_tensor(base_x.astype(dt), place=place)
    pyn, pxn = py.numpy().astype(np.float64), px.numpy().astype(np.float64)
    inside = (pyn > -1) & (pyn < h) & (pxn > -1) & (pxn < w)
    y0, x0 = np.floor(pyn), np.floor(pxn)
    ly = py - oar.to_tensor(y0.astype(dt), place=place)  # fractional parts keep the offset's gradient
    lx = px - oar.to_tensor(x0.astype(dt), place=place)
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    cg = c // dg
    table = x.reshape([n, dg, cg, h * w]).transpose([0, 1, 3, 2]).reshape([n * dg * h * w, cg])
    plane = (np.arange(n)[:, None, None, None] * dg + np.arange(dg)[None, :, None, None]) * h * w
    out = None
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        yy, xx = y0 + dy, x0 + dx
        ok = inside & (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        idx = plane + np.clip(yy, 0, h - 1) * w + np.clip(xx, 0, w - 1)
        g = oar.gather(table, oar.to_tensor(idx.reshape(-1), place=place)).reshape([n, dg, k, ho * wo, cg])
        wy = ly if dy else 1.0 - ly
        wx = lx if dx else 1.0 - lx
        wt = wy * wx * oar.to_tensor(ok.astype(dt), place=place)
        term = g * wt.unsqueeze(-1)
        out = term if out is None else out + term
    if mask is not None:
        out = out * mask.reshape([n, dg, k, ho * wo]).unsqueeze(-1)
    return out


def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1,
                  deformable_groups=1, groups=1, mask=None, name=None):
    """Deformable convolution (Paddle's paddle.vision.ops.deform_conv2d): x [N, C, H, W],
    offset [N, 2 * deformable_groups * kh * kw, Ho, Wo] ((dy, dx) per kernel position), weight
    [Cout, C / groups, kh, kw], optional mask [N, deformable_groups * kh * kw, Ho, Wo]
    (DCNv2) -> [N, Cout, Ho, Wo]."""
    oar = _oar()
    op = "deform_conv2d"
    _check_tensor(op, "x", x, 4, _FLOATS)
    _check_tensor(op, "offset", offset, 4, _FLOATS)
    _check_tensor(op, "weight", weight, 4, _FLOATS)
    dt = _dtype(x)
    for nm, t in (("offset", offset), ("weight", weight), ("mask", mask), ("bias", bias)):
        if t is not None:
            _check_tensor(op, nm, t, None, _FLOATS)
            if _dtype(t) != dt:
                raise TypeError(f"{op}: {nm} dtype {_dtype(t)} must equal x's dtype {dt}")
    stride = _pair(op, "stride", stride, 1)
    padding = _pair(op, "padding", padding, 0)
    dilation = _pair(op, "dilation", dilation, 1)
    for nm, v in (("deformable_groups", deformable_groups), ("groups", groups)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{op}: {nm} must be a positive int, got {v!r}")
    n, c, h, w = x.shape
    cout, cin_g, kh, kw = weight.shape
    if c != cin_g * groups or cout % groups:
        raise ValueError(f"{op}: weight shape {list(weight.shape)} does not fit x's {c} "
                         f"channels with groups={groups}")
    if c % deformable_groups:
        raise ValueError(f"{op}: x's channels ({c}) must be divisible by deformable_groups "
                         f"({deformable_groups})")
    ho = (h + 2 * padding[0] - (dilation[0] * (kh - 1) + 1)) // stride[0] + 1
    wo = (w + 2 * padding[1] - (dilation[1] * (kw - 1) + 1)) // stride[1] + 1
    if ho <= 0 or wo <= 0:
        raise ValueError(f"{op}: the output size [{ho}, {wo}] is not positive for input "
                         f"{[h, w]}, kernel {[kh, kw]}, padding {padding}, dilation {dilation}")
    k = kh * kw
    dg = deformable_groups
    want = [n, 2 * dg * k, ho, wo]
    if list(offset.shape) != want:
        raise ValueError(f"{op}: offset must have shape {want}, got {list(offset.shape)}")
    if mask is not None and list(mask.shape) != [n, dg * k, ho, wo]:
        raise ValueError(f"{op}: mask must have shape {[n, dg * k, ho, wo]}, got "
                         f"{list(mask.shape)}")
    if bias is not None and list(bias.shape) != [cout]:
        raise ValueError(f"{op}: bias must have shape [{cout}], got {list(bias.shape)}")
    if n == 0:
        out = _full_on(x.place, [0, cout, ho, wo], 0.0, dt)
        return out if bias is None else out + bias.reshape([1, cout, 1, 1])
    per = max(c * k * ho * wo, 1)
    step = max(1, _CHUNK // per)
    outs = []
    wmat = weight.reshape([groups, cout // groups, cin_g * k])
    for s in range(0, n, step):
        e = min(n, s + step)
        cols = _sample(oar, x[s:e], offset[s:e], None if mask is None else mask[s:e], kh, kw,
                       stride, padding, dilation, dg, ho, wo)
        # [B, dg, K, L, C/dg] -> [B, groups, C/groups * K, L] in weight's (channel, kh, kw) order
        cols = cols.transpose([0, 1, 4, 2, 3]).reshape([e - s, groups, cin_g * k, ho * wo])
        outs.append(oar.matmul(wmat.unsqueeze(0), cols).reshape([e - s, cout, ho, wo]))
    out = outs[0] if len(outs) == 1 else oar.concat(outs, axis=0)
    if bias is not None:
        out = out + bias.reshape([1, cout, 1, 1])
    return out


class DeformConv2D(nn.Layer):
    """Layer form of deform_conv2d (Paddle's paddle.vision.ops.DeformConv2D): holds weight
    [out_channels, in_channels / groups, kh, kw] and bias; forward(x, offset, mask=None)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, deformable_groups=1, groups=1, weight_attr=None, bias_attr=None):
        super().__init__()
        op = "DeformConv2D"
        kh, kw = _pair(op, "kernel_size", kernel_size, 1)
        for nm, v in (("in_channels", in_channels), ("out_channels", out_channels),
                      ("groups", groups)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{op}: {nm} must be a positive int, got {v!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{op}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._deformable_groups, self._groups = deformable_groups, groups
        fan_in = in_channels // groups * kh * kw
        std = (2.0 / fan_in) ** 0.5
        self.weight = self.create_parameter(
            [out_channels, in_channels // groups, kh, kw], attr=weight_attr,
            default_initializer=nn.initializer.Normal(0.0, std))
        self.bias = None if bias_attr is False else self.create_parameter(
            [out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x, offset, mask=None):
        return deform_conv2d(x, offset, self.weight, self.bias, self._stride, self._padding,
                             self._dilation, self._deformable_groups, self._groups, mask)
