"""Translation rules: one function per PIR op name, each emitting ONNX nodes into a Graph
(Note [ONNX export] in docs/notes/jit.md). A rule reads its operands' ONNX names and PIR
types through an OpView and binds each result it defines. What a rule cannot express
exactly raises NotImplementedError naming the op; a rule never guesses."""
import math

import numpy as np

from ._graph import dtype_name, np_type, onnx_type

RULES = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


class OpView:
    """An op being translated: operand names/types, result types, attributes."""

    def __init__(self, g, op):
        self.g = g
        self.op = op
        self.name = op.name
        self.operands = op.operands()
        self.results = op.results()
        self.attrs = op.attrs()

    def unsupported(self, why):
        return NotImplementedError(f"onnx.export: op '{self.name}' is not supported: {why}")

    def x(self, i):
        v = self.operands[i]
        return None if v is None else self.g.get(v, self.name)

    def xs(self, i):
        """The names of a Tensor[] operand."""
        names = self.g.get(self.operands[i], self.name)
        if not isinstance(names, list):
            raise self.unsupported("expected a tensor list operand")
        return names

    def present(self, i):
        return i < len(self.operands) and self.operands[i] is not None

    def shape(self, i):
        return list(self.operands[i].shape)

    def dtype(self, i):
        return dtype_name(self.operands[i].dtype)

    def rshape(self, i=0):
        return list(self.results[i].shape)

    def rdtype(self, i=0):
        return dtype_name(self.results[i].dtype)

    def np_dtype(self, i=0):
        return np_type(self.results[i].dtype, f"the result of '{self.name}'")

    def used(self, i):
        return self.results[i].num_uses > 0

    def out(self, name, i=0):
        self.g.bind(self.results[i], name)

    def only_first_used(self, what):
        for i in range(1, len(self.results)):
            if self.used(i):
                raise self.unsupported(f"its result {i} ({what}) is used; only the main result can be exported")

    def x_as(self, i, dtype):
        """Operand i cast to `dtype` (ONNX needs equal input types where Oar promotes)."""
        return self.g.cast(self.x(i), self.dtype(i), dtype)


def _norm_axis(a, rank):
    return a + rank if a < 0 else a


# ------------------------------------------------------------------ elementwise
_BINARY = {"pd_op.add": "Add", "pd_op.subtract": "Sub", "pd_op.multiply": "Mul", "pd_op.divide": "Div",
           "pd_op.maximum": "Max", "pd_op.minimum": "Min", "pd_op.elementwise_pow": "Pow"}
_FLOATS = ("float16", "float32", "float64")


@rule(*_BINARY)
def _binary(v):
    t = v.rdtype()
    if v.name in ("pd_op.divide",) and t not in _FLOATS:
        raise v.unsupported(f"integer division ({t}) rounds differently in ONNX")
    if v.name == "pd_op.elementwise_pow" and t not in _FLOATS:
        raise v.unsupported(f"integer power ({t})")
    v.out(v.g.node(_BINARY[v.name], [v.x_as(0, t), v.x_as(1, t)]))


_ORDER = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _common(a, b):
    if a == b:
        return a
    fa, fb = a in _FLOATS, b in _FLOATS
    if fa != fb:
        return a if fa else b
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


_COMPARE = {"pd_op.equal": ("Equal", False), "pd_op.not_equal": ("Equal", True),
            "pd_op.greater_than": ("Greater", False), "pd_op.greater_equal": ("GreaterOrEqual", False),
            "pd_op.less_than": ("Less", False), "pd_op.less_equal": ("LessOrEqual", False)}


@rule(*_COMPARE)
def _compare(v):
    t = _common(v.dtype(0), v.dtype(1))
    op_type, negate = _COMPARE[v.name]
    out = v.g.node(op_type, [v.x_as(0, t), v.x_as(1, t)])
    v.out(v.g.node("Not", [out]) if negate else out)


