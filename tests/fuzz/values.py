"""Argument generation. A call is generated as Python source (a recipe) so the worker
evaluates exactly what a finding's reproducer will print: `T(...)` builds tensors
(runtime.py); everything else is a literal. The mix follows issue 16: valid tensors of
every dtype and rank 0-5 including 0-size, and invalid values (wrong types, None, NaN/inf,
negative and huge integers, mismatched shapes, non-contiguous views, bool/int tensors
where floats are expected). Parameter names and defaults steer the choice, so most calls
get past argument parsing and reach the kernels; no op is named here."""
import random

from .runtime import DTYPES
from .targets import REQUIRED

FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
HUGE_INTS = [2**31, 2**31 - 1, 2**32 + 1, 2**62, 2**63 - 1, -2**63, -2**31, 10**12]
SMALL_INTS = [0, 1, 2, 3, 4, -1, -2, -3, 7]
FLOATS = [0.0, 0.5, -1.5, 1.0, 2.0, 1e-12, 1e308, float("nan"), float("inf"), float("-inf")]
STRINGS = ["NCHW", "NHWC", "NCL", "NCDHW", "mean", "sum", "none", "float32", "int64", "bool",
           "", "bogus", "cpu", "nearest", "bilinear", "constant", "reflect", "fro", "nuc"]
TENSOR_HINTS = ("x", "y", "input", "other", "weight", "bias", "label", "index", "indices",
                "mask", "condition", "value", "values", "src", "updates", "logit", "target",
                "query", "key", "grad", "tensor", "vec", "mat", "a", "b", "q", "k", "v")
LIST_HINTS = ("shape", "size", "perm", "axes", "dims", "repeat", "padding", "stride",
              "kernel", "output_size", "sections", "pad", "starts", "ends", "strides")
INT_HINTS = ("axis", "dim", "num", "k", "n", "groups", "bins", "offset", "index", "start",
             "end", "step", "count", "rank", "diagonal", "order", "p", "seed", "dilation")


