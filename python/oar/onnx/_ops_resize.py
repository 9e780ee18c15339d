"""Translation rules for resampling and padding (Note [ONNX export] in docs/notes/jit.md):
interp -> Resize, grid_sample -> GridSample, pad_nd -> Pad (circular padding by Slice +
Concat, as ONNX's "wrap" needs opset 19)."""
import numpy as np

from ._ops import _FLOATS, rule

_INTERP_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
                 "bicubic": "cubic"}


@rule("pd_op.interp")
def _interp(v):
    """Oar's coordinate rules (phi_kernels/cpu/interp_kernels.cc) as Resize attributes:
    nearest floor(o / s) or, with align_corners, round-half-up(o (in-1)/(out-1)); linear
    half-pixel (align_mode 0, negative sources clamped as ONNX clamps them), asymmetric
    (align_mode 1) or align_corners; cubic with a = -0.75, half-pixel or align_corners."""
    g = v.g
    a = v.attrs
    mode = a["mode"]
    if mode not in _INTERP_MODES:
        raise v.unsupported(f"mode '{mode}'")
    if v.rdtype() not in _FLOATS:
        raise v.unsupported(f"dtype {v.rdtype()}")
    xs = v.shape(0)
    ns = len(xs) - 2
    out = [int(o) for o in a["out_size"]]
    scales = [float(s) for s in a.get("scales", [])]
    align = bool(a.get("align_corners", False))
    attrs = {"mode": _INTERP_MODES[mode]}
    if mode == "nearest":
        attrs["coordinate_transformation_mode"] = "align_corners" if align else "asymmetric"
        attrs["nearest_mode"] = "round_prefer_ceil" if align else "floor"
    elif align:
        attrs["coordinate_transformation_mode"] = "align_corners"
    elif mode == "bicubic" or int(a.get("align_mode", 0)) == 0:
        attrs["coordinate_transformation_mode"] = "half_pixel"
    else:
        attrs["coordinate_transformation_mode"] = "asymmetric"
    if mode == "bicubic":
        attrs["cubic_coeff_a"] = -0.75
    if len(out) != ns:
        raise v.unsupported(f"out_size {out} for a {len(xs)}-D input")
    x = v.x(0)
    if scales and all(s > 0 for s in scales):
        # the ratio is 1 / scale, as in Oar; ONNX's output size floor(in * scale) is Oar's out_size
        inputs = [x, "", g.const(np.asarray([1.0, 1.0] + scales, np.float32), "scales")]
    else:
        sizes = g.node("Concat", [g.node("Slice", [g.node("Shape", [x]), g.ints([0]), g.ints([2])]), g.ints(out)],
                       axis=0)
        inputs = [x, "", "", sizes]
    v.out(g.node("Resize", inputs, **attrs))


@rule("pd_op.grid_sample")
def _grid_sample(v):
    g = v.g
    a = v.attrs
    if len(v.shape(0)) != 4:
        raise v.unsupported(f"a {len(v.shape(0))}-D input (GridSample takes 4-D before opset 20)")
    if g.opset < 16:
        raise v.unsupported(f"GridSample needs opset 16 or later (exporting opset {g.opset})")
    mode, pad = a.get("mode", "bilinear"), a.get("padding_mode", "zeros")
    if mode not in ("bilinear", "nearest", "bicubic") or pad not in ("zeros", "border", "reflection"):
        raise v.unsupported(f"mode '{mode}' with padding_mode '{pad}'")
    if g.opset >= 20:
        mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    grid = v.x_as(1, v.rdtype())
    v.out(g.node("GridSample", [v.x(0), grid], mode=mode, padding_mode=pad,
                 align_corners=int(bool(a.get("align_corners", True)))))


@rule("pd_op.pad_nd")
def _pad_nd(v):
    g = v.g
    pads = [int(p) for p in v.attrs["pads"]]
    mode = v.attrs.get("mode", "constant")
    rank = len(v.shape(0))
    if len(pads) != 2 * rank:
        raise v.unsupported(f"pads {pads} for a {rank}-D input")
    before, after = pads[0::2], pads[1::2]
    x = v.x(0)
    if mode == "circular":
        # out = x[-b:] ++ x ++ x[:a] along each padded dim
        big = np.iinfo(np.int64).max
        for d, (b, e) in enumerate(zip(before, after)):
            if b == 0 and e == 0:
                continue
            ax = g.ints([d])
            parts = [x]
            if b:
                parts.insert(0, g.node("Slice", [x, g.ints([-b]), g.ints([big]), ax]))
            if e:
                parts.append(g.node("Slice", [x, g.ints([0]), g.ints([e]), ax]))
            x = g.node("Concat", parts, axis=d)
        v.out(g.node("Identity", [x]) if x == v.x(0) else x)
        return
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}.get(mode)
    if onnx_mode is None:
        raise v.unsupported(f"mode '{mode}'")
    inputs = [x, g.ints(before + after)]
    if onnx_mode == "constant":
        value = float(v.attrs.get("value", 0.0))
        dt = v.np_dtype()
        if v.rdtype() not in _FLOATS and value != int(value):
            raise v.unsupported(f"a fractional pad value on dtype {v.rdtype()}")
        inputs.append(g.scalar(value if v.rdtype() in _FLOATS else int(value), dt))
    v.out(g.node("Pad", inputs, mode=onnx_mode))
