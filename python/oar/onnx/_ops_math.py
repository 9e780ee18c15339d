"""Translation rules for the remaining math ops (Note [ONNX export] in docs/notes/jit.md):
more unary/binary elementwise functions with Oar's exact definitions (round half away
from zero, Python-style floor_divide/remainder, NaN-ignoring fmax/fmin...), boolean and
norm reductions, sum_to, creation ops computed at export time (eye, linspace), random
ops (uniform -> RandomUniform, gaussian -> RandomNormal, randint and randperm from
RandomUniform: same distributions, another random stream), and det -> Det."""
import math

import numpy as np

from ._ops import _FLOATS, _norm_axis, rule

_UNARY = {"pd_op.asinh": "Asinh", "pd_op.acosh": "Acosh", "pd_op.atanh": "Atanh"}


def _float_only(v):
    if v.rdtype() not in _FLOATS:
        raise v.unsupported(f"dtype {v.rdtype()}")


@rule(*_UNARY)
def _unary(v):
    _float_only(v)
    v.out(v.g.node(_UNARY[v.name], [v.x(0)]))


@rule("pd_op.log2", "pd_op.log10")
def _log_base(v):
    _float_only(v)
    base = 2.0 if v.name == "pd_op.log2" else 10.0
    v.out(v.g.node("Div", [v.g.node("Log", [v.x(0)]), v.g.scalar(math.log(base), v.np_dtype())]))


@rule("pd_op.trunc", "pd_op.trunc_")
def _trunc_rule(v):
    g, x = v.g, v.x(0)
    if v.rdtype() not in _FLOATS:
        v.out(g.node("Identity", [x]))
        return
    neg = g.node("Less", [x, g.scalar(0, v.np_dtype())])
    v.out(g.node("Where", [neg, g.node("Ceil", [x]), g.node("Floor", [x])]))


def _round_half_away(g, x, dt):
    """C's round: ONNX Round breaks ties to even, so ties (|x - trunc(x)| == 0.5) are moved
    away from zero by hand."""
    zero, half = g.scalar(0, dt), g.scalar(0.5, dt)
    t = g.node("Where", [g.node("Less", [x, zero]), g.node("Ceil", [x]), g.node("Floor", [x])])
    tie = g.node("Equal", [g.node("Abs", [g.node("Sub", [x, t])]), half])
    return g.node("Where", [tie, g.node("Add", [t, g.node("Sign", [x])]), g.node("Round", [x])])


@rule("pd_op.round", "pd_op.round_")
def _round(v):
    g, x = v.g, v.x(0)
    if v.rdtype() not in _FLOATS:
        v.out(g.node("Identity", [x]))
        return
    dt = v.np_dtype()
    d = int(v.attrs.get("decimals", 0))
    if d == 0:
        v.out(_round_half_away(g, x, dt))
        return
    if dt != np.float32:
        raise v.unsupported(f"decimals={d} on dtype {v.rdtype()}")
    s = g.scalar(10.0 ** d, dt)
    v.out(g.node("Div", [_round_half_away(g, g.node("Mul", [x, s]), dt), s]))


@rule("pd_op.isinf", "pd_op.isfinite")
def _isinf(v):
    g, x = v.g, v.x(0)
    if v.dtype(0) not in _FLOATS:
        from onnx import numpy_helper

        fill = numpy_helper.from_array(np.asarray([v.name == "pd_op.isfinite"]), "value")
        v.out(g.node("ConstantOfShape", [g.node("Shape", [x])], value=fill))
        return
    if v.name == "pd_op.isinf":
        v.out(g.node("IsInf", [x]))
    else:
        v.out(g.node("Not", [g.node("Or", [g.node("IsInf", [x]), g.node("IsNaN", [x])])]))


@rule("pd_op.nan_to_num", "pd_op.nan_to_num_")
def _nan_to_num(v):
    _float_only(v)
    g, x, dt = v.g, v.x(0), v.np_dtype()
    lim = float(np.finfo(dt).max)

    def clamp(val):
        val = float(val)
        return val if math.isinf(val) else max(-lim, min(lim, val))

    y = g.node("Where", [g.node("IsNaN", [x]), g.scalar(float(v.attrs["nan"]), dt), x])
    y = g.node("Where", [g.node("IsInf", [x], detect_negative=0), g.scalar(clamp(v.attrs["posinf"]), dt), y])
    v.out(g.node("Where", [g.node("IsInf", [x], detect_positive=0), g.scalar(clamp(v.attrs["neginf"]), dt), y]))


