"""Weight-only int8 (paddle.nn.quant.weight_quantize / weight_dequantize / weight_only_linear).

A Linear weight [in, out] is stored as int8 [out, in] (Paddle's layout: the transpose of the
float weight) with a float32 scale per output channel, or per group of 64 or 128 input rows
and output channel: w ~ q * scale, q = round(w / scale) in [-127, 127], scale = max|w| / 127
over the channel (or group). weight_only_linear dequantizes the weight to x's dtype and runs
one matmul, so a bfloat16 x takes the bf16 GEMM (AMX or AVX512-BF16 where the CPU has them,
docs/notes/gemm_backends.md) and the gradient flows to x. Paddle runs these on CUDA only;
Oar runs them on the CPU. int4, w4a8 and llm.int8's outlier split are not implemented.
"""
import oar

__all__ = ["weight_quantize", "weight_dequantize", "weight_only_linear"]

_INT8_ALGOS = ("weight_only_int8", "llm.int8")
_OTHER_ALGOS = ("weight_only_int4", "w4a8")
_FLOAT_DTYPES = ("float16", "bfloat16", "float32")


def _dtype_name(dtype):
    return str(dtype).replace("paddle.", "")


def _check_algo(op, algo):
    if algo in _OTHER_ALGOS:
        raise NotImplementedError(f"{op}: algo '{algo}' is not implemented in Oar (int8 only: "
                                  f"{', '.join(_INT8_ALGOS)})")
    if algo not in _INT8_ALGOS:
        raise ValueError(f"{op}: algo must be one of {', '.join(_INT8_ALGOS + _OTHER_ALGOS)}, "
                         f"got {algo!r}")


def _check_group(op, group_size, rows):
    if group_size not in (-1, 64, 128):
        raise ValueError(f"{op}: group_size must be -1 (per channel), 64 or 128, got {group_size!r}")
    if group_size != -1 and rows % group_size != 0:
        raise ValueError(f"{op}: the weight's {rows} input rows are not a multiple of "
                         f"group_size {group_size}")


def _tensor(op, arg, x):
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"{op}: {arg} must be a Tensor, got {type(x).__name__}")
    return x


def weight_quantize(x, algo="weight_only_int8", arch=None, group_size=-1):
    """Quantizes a float weight x [in, out] to (int8 [out, in], float32 scale [out]) (or scale
    [in / group_size, out] with groups): scale = max|x| / 127 over each channel (group),
    q = round(x / scale), zero where the channel is all zeros."""
    op = "weight_quantize"
    _tensor(op, "x", x)
    _check_algo(op, algo)
    if _dtype_name(x.dtype) not in _FLOAT_DTYPES:
        raise TypeError(f"{op}: x must be float16, bfloat16 or float32, got {_dtype_name(x.dtype)}")
    if x.ndim != 2:
        raise ValueError(f"{op}: x must be a 2-D weight [in, out], got shape {list(x.shape)}")
    rows, cols = x.shape
    _check_group(op, group_size, rows)
    w = x.astype("float32")
    if group_size == -1:
        absmax = w.abs().max(axis=0)  # [out]
        scale = absmax / 127.0
        safe = oar.where(absmax > 0, scale, oar.ones_like(scale))
        q = oar.round(w / safe)
    else:
        g = w.reshape([rows // group_size, group_size, cols])
        absmax = g.abs().max(axis=1)  # [groups, out]
        scale = absmax / 127.0
        safe = oar.where(absmax > 0, scale, oar.ones_like(scale))
        q = oar.round(g / safe.unsqueeze(1)).reshape([rows, cols])
    q = oar.clip(q, -127.0, 127.0).astype("int8").transpose([1, 0])
    return q, scale


def weight_dequantize(x, scale, algo="weight_only_int8", out_dtype="float16", group_size=-1):
    """The float weight [in, out] of an int8 weight x [out, in] and its scale, in out_dtype."""
    op = "weight_dequantize"
    _tensor(op, "x", x)
    _tensor(op, "scale", scale)
    _check_algo(op, algo)
    out_dtype = _dtype_name(out_dtype)
    if out_dtype not in _FLOAT_DTYPES:
        raise TypeError(f"{op}: out_dtype must be float16, bfloat16 or float32, got {out_dtype}")
    return _dequantize(op, x, scale, group_size, out_dtype)


def _dequantize(op, x, scale, group_size, out_dtype):
    if _dtype_name(x.dtype) != "int8":
        raise TypeError(f"{op}: the quantized weight must be int8, got {_dtype_name(x.dtype)}")
    if x.ndim != 2:
        raise ValueError(f"{op}: the quantized weight must be 2-D [out, in], got shape {list(x.shape)}")
    cols, rows = x.shape
    _check_group(op, group_size, rows)
    want = [cols] if group_size == -1 else [rows // group_size, cols]
    if list(scale.shape) != want:
        raise ValueError(f"{op}: weight_scale must have shape {want} for an int8 weight of shape "
                         f"{list(x.shape)} and group_size {group_size}, got {list(scale.shape)}")
    w = x.astype("float32").transpose([1, 0])  # [in, out]
    s = scale.astype("float32")
    if group_size == -1:
        w = w * s
    else:
        w = (w.reshape([rows // group_size, group_size, cols]) * s.unsqueeze(1)).reshape([rows, cols])
    return w.astype(out_dtype)


def weight_only_linear(x, weight, bias=None, weight_scale=None, weight_dtype="int8", arch=None,
                       group_size=-1):
    """x @ dequantize(weight, weight_scale) + bias for an int8 weight [out, in] from
    weight_quantize; the result has x's dtype (float16, bfloat16 or float32)."""
    op = "weight_only_linear"
    _tensor(op, "x", x)
    _tensor(op, "weight", weight)
    if _dtype_name(weight_dtype) == "int4":
        raise NotImplementedError(f"{op}: weight_dtype 'int4' is not implemented in Oar (int8 only)")
    if _dtype_name(weight_dtype) != "int8":
        raise ValueError(f"{op}: weight_dtype must be 'int8' or 'int4', got {weight_dtype!r}")
    dt = _dtype_name(x.dtype)
    if dt not in _FLOAT_DTYPES:
        raise TypeError(f"{op}: x must be float16, bfloat16 or float32, got {dt}")
    if weight_scale is None:
        raise ValueError(f"{op}: weight_scale is required (the scale weight_quantize returned)")
    _tensor(op, "weight_scale", weight_scale)
    if _dtype_name(weight.dtype) != "int8":
        raise TypeError(f"{op}: the quantized weight must be int8, got {_dtype_name(weight.dtype)}")
    if weight.ndim == 2 and (x.ndim == 0 or x.shape[-1] != weight.shape[1]):
        raise ValueError(f"{op}: x's last dimension must equal the weight's input size, got x of shape "
                         f"{list(x.shape)} and weight of shape {list(weight.shape)} ([out, in])")
    w = _dequantize(op, weight, weight_scale, group_size, dt)
    out = oar.matmul(x, w)
    if bias is not None:
        _tensor(op, "bias", bias)
        if list(bias.shape) != [weight.shape[0]]:
            raise ValueError(f"{op}: bias must have shape [{weight.shape[0]}], got {list(bias.shape)}")
        out = out + bias.astype(dt)
    return out