@rule("pd_op.logical_and", "pd_op.logical_or", "pd_op.logical_xor")
def _logical(v):
    op_type = {"pd_op.logical_and": "And", "pd_op.logical_or": "Or", "pd_op.logical_xor": "Xor"}[v.name]
    out = v.g.node(op_type, [v.x_as(0, "bool"), v.x_as(1, "bool")])
    v.out(v.g.cast(out, "bool", v.rdtype()))


@rule("pd_op.logical_not")
def _logical_not(v):
    v.out(v.g.cast(v.g.node("Not", [v.x_as(0, "bool")]), "bool", v.rdtype()))


_UNARY = {"pd_op.relu": "Relu", "pd_op.tanh": "Tanh", "pd_op.sigmoid": "Sigmoid", "pd_op.exp": "Exp",
          "pd_op.log": "Log", "pd_op.sqrt": "Sqrt", "pd_op.abs": "Abs", "pd_op.neg": "Neg",
          "pd_op.erf": "Erf", "pd_op.sin": "Sin", "pd_op.cos": "Cos", "pd_op.tan": "Tan",
          "pd_op.floor": "Floor", "pd_op.ceil": "Ceil", "pd_op.reciprocal": "Reciprocal",
          "pd_op.sign": "Sign", "pd_op.assign": "Identity", "pd_op.contiguous": "Identity",
          "pd_op.copy_to": "Identity",  # a move between places: an ONNX graph has none
          "pd_op.softsign": "Softsign", "pd_op.asin": "Asin", "pd_op.acos": "Acos", "pd_op.atan": "Atan",
          "pd_op.sinh": "Sinh", "pd_op.cosh": "Cosh", "pd_op.isnan": "IsNaN"}


@rule(*_UNARY)
def _unary(v):
    t = v.rdtype()
    if v.name not in ("pd_op.assign", "pd_op.contiguous", "pd_op.copy_to", "pd_op.neg", "pd_op.abs", "pd_op.relu",
                      "pd_op.sign", "pd_op.isnan") and t not in _FLOATS:
        raise v.unsupported(f"dtype {t}")
    v.out(v.g.node(_UNARY[v.name], [v.x(0)]))


@rule("pd_op.relu_", "pd_op.tanh_", "pd_op.exp_", "pd_op.sqrt_", "pd_op.floor_", "pd_op.ceil_",
      "pd_op.reciprocal_")
def _unary_inplace(v):
    # In a traced program an in-place op only defines a new SSA value.
    v.out(v.g.node(_UNARY[v.name[:-1]], [v.x(0)]))


@rule("pd_op.rsqrt")
def _rsqrt(v):
    v.out(v.g.node("Reciprocal", [v.g.node("Sqrt", [v.x(0)])]))


@rule("pd_op.square")
def _square(v):
    x = v.x(0)
    v.out(v.g.node("Mul", [x, x]))


@rule("pd_op.log1p")
def _log1p(v):
    v.out(v.g.node("Log", [v.g.node("Add", [v.x(0), v.g.scalar(1, v.np_dtype())])]))


@rule("pd_op.expm1")
def _expm1(v):
    v.out(v.g.node("Sub", [v.g.node("Exp", [v.x(0)]), v.g.scalar(1, v.np_dtype())]))


@rule("pd_op.gelu")
def _gelu(v):
    g, x, dt = v.g, v.x(0), v.np_dtype()
    half = g.node("Mul", [x, g.scalar(0.5, dt)])
    if v.attrs.get("approximate", False):
        cube = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [cube, g.scalar(0.044715, dt)])])
        t = g.node("Tanh", [g.node("Mul", [inner, g.scalar(math.sqrt(2.0 / math.pi), dt)])])
    else:
        t = g.node("Erf", [g.node("Mul", [x, g.scalar(1.0 / math.sqrt(2.0), dt)])])
    v.out(g.node("Mul", [half, g.node("Add", [t, g.scalar(1.0, dt)])]))