@rule("pd_op.fmax", "pd_op.fmin")
def _fmax(v):
    g = v.g
    t = v.rdtype()
    x, y = v.x_as(0, t), v.x_as(1, t)
    if t not in _FLOATS:
        v.out(g.node("Max" if v.name == "pd_op.fmax" else "Min", [x, y]))
        return
    cmp = g.node("GreaterOrEqual" if v.name == "pd_op.fmax" else "LessOrEqual", [x, y])
    v.out(g.node("Where", [g.node("Or", [g.node("IsNaN", [y]), cmp]), x, y]))


@rule("pd_op.atan2")
def _atan2(v):
    # atan(x / y), moved to the right quadrant; y == 0 gives +-pi/2 (0 when x is 0 too)
    _float_only(v)
    g, dt = v.g, v.np_dtype()
    t = v.rdtype()
    x, y = v.x_as(0, t), v.x_as(1, t)
    zero = g.scalar(0, dt)
    base = g.node("Atan", [g.node("Div", [x, y])])
    pi = g.node("Where", [g.node("Less", [x, zero]), g.scalar(-math.pi, dt), g.scalar(math.pi, dt)])
    r = g.node("Where", [g.node("Less", [y, zero]), g.node("Add", [base, pi]), base])
    axis = g.node("Mul", [g.node("Sign", [x]), g.scalar(math.pi / 2, dt)])
    v.out(g.node("Where", [g.node("Equal", [y, zero]), axis, r]))


@rule("pd_op.lerp", "pd_op.lerp_")
def _lerp(v):
    _float_only(v)
    g, t = v.g, v.rdtype()
    x, y, w = v.x_as(0, t), v.x_as(1, t), v.x_as(2, t)
    v.out(g.node("Add", [x, g.node("Mul", [w, g.node("Sub", [y, x])])]))


@rule("pd_op.increment", "pd_op.increment_")
def _increment(v):
    v.out(v.g.node("Add", [v.x(0), v.g.scalar(v.attrs.get("value", 1.0), v.np_dtype())]))


@rule("pd_op.remainder", "pd_op.remainder_")
def _remainder(v):
    # Python's: the sign of y (ONNX Mod with fmod=0 does that for ints; floats need fmod=1 + fix)
    g, t = v.g, v.rdtype()
    x, y = v.x_as(0, t), v.x_as(1, t)
    if t not in _FLOATS:
        v.out(g.node("Mod", [x, y], fmod=0))
        return
    r = g.node("Mod", [x, y], fmod=1)
    zero = g.scalar(0, v.np_dtype())
    fix = g.node("And", [g.node("Not", [g.node("Equal", [r, zero])]),
                         g.node("Xor", [g.node("Less", [r, zero]), g.node("Less", [y, zero])])])
    v.out(g.node("Where", [fix, g.node("Add", [r, y]), r]))


@rule("pd_op.floor_divide")
def _floor_divide(v):
    g, t = v.g, v.rdtype()
    x, y = v.x_as(0, t), v.x_as(1, t)
    if t in _FLOATS:
        v.out(g.node("Floor", [g.node("Div", [x, y])]))
        return
    if t == "bool":
        raise v.unsupported("bool operands")
    # ONNX integer Div truncates; step down where the remainder is nonzero and the signs differ
    q = g.node("Div", [x, y])
    zero = g.const(np.asarray(0, v.np_dtype()))
    r = g.node("Sub", [x, g.node("Mul", [q, y])])
    fix = g.node("And", [g.node("Not", [g.node("Equal", [r, zero])]),
                         g.node("Xor", [g.node("Less", [x, zero]), g.node("Less", [y, zero])])])
    v.out(g.node("Sub", [q, g.cast(fix, "bool", t)]))


# ------------------------------------------------------------------ activations
@rule("pd_op.celu")
def _celu(v):
    _float_only(v)
    v.out(v.g.node("Celu", [v.x(0)], alpha=float(v.attrs.get("alpha", 1.0))))


@rule("pd_op.tanhshrink")
def _tanhshrink(v):
    v.out(v.g.node("Sub", [v.x(0), v.g.node("Tanh", [v.x(0)])]))


@rule("pd_op.hardshrink", "pd_op.softshrink")
def _shrink(v):
    _float_only(v)
    thr = float(v.attrs.get("threshold", 0.5))
    v.out(v.g.node("Shrink", [v.x(0)], lambd=thr, bias=thr if v.name == "pd_op.softshrink" else 0.0))