class Gen:
    """One call's argument source. `rng` is seeded by (seed, call number), so a run is
    reproducible call by call."""

    def __init__(self, rng: random.Random):
        self.r = rng
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4, 5])
        self.base_shape = [rng.choice([0, 1, 2, 3, 3, 4, 5]) if rng.random() < 0.15
                           else rng.choice([1, 2, 3, 4]) for _ in range(rank)]
        self.base_dtype = rng.choice(DTYPES) if rng.random() < 0.3 else rng.choice(FLOAT_DTYPES[:2])
        self.n_tensors = 0

    # ---- tensors
    def shape(self):
        r = self.r
        u = r.random()
        if u < 0.7:
            return list(self.base_shape)  # same shape: the call gets past broadcasting
        if u < 0.8:
            return self.base_shape[r.randrange(len(self.base_shape)):] if self.base_shape else []
        rank = r.randrange(6)
        return [r.choice([0, 1, 2, 3, 5]) for _ in range(rank)]

    def tensor(self, dtype=None, shape=None):
        r = self.r
        if dtype is None:
            dtype = self.base_dtype if r.random() < 0.7 else r.choice(DTYPES)
        shape = self.shape() if shape is None else shape
        kind = r.choice(["rand", "rand", "rand", "int", "pos", "special", "extreme", "zero"])
        view = r.choice([None] * 6 + ["t", "step", "expand"])
        self.n_tensors += 1
        extra = ""
        if view:
            extra += f", view={view!r}"
        if r.random() < 0.2:
            extra += ", grad=True"
        return f"T({dtype!r}, {shape}, {kind!r}, {r.randrange(1000)}{extra})"

    # ---- scalars and lists
    def int_(self):
        r = self.r
        return repr(r.choice(SMALL_INTS) if r.random() < 0.8 else r.choice(HUGE_INTS))

    def int_list(self):
        r = self.r
        u = r.random()
        if u < 0.5:
            return repr([r.choice([1, 2, 3]) for _ in range(r.randrange(1, 4))])
        if u < 0.65:
            return repr(list(self.base_shape))
        if u < 0.8:
            return repr([r.choice(SMALL_INTS) for _ in range(r.randrange(0, 7))])
        return repr([r.choice(SMALL_INTS + HUGE_INTS) for _ in range(r.randrange(1, 4))])

    def anything(self):
        r = self.r
        u = r.random()
        if u < 0.35:
            return self.tensor()
        if u < 0.5:
            return self.int_()
        if u < 0.6:
            return repr(r.choice(FLOATS)).replace("nan", "float('nan')").replace("inf", "float('inf')")
        if u < 0.68:
            return self.int_list()
        if u < 0.75:
            return repr(r.choice(STRINGS))
        if u < 0.82:
            return r.choice(["None", "True", "False"])
        if u < 0.9:
            return f"[{self.tensor()}, {self.tensor()}]"
        return r.choice(["object()", "()", "{}", "oar.float32", "oar.int64", "oar.bool",
                         "1j", "b'x'", "[[1, 2], [3]]", "np.float64(2.0)", "np.arange(3)"])

    def like_default(self, default):
        """A value of the default's kind, sometimes outside its valid range."""
        r = self.r
        if isinstance(default, bool):
            return r.choice(["True", "False"])
        if isinstance(default, int):
            return self.int_()
        if isinstance(default, float):
            return repr(r.choice(FLOATS)).replace("nan", "float('nan')").replace("inf", "float('inf')")
        if isinstance(default, str):
            return repr(r.choice(STRINGS + [default]))
        if isinstance(default, (list, tuple)):
            return self.int_list()
        return self.anything()

    def param(self, p):
        """Source for parameter `p`, or None to leave it at its default."""
        r = self.r
        name = p.name.lower()
        has_default = p.default is not REQUIRED
        if has_default and r.random() < 0.55:
            return None
        if name == "name":
            return "None"
        if r.random() < 0.15:
            return self.anything()  # any type, anywhere: the wrong-type class
        if name == "dtype":
            return repr(r.choice(DTYPES + ["complex64", "bogus"])) if r.random() < 0.8 else "oar.float32"
        if any(h == name or name.startswith(h + "_") or name.endswith("_" + h) for h in LIST_HINTS) \
                or name.endswith(("shape", "size", "sizes")):
            return self.int_list() if r.random() < 0.7 else self.int_()
        if any(h == name or name.startswith(h) for h in TENSOR_HINTS) and not has_default:
            return self.tensor()
        if any(h == name or name.startswith(h) or name.endswith(h) for h in INT_HINTS):
            return self.int_() if r.random() < 0.8 else self.int_list()
        if has_default and p.default is not None:
            return self.like_default(p.default)
        if name in ("tensors", "inputs", "xs", "x_list", "arrays"):
            return "[" + ", ".join(self.tensor() for _ in range(r.randrange(0, 4))) + "]"
        return self.tensor() if r.random() < 0.75 else self.anything()

    def args(self, params):
        """'a, b, key=c' for `params`: positional up to the first skipped default, then
        keywords (so skipping a middle default keeps later ones at their names)."""
        parts, positional = [], True
        for p in params:
            if p.var:
                parts += [self.tensor() for _ in range(self.r.randrange(0, 3))]
                positional = False
                continue
            v = self.param(p)
            if v is None:
                positional = False
                continue
            parts.append(v if positional else f"{p.name}={v}")
        return ", ".join(parts)


def recipe(target, rng):
    """The source of one call of `target`, as one expression statement."""
    g = Gen(rng)
    if target.kind == "func":
        return f"{target.qualname}({g.args(target.params)})"
    if target.kind == "method":
        name = target.qualname.split(".", 1)[1]
        return f"{g.tensor()}.{name}({g.args(target.params)})"
    # A layer: small sizes so construction usually succeeds, then a forward call.
    ctor = g.args(target.params)
    return f"{target.qualname}({ctor})({g.args(target.call_params)})"