@rule("pd_op.silu")
def _silu(v):
    v.out(v.g.node("Mul", [v.x(0), v.g.node("Sigmoid", [v.x(0)])]))


@rule("pd_op.leaky_relu")
def _leaky_relu(v):
    v.out(v.g.node("LeakyRelu", [v.x(0)], alpha=float(v.attrs.get("negative_slope", 0.01))))


@rule("pd_op.elu")
def _elu(v):
    v.out(v.g.node("Elu", [v.x(0)], alpha=float(v.attrs.get("alpha", 1.0))))


@rule("pd_op.selu")
def _selu(v):
    v.out(v.g.node("Selu", [v.x(0)], alpha=float(v.attrs["alpha"]), gamma=float(v.attrs["scale"])))


@rule("pd_op.hardsigmoid")
def _hardsigmoid(v):
    v.out(v.g.node("HardSigmoid", [v.x(0)], alpha=float(v.attrs["slope"]), beta=float(v.attrs["offset"])))


@rule("pd_op.hardswish")
def _hardswish(v):
    # Oar's hardswish is x * relu6(x + 3) / 6, which is ONNX HardSwish (opset 14).
    g, x, dt = v.g, v.x(0), v.np_dtype()
    r6 = g.node("Clip", [g.node("Add", [x, g.scalar(3.0, dt)]), g.scalar(0.0, dt), g.scalar(6.0, dt)])
    v.out(g.node("Div", [g.node("Mul", [x, r6]), g.scalar(6.0, dt)]))


@rule("pd_op.relu6")
def _relu6(v):
    dt = v.np_dtype()
    v.out(v.g.node("Clip", [v.x(0), v.g.scalar(0.0, dt), v.g.scalar(6.0, dt)]))


@rule("pd_op.hardtanh")
def _hardtanh(v):
    dt = v.np_dtype()
    v.out(v.g.node("Clip", [v.x(0), v.g.scalar(v.attrs["t_min"], dt), v.g.scalar(v.attrs["t_max"], dt)]))


@rule("pd_op.clip", "pd_op.clip_")
def _clip(v):
    dt = v.np_dtype()
    lo, hi = float(v.attrs["min"]), float(v.attrs["max"])
    if dt != np.float64:
        info = np.finfo(dt) if np.issubdtype(dt, np.floating) else np.iinfo(dt)
        lo, hi = max(lo, float(info.min)), min(hi, float(info.max))
    v.out(v.g.node("Clip", [v.x(0), v.g.scalar(lo, dt), v.g.scalar(hi, dt)]))


@rule("pd_op.softplus")
def _softplus(v):
    # beta * x > threshold -> x, else log(1 + exp(beta x)) / beta
    g, x, dt = v.g, v.x(0), v.np_dtype()
    beta, thr = float(v.attrs["beta"]), float(v.attrs["threshold"])
    bx = g.node("Mul", [x, g.scalar(beta, dt)])
    soft = g.node("Div", [g.node("Softplus", [bx]), g.scalar(beta, dt)])
    v.out(g.node("Where", [g.node("Greater", [bx, g.scalar(thr, dt)]), x, soft]))


@rule("pd_op.log_sigmoid")
def _log_sigmoid(v):
    # log(sigmoid(x)) = -softplus(-x), stable for large |x|
    v.out(v.g.node("Neg", [v.g.node("Softplus", [v.g.node("Neg", [v.x(0)])])]))


@rule("pd_op.mish")
def _mish(v):
    v.out(v.g.node("Mul", [v.x(0), v.g.node("Tanh", [v.g.node("Softplus", [v.x(0)])])]))