@rule("pd_op.thresholded_relu")
def _thresholded_relu(v):
    g, x, dt = v.g, v.x(0), v.np_dtype()
    v.out(g.node("Where", [g.node("Greater", [x, g.scalar(v.attrs.get("threshold", 1.0), dt)]), x,
                           g.scalar(v.attrs.get("value", 0.0), dt)]))


@rule("pd_op.huber")
def _huber(v):
    """smooth_l1_loss's pointwise part: 0.5 x^2 where |x| < delta, else delta (|x| - delta / 2)."""
    _float_only(v)
    g, x, dt = v.g, v.x(0), v.np_dtype()
    delta = float(v.attrs.get("delta", 1.0))
    a = g.node("Abs", [x])
    near = g.node("Mul", [g.node("Mul", [x, x]), g.scalar(0.5, dt)])
    far = g.node("Mul", [g.node("Sub", [a, g.scalar(0.5 * delta, dt)]), g.scalar(delta, dt)])
    v.out(g.node("Where", [g.node("Less", [a, g.scalar(delta, dt)]), near, far]))


@rule("pd_op.sigmoid_cross_entropy_with_logits")
def _sigmoid_cross_entropy_with_logits(v):
    """binary_cross_entropy_with_logits' pointwise loss: max(x, 0) - x label + log1p(exp(-|x|))."""
    _float_only(v)
    g, dt = v.g, v.np_dtype()
    x, y = v.x(0), v.x(1)
    tail = g.node("Log", [g.node("Add", [g.node("Exp", [g.node("Neg", [g.node("Abs", [x])])]), g.scalar(1.0, dt)])])
    v.out(g.node("Add", [g.node("Sub", [g.node("Relu", [x]), g.node("Mul", [x, y])]), tail]))


# ------------------------------------------------------------------ reductions
@rule("pd_op.all", "pd_op.any")
def _all_any(v):
    g = v.g
    x = g.cast(g.cast(v.x(0), v.dtype(0), "bool"), "bool", "int32")
    axes = [int(a) for a in v.attrs.get("axis", [])]
    if len(v.shape(0)) == 0:
        r = x
    else:
        r = g.reduce("ReduceMin" if v.name == "pd_op.all" else "ReduceMax", x, axes,
                     v.attrs.get("keepdim", False))
    v.out(g.cast(r, "int32", v.rdtype()))


@rule("pd_op.p_norm")
def _p_norm(v):
    _float_only(v)
    g, dt = v.g, v.np_dtype()
    p = float(v.attrs.get("porder", 2.0))
    axes = [int(a) for a in v.attrs.get("axis", [])]
    keep = v.attrs.get("keepdim", False)
    x = v.x_as(0, v.rdtype())
    if len(v.shape(0)) == 0:
        x = g.unsqueeze(x, [0])
        axes, keep = [0], False
    if p == 2.0:
        y = g.reduce("ReduceL2", x, axes, keep)
    elif p == 1.0:
        y = g.reduce("ReduceL1", x, axes, keep)
    elif math.isinf(p):
        y = g.reduce("ReduceMax" if p > 0 else "ReduceMin", g.node("Abs", [x]), axes, keep)
    elif p == 0.0:
        nz = g.cast(g.node("Not", [g.node("Equal", [x, g.scalar(0, dt)])]), "bool", v.rdtype())
        y = g.reduce("ReduceSum", nz, axes, keep)
    else:
        s = g.reduce("ReduceSum", g.node("Pow", [g.node("Abs", [x]), g.scalar(p, dt)]), axes, keep)
        y = g.node("Pow", [s, g.scalar(1.0 / p, dt)])
    v.out(y)


@rule("pd_op.sum_to")
def _sum_to(v):
    # sum x down to `shape` (the reverse of a broadcast): extra leading dims, and dims that are 1
    g = v.g
    xs = v.shape(0)
    shape = [int(d) for d in v.attrs["shape"]]
    lead = len(xs) - len(shape)
    if lead < 0:
        raise v.unsupported(f"shape {shape} longer than the input's {xs}")
    x = v.x(0)
    ones = [lead + i for i, d in enumerate(shape) if d == 1 and xs[lead + i] != 1]
    if ones:
        x = g.reduce("ReduceSum", x, ones, True)
    if lead:
        x = g.reduce("ReduceSum", x, list(range(lead)), False)
    v.out(x if x != v.x(0) else g.node("Identity", [x]))