@rule("pd_op.scale", "pd_op.scale_")
def _scale(v):
    g, x, dt = v.g, v.x(0), v.np_dtype()
    s, b = float(v.attrs.get("scale", 1.0)), float(v.attrs.get("bias", 0.0))
    if v.rdtype() not in _FLOATS and (s != int(s) or b != int(b)):
        raise v.unsupported(f"a fractional scale/bias on dtype {v.rdtype()}")
    if v.attrs.get("bias_after_scale", True):
        y = g.node("Mul", [x, g.scalar(s, dt)]) if s != 1.0 else x
        y = g.node("Add", [y, g.scalar(b, dt)]) if b != 0.0 else y
    else:
        y = g.node("Add", [x, g.scalar(b, dt)]) if b != 0.0 else x
        y = g.node("Mul", [y, g.scalar(s, dt)]) if s != 1.0 else y
    if y == x:
        y = g.node("Identity", [x])
    v.out(y)


@rule("pd_op.pow")
def _pow(v):
    dt = v.np_dtype()
    if v.rdtype() not in _FLOATS:
        raise v.unsupported(f"integer power ({v.rdtype()})")
    v.out(v.g.node("Pow", [v.x(0), v.g.scalar(float(v.attrs.get("y", 1.0)), dt)]))


@rule("pd_op.cast")
def _cast(v):
    v.out(v.g.node("Cast", [v.x(0)], to=onnx_type(v.results[0].dtype, "the result of cast")))


@rule("pd_op.where")
def _where(v):
    t = v.rdtype()
    v.out(v.g.node("Where", [v.x_as(0, "bool"), v.x_as(1, t), v.x_as(2, t)]))


@rule("pd_op.softmax", "pd_op.log_softmax")
def _softmax(v):
    op_type = "Softmax" if v.name == "pd_op.softmax" else "LogSoftmax"
    rank = len(v.shape(0))
    if rank == 0:
        # a 0-D softmax is 1 (log: 0)
        dt = v.np_dtype()
        one = v.g.node("Add", [v.g.node("Mul", [v.x(0), v.g.scalar(0, dt)]),
                               v.g.scalar(1 if op_type == "Softmax" else 0, dt)])
        v.out(one)
        return
    v.out(v.g.node(op_type, [v.x(0)], axis=int(v.attrs.get("axis", -1))))


# ------------------------------------------------------------------ linear algebra
def _swap_last(g, x, rank):
    if rank < 2:
        return x
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return g.transpose(x, perm)


def _matmul(v, x, y):
    g = v.g
    if v.attrs.get("transpose_x", False):
        x = _swap_last(g, x, len(v.shape(0)))
    if v.attrs.get("transpose_y", False):
        y = _swap_last(g, y, len(v.shape(1)))
    if v.dtype(0) not in _FLOATS or v.dtype(1) not in _FLOATS:
        raise v.unsupported("integer matmul")
    t = v.rdtype()
    return g.node("MatMul", [g.cast(x, v.dtype(0), t), g.cast(y, v.dtype(1), t)])


@rule("pd_op.matmul")
def _matmul_rule(v):
    v.out(_matmul(v, v.x(0), v.x(1)))


@rule("pd_op.fused_linear", "pd_op.fused_linear_activation")
def _fused_linear(v):
    g = v.g
    y = g.node("Add", [_matmul(v, v.x(0), v.x(1)), v.x_as(2, v.rdtype())])
    if v.name == "pd_op.fused_linear_activation":
        act = v.attrs.get("activation", "relu")
        if act == "relu":
            y = g.node("Relu", [y])
        elif act in ("gelu", "gelu_tanh"):
            dt = v.np_dtype()
            half = g.node("Mul", [y, g.scalar(0.5, dt)])
            if act == "gelu":
                t = g.node("Erf", [g.node("Mul", [y, g.scalar(1.0 / math.sqrt(2.0), dt)])])
            else:
                cube = g.node("Mul", [g.node("Mul", [y, y]), y])
                inner = g.node("Add", [y, g.node("Mul", [cube, g.scalar(0.044715, dt)])])
                t = g.node("Tanh", [g.node("Mul", [inner, g.scalar(math.sqrt(2.0 / math.pi), dt)])])
            y = g.node("Mul", [half, g.node("Add", [t, g.scalar(1.0, dt)])])
        else:
            raise v.unsupported(f"activation '{act}'")
    v.out(y)