# ------------------------------------------------------------------ creation
def _eager_constant(v, make):
    """A creation op without inputs, computed by Oar's own kernel at export time."""
    t = make()
    v.out(v.g.node("Identity", [v.g.const(np.ascontiguousarray(t.numpy()), v.name.split(".")[-1])]))


@rule("pd_op.eye")
def _eye(v):
    import oar

    a = v.attrs
    cols = int(a.get("num_columns", -1))
    _eager_constant(v, lambda: oar.eye(int(a["num_rows"]), None if cols < 0 else cols, dtype=v.rdtype()))


@rule("pd_op.linspace")
def _linspace(v):
    import oar

    a = v.attrs
    _eager_constant(v, lambda: oar.linspace(float(a["start"]), float(a["stop"]), int(a["num"]), dtype=v.rdtype()))


# ------------------------------------------------------------------ random
def _random_shape(v):
    shape = [int(d) for d in v.attrs["shape"]]
    if any(d < 0 for d in shape):
        raise v.unsupported(f"a dynamic shape {shape}")
    return shape


def _seed(v):
    seed = int(v.attrs.get("seed", 0))
    return float(seed) if seed else None


@rule("pd_op.uniform")
def _uniform(v):
    _float_only(v)
    from ._graph import onnx_type

    v.out(v.g.node("RandomUniform", [], shape=_random_shape(v), low=float(v.attrs.get("min", -1.0)),
                   high=float(v.attrs.get("max", 1.0)), dtype=onnx_type(v.results[0].dtype, "uniform"),
                   seed=_seed(v)))


@rule("pd_op.gaussian")
def _gaussian(v):
    _float_only(v)
    from ._graph import onnx_type

    v.out(v.g.node("RandomNormal", [], shape=_random_shape(v), mean=float(v.attrs.get("mean", 0.0)),
                   scale=float(v.attrs.get("std", 1.0)), dtype=onnx_type(v.results[0].dtype, "gaussian"),
                   seed=_seed(v)))


@rule("pd_op.randint")
def _randint(v):
    # floor of a double uniform in [low, high): every integer of the range equally likely
    from onnx import TensorProto

    g = v.g
    lo, hi = int(v.attrs.get("low", 0)), int(v.attrs["high"])
    u = g.node("RandomUniform", [], shape=_random_shape(v), low=float(lo), high=float(hi), dtype=TensorProto.DOUBLE)
    u = g.node("Min", [g.node("Floor", [u]), g.scalar(float(hi - 1), np.float64)])
    v.out(g.cast(u, "float64", v.rdtype()))


@rule("pd_op.randperm")
def _randperm(v):
    # the order that sorts n iid uniforms is a uniformly random permutation
    from onnx import TensorProto

    g = v.g
    n = int(v.attrs["n"])
    u = g.node("RandomUniform", [], shape=[n], low=0.0, high=1.0, dtype=TensorProto.DOUBLE)
    _, idx = g.node("TopK", [u, g.ints([n])], outputs=2, axis=0, largest=0, sorted=1)
    v.out(g.cast(idx, "int64", v.rdtype()))


# ------------------------------------------------------------------ linear algebra
@rule("pd_op.det")
def _det(v):
    _float_only(v)
    if len(v.shape(0)) < 2:
        raise v.unsupported(f"a {len(v.shape(0))}-D input")
    v.out(v.g.node("Det", [v.x(0)]))


@rule("pd_op.diagonal")
def _diagonal(v):
    # the diagonal of two static axes: moved last, flattened, every (n + 1)-th element
    g = v.g
    xs = v.shape(0)
    rank = len(xs)
    a1 = _norm_axis(int(v.attrs.get("axis1", 0)), rank)
    a2 = _norm_axis(int(v.attrs.get("axis2", 1)), rank)
    off = int(v.attrs.get("offset", 0))
    n1, n2 = xs[a1], xs[a2]
    if -1 in (n1, n2):
        raise v.unsupported("a diagonal over dynamic axes")
    rest = [d for d in range(rank) if d not in (a1, a2)]
    x = g.transpose(v.x(0), rest + [a1, a2])
    rows = range(max(0, -off), min(n1, n2 - off))
    flat = np.asarray([r * n2 + r + off for r in rows], np.int64)
    x = g.node("Reshape", [x, g.ints([0] * len(rest) + [n1 * n2])])
    v.out(g.node("Gather", [x, g.const(flat, "diag")], axis=len(rest)))