# ------------------------------------------------------------------ shapes
@rule("pd_op.reshape")
def _reshape(v):
    shape = [int(d) for d in v.attrs["shape"]]
    # Paddle's reshape: 0 copies the input dim at that index, -1 is inferred: ONNX
    # Reshape with allowzero = 0 means the same.
    v.out(v.g.node("Reshape", [v.x(0), v.g.ints(shape)]))


@rule("pd_op.print_tensor")
def _print_tensor(v):
    # ONNX has no printing op: the exported model passes the tensor through.
    v.out(v.x(0))


@rule("pd_op.append_row")
def _append_row(v):
    # concat([buf, x[None]]), where an empty buf may have other sizes: expanding buf to
    # [1, x's shape...] first leaves a non-empty buf as it is (its rows match x) and gives
    # an empty one x's sizes (0 rows broadcast with 1 stay 0).
    g = v.g
    x = v.x_as(1, v.dtype(0))
    shape = g.node("Concat", [g.ints([1]), g.node("Shape", [x])], axis=0)
    buf = g.node("Expand", [v.x(0), shape])
    v.out(g.node("Concat", [buf, g.unsqueeze(x, [0])], axis=0))


@rule("pd_op.shape64")
def _shape64(v):
    v.out(v.g.node("Shape", [v.x(0)]))


@rule("pd_op.dyn_reshape")
def _dyn_reshape(v):
    # The target shape comes as a tensor (sizes computed at run time); its 0 and -1 mean
    # what they mean to ONNX's Reshape (allowzero = 0).
    v.out(v.g.node("Reshape", [v.x(0), v.x_as(1, "int64")]))


@rule("pd_op.dyn_expand")
def _dyn_expand(v):
    # -1 keeps the input's size; under ONNX's two-way broadcast a 1 does the same.
    shape = v.x_as(1, "int64")
    minus_one = v.g.node("Equal", [shape, v.g.ints([-1])])
    shape = v.g.node("Where", [minus_one, v.g.ints([1]), shape])
    v.out(v.g.node("Expand", [v.x(0), shape]))


@rule("pd_op.flatten")
def _flatten(v):
    g, x = v.g, v.x(0)
    shape = v.shape(0)
    rank = len(shape)
    if rank == 0:
        v.out(g.node("Reshape", [x, g.ints([1])]))
        return
    start = _norm_axis(int(v.attrs.get("start_axis", 0)), rank)
    stop = _norm_axis(int(v.attrs.get("stop_axis", -1)), rank)
    if stop == rank - 1 and start == 1:
        v.out(g.node("Flatten", [x], axis=start))
        return
    mid = shape[start:stop + 1]
    mid_dim = -1 if -1 in mid else int(np.prod(mid, dtype=np.int64))
    after = shape[stop + 1:]
    target = [0] * start + [mid_dim] + after
    if -1 in after and (mid_dim == -1 or after.count(-1) > 1):
        # dims after the flattened range are dynamic too: read them from the input's shape
        sh = g.node("Shape", [x])
        pieces = []
        if start > 0:
            pieces.append(g.node("Slice", [sh, g.ints([0]), g.ints([start])]))
        pieces.append(g.reduce("ReduceProd", g.node("Slice", [sh, g.ints([start]), g.ints([stop + 1])]),
                               [0], True))
        pieces.append(g.node("Slice", [sh, g.ints([stop + 1]), g.ints([rank])]))
        v.out(g.node("Reshape", [x, g.node("Concat", pieces, axis=0)]))
        return
    if -1 in after:
        target = [0] * start + [mid_dim] + [-1 if d == -1 else d for d in after]
    if 0 in target[start:]:
        raise v.unsupported("flattening a tensor with a zero-size dim")
    v.out(g.node("Reshape", [x, g.ints(target)]))


@rule("pd_op.transpose")
def _transpose(v):
    perm = [int(p) for p in v.attrs["perm"]]
    rank = len(v.shape(0))
    v.out(v.g.node("Transpose", [v.x(0)], perm=[_norm_axis(p, rank) for p in perm]))


@rule("pd_op.squeeze")
def _squeeze(v):
    shape = v.shape(0)
    rank = len(shape)
    axes = [_norm_axis(int(a), rank) for a in v.attrs.get("axis", [])] or list(range(rank))
    # Paddle ignores listed axes whose size is not 1; a dynamic size is not known to be 1.
    keep = sorted({a for a in axes if shape[a] == 1})
    if len(v.rshape()) != rank - len(keep):
        raise v.unsupported(f"squeeze of {shape} over axes {axes} with dynamic sizes")
    v.out(v.g.squeeze(v.x(0), keep) if keep else v.g.node("Identity", [v.x(0)]))


@rule("pd_op.unsqueeze")
def _unsqueeze(v):
    dims = ["old"] * len(v.shape(0))
    for a in v.attrs["axis"]:
        a = int(a)
        cur = len(dims)
        a = a + cur + 1 if a < 0 else a
        dims.insert(min(max(a, 0), cur), "new")
    axes = [i for i, d in enumerate(dims) if d == "new"]
    if len(dims) != len(v.rshape()):
        raise v.unsupported("unsqueeze axes out of range")
    v.out(v.g.unsqueeze(v.x(0), axes))


@rule("pd_op.concat")
def _concat(v):
    t = v.rdtype()
    names = v.xs(0)
    types = [dtype_name(d) for d in _vec_dtypes(v, 0, len(names))]
    names = [v.g.cast(n, d, t) for n, d in zip(names, types)]
    v.out(v.g.node("Concat", names, axis=int(v.attrs.get("axis", 0))))


def _vec_dtypes(v, i, n):
    """Element dtypes of a Tensor[] operand (made by builtin.combine)."""
    src = v.operands[i].defining_op
    if src is not None and src.name == "builtin.combine":
        return [o.dtype for o in src.operands()]
    return [v.rdtype()] * n


@rule("pd_op.stack")
def _stack(v):
    t = v.rdtype()
    names = v.xs(0)
    types = [dtype_name(d) for d in _vec_dtypes(v, 0, len(names))]
    axis = int(v.attrs.get("axis", 0))
    rank = len(v.rshape())
    axis = _norm_axis(axis, rank)
    parts = [v.g.unsqueeze(v.g.cast(n, d, t), [axis]) for n, d in zip(names, types)]
    v.out(v.g.node("Concat", parts, axis=axis))


@rule("pd_op.slice")
def _slice(v):
    axes = [int(a) for a in v.attrs["axes"]]
    starts = [int(a) for a in v.attrs["starts"]]
    ends = [int(a) for a in v.attrs["ends"]]
    strides = [int(a) for a in v.attrs.get("strides", [])] or [1] * len(axes)
    g = v.g
    out = g.node("Slice", [v.x(0), g.ints(starts), g.ints(ends), g.ints(axes), g.ints(strides)])
    if len(v.rshape()) != len(v.shape(0)):
        raise v.unsupported("slice that drops axes")
    v.out(out)


@rule("pd_op.select")
def _select(v):
    rank = len(v.shape(0))
    axis = _norm_axis(int(v.attrs["axis"]), rank)
    v.out(v.g.node("Gather", [v.x(0), v.g.const(np.asarray(int(v.attrs["index"]), np.int64))], axis=axis))


@rule("pd_op.split", "pd_op.split_with_num")
def _split(v):
    shape = v.shape(0)
    axis = _norm_axis(int(v.attrs.get("axis", 0)), len(shape))
    sizes = [r.shape[axis] for r in _vec_result_types(v)]
    if -1 in sizes:
        raise v.unsupported(f"split along a dynamic axis (sizes {sizes})")
    names = v.g.node("Split", [v.x(0), v.g.ints(sizes)], outputs=[v.g.fresh("split") for _ in sizes],
                     axis=axis)
    v.out(names)


def _vec_result_types(v):
    """The element types of a Tensor[] result, read from the builtin.split that takes it apart."""
    for user in v.results[0].users():
        if user.name == "builtin.split":
            return user.results()
    raise v.unsupported("its tensor list result is not taken apart by builtin.split")


@rule("pd_op.unstack")
def _unstack(v):
    shape = v.shape(0)
    axis = _norm_axis(int(v.attrs.get("axis", 0)), len(shape))
    n = shape[axis]
    if n == -1:
        raise v.unsupported("unstack along a dynamic axis")
    parts = v.g.node("Split", [v.x(0), v.g.ints([1] * n)], outputs=[v.g.fresh("unstack") for _ in range(n)],
                     axis=axis)
    v.out([v.g.squeeze(p, [axis]) for p in parts])


@rule("pd_op.expand")
def _expand(v):
    shape = [int(d) for d in v.attrs["shape"]]
    # -1 keeps the input's size: under ONNX's two-way broadcast a 1 does the same.
    v.out(v.g.node("Expand", [v.x(0), v.g.ints([1 if d == -1 else d for d in shape])]))


@rule("pd_op.tile")
def _tile(v):
    reps = [int(r) for r in v.attrs["repeat_times"]]
    rank = len(v.shape(0))
    x = v.x(0)
    if len(reps) > rank:
        x = v.g.unsqueeze(x, list(range(len(reps) - rank)))
    reps = [1] * (max(rank, len(reps)) - len(reps)) + reps
    v.out(v.g.node("Tile", [x, v.g.ints(reps)]))


@rule("pd_op.flip")
def _flip(v):
    rank = len(v.shape(0))
    axes = [_norm_axis(int(a), rank) for a in v.attrs["axis"]]
    big = np.iinfo(np.int64)
    g = v.g
    v.out(g.node("Slice", [v.x(0), g.ints([-1] * len(axes)), g.ints([big.min] * len(axes)), g.ints(axes),
                           g.ints([-1] * len(axes))]))


@rule("pd_op.gather", "pd_op.index_select")
def _gather(v):
    rank = len(v.shape(0))
    axis = _norm_axis(int(v.attrs.get("axis", 0)), rank)
    idx = v.x(1)
    if v.dtype(1) not in ("int32", "int64"):
        raise v.unsupported(f"index dtype {v.dtype(1)}")
    if len(v.shape(1)) > 1 or len(v.rshape()) != rank - 1 + len(v.shape(1)):
        raise v.unsupported(f"an index of shape {v.shape(1)}")
    v.out(v.g.node("Gather", [v.x(0), idx], axis=axis))


@rule("pd_op.take_along_axis")
def _take_along_axis(v):
    xs, idx = v.shape(0), v.shape(1)
    axis = _norm_axis(int(v.attrs["axis"]), len(xs))
    # GatherElements needs indices of arr's rank and, off the axis, arr's sizes (no broadcast)
    if len(xs) != len(idx) or any(a != b for i, (a, b) in enumerate(zip(xs, idx)) if i != axis):
        raise v.unsupported(f"indices of shape {idx} that broadcast against arr of shape {xs}")
    v.out(v.g.node("GatherElements", [v.x(0), v.x(1)], axis=axis))


@rule("pd_op.full")
def _full(v):
    shape = [int(d) for d in v.attrs["shape"]]
    if -1 in shape:
        raise v.unsupported("a dynamic shape")
    v.out(v.g.node("Identity", [v.g.const(np.full(shape, v.attrs["fill_value"], dtype=v.np_dtype()), "full")]))


@rule("pd_op.full_like")
def _full_like(v):
    from onnx import numpy_helper

    val = numpy_helper.from_array(np.asarray([v.attrs["fill_value"]], dtype=v.np_dtype()), "value")
    v.out(v.g.node("ConstantOfShape", [v.g.node("Shape", [v.x(0)])], value=val))


@rule("pd_op.arange")
def _arange(v):
    a = v.attrs
    v.out(v.g.node("Identity", [v.g.const(np.arange(a["start"], a["end"], a["step"]).astype(v.np_dtype()),
                                          "arange")]))


@rule("pd_op.tril_triu")
def _tril_triu(v):
    upper = 0 if v.attrs.get("lower", True) else 1
    v.out(v.g.node("Trilu", [v.x(0), v.g.const(np.asarray(int(v.attrs.get("diagonal", 0)), np.int64))],
                   upper=upper))


@rule("pd_op.cumsum")
def _cumsum(v):
    x = v.x(0)
    if v.attrs.get("flatten", False):
        x = v.g.node("Reshape", [x, v.g.ints([-1])])
    v.out(v.g.node("CumSum", [x, v.g.const(np.asarray(int(v.attrs.get("axis", -1)), np.int64))],
                   exclusive=int(bool(v.attrs.get("exclusive", False))),
                   reverse=int(bool(v.attrs.get("reverse", False)))))


# ------------------------------------------------------------------ reductions
_REDUCE = {"pd_op.mean": "ReduceMean", "pd_op.sum": "ReduceSum", "pd_op.max": "ReduceMax",
           "pd_op.min": "ReduceMin", "pd_op.amax": "ReduceMax", "pd_op.amin": "ReduceMin",
           "pd_op.prod": "ReduceProd", "pd_op.logsumexp": "ReduceLogSumExp"}


@rule(*_REDUCE)
def _reduce(v):
    x = v.x(0)
    t = v.rdtype()
    if v.name == "pd_op.mean" and t not in _FLOATS:
        raise v.unsupported(f"integer mean ({t})")
    x = v.g.cast(x, v.dtype(0), t)   # sum/prod with a dtype, sum of bools
    axes = [int(a) for a in v.attrs.get("axis", [])]
    if len(v.shape(0)) == 0:
        v.out(v.g.node("Identity", [x]))
        return
    v.out(v.g.reduce(_REDUCE[v.name], x, axes, v.attrs.get("keepdim", False)))


@rule("pd_op.var", "pd_op.std")
def _var(v):
    g = v.g
    shape = v.shape(0)
    rank = len(shape)
    if v.rdtype() not in _FLOATS:
        raise v.unsupported(f"dtype {v.rdtype()}")
    axes = [_norm_axis(int(a), rank) for a in v.attrs.get("axis", [])] or list(range(rank))
    if any(shape[a] == -1 for a in axes):
        raise v.unsupported("a reduction over a dynamic dim")
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    dt = v.np_dtype()
    x = v.x(0)
    d = g.node("Sub", [x, g.reduce("ReduceMean", x, axes, True)])
    ssq = g.reduce("ReduceSum", g.node("Mul", [d, d]), axes, v.attrs.get("keepdim", False))
    denom = n - 1 if v.attrs.get("unbiased", True) else n
    out = g.node("Div", [ssq, g.scalar(denom, dt)])
    v.out(g.node("Sqrt", [out]) if v.name == "pd_op.std" else out)


@rule("pd_op.argmax", "pd_op.argmin")
def _argmax(v):
    if v.attrs.get("flatten", False):
        raise v.unsupported("flatten=True")
    out = v.g.node("ArgMax" if v.name == "pd_op.argmax" else "ArgMin", [v.x(0)],
                   axis=int(v.attrs.get("axis", 0)), keepdims=int(bool(v.attrs.get("keepdim", False))))
    v.out(v.g.cast(out, "int64", v.rdtype()))
