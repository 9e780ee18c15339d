"""Which callables the fuzzer calls, found by introspection of the public namespaces (no
hand list): every public callable of oar, oar.Tensor (methods and operator dunders),
oar.nn.functional, oar.linalg, the EXTRA_NAMESPACES below, and every oar.nn Layer class
(constructed, then called). Each becomes a Target with the parameters the generator fills."""
import inspect
import re
from dataclasses import dataclass, field

import oar

REQUIRED = object()

# Calls that change the worker process itself rather than compute: they are not input
# validation and would make later calls in the same worker meaningless. Each with why.
SKIP = {
    "oar.set_device": "moves every later call to another device",
    "oar.device.set_device": "same as oar.set_device",
    "oar.set_flags": "global switches (log level, IR dumps) for every later call",
    "oar.set_num_threads": "resizes the thread pool every later call uses",
    "oar.set_default_dtype": "changes the dtype of every later creation call",
    "oar.set_printoptions": "global printing state",
    "oar.set_grad_enabled": "global autograd switch",
    "oar.summary": "prints a model summary (needs a model, covered by hapi tests)",
    # issue 18, amp/autograd slice: process-wide observers of every later op
    "oar.amp.debugging.enable_operator_stats_collection": "counts (and slows) every later op",
    "oar.amp.debugging.enable_tensor_checker": "checks every later op's outputs (may raise there)",
}

# Tensor dunders that are part of the API (operators, indexing) rather than object plumbing.
DUNDER_SKIP = {
    "__init__", "__new__", "__del__", "__reduce__", "__reduce_ex__", "__getstate__",
    "__setstate__", "__init_subclass__", "__subclasshook__", "__class__", "__dir__",
    "__getattribute__", "__setattr__", "__delattr__", "__sizeof__", "__format__",
    "__repr__", "__str__", "__hash__", "__dlpack__", "__dlpack_device__", "__array__",
}


@dataclass
class Param:
    name: str
    default: object = REQUIRED  # REQUIRED, or a Python value / its repr text
    var: bool = False           # *args


@dataclass
class Target:
    qualname: str               # as the reproducer writes it: "oar.sum", "Tensor.sum", ...
    kind: str                   # "func", "method", "layer"
    obj: object = None
    params: list = field(default_factory=list)
    call_params: list = field(default_factory=list)  # a layer's forward parameters


_DOC_SIG = re.compile(r"^\s*(?:\d+\.\s*)?\w+\((.*)\)\s*(?:->.*)?$")


def _split_top(text):
    """Splits a parameter list at top-level commas (defaults may hold brackets)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _literal(text):
    try:
        import ast
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def params_of(fn, drop_self=False):
    """The parameters of `fn`: from inspect.signature, else from a pybind11 docstring's
    first signature line; None when neither says."""
    try:
        sig = inspect.signature(fn)
        out = []
        for p in sig.parameters.values():
            if p.kind == p.VAR_KEYWORD:
                continue
            out.append(Param(p.name, REQUIRED if p.default is p.empty else p.default,
                             var=p.kind == p.VAR_POSITIONAL))
        if drop_self and out and out[0].name in ("self", "cls"):
            out = out[1:]
        return out
    except (TypeError, ValueError):
        pass
    for line in (getattr(fn, "__doc__", None) or "").splitlines():
        m = _DOC_SIG.match(line)
        if not m:
            continue
        out = []
        for part in _split_top(m.group(1)):
            name, _, default = part.partition("=")
            name = name.split(":")[0].strip().lstrip("*")
            if not name or name in ("self",):
                continue
            out.append(Param(name, _literal(default) if default else REQUIRED))
        return out
    return None


def _public(ns):
    for name in sorted(dir(ns)):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(ns, name)
        except Exception:  # a lazy attribute that fails is itself not callable by users
            continue
        if inspect.ismodule(obj) or not callable(obj):
            continue
        yield name, obj


# Function namespaces besides the top four, imported lazily by oar (so they are imported here).
# Namespaces of classes or state (amp, autograd, distributed, profiler) are not fuzzed blindly.
EXTRA_NAMESPACES = ["fft", "geometric", "metric", "vision.ops", "vision.transforms.functional",
                    "incubate.nn.functional"]
EXTRA_NAMESPACES += ["sparse", "sparse.nn.functional", "audio.functional", "text"]  # issue 18
# issue 18's static slice: the reader decorators, incubate.layers, the BFGS minimizers
EXTRA_NAMESPACES += ["reader", "incubate.layers", "incubate.optimizer.functional"]
EXTRA_NAMESPACES += ["amp.debugging"]  # issue 18's amp/autograd slice
EXTRA_NAMESPACES += ["signal", "random"]  # compat28: stft/istft/frame/overlap_add


def _namespaces():
    import importlib
    spaces = [("oar", oar), ("oar.nn.functional", oar.nn.functional), ("oar.linalg", oar.linalg)]
    for name in EXTRA_NAMESPACES:
        try:
            spaces.append((f"oar.{name}", importlib.import_module(f"oar.{name}")))
        except ImportError:
            continue
    return spaces


def discover():
    """All targets, in a stable order."""
    targets = []
    for prefix, ns in _namespaces():
        for name, obj in _public(ns):
            q = f"{prefix}.{name}"
            if q in SKIP:
                continue
            if prefix == "oar" and isinstance(obj, type) and issubclass(obj, oar.nn.Layer):
                continue  # layers are covered below with a forward call
            targets.append(Target(q, "func", obj, params_of(obj) or [Param("x"), Param("y", None)]))
    for name in sorted(dir(oar.Tensor)):
        if name.startswith("_") and not (name.startswith("__") and name not in DUNDER_SKIP):
            continue
        attr = inspect.getattr_static(oar.Tensor, name, None)
        if isinstance(attr, property) or type(attr).__name__ == "property":
            continue
        obj = getattr(oar.Tensor, name, None)
        if not callable(obj) or isinstance(obj, type) or getattr(obj, "__objclass__", None) is object:
            continue
        if name.startswith("__") and (type(obj).__name__ == "wrapper_descriptor"):
            continue  # inherited from object (__eq__ of object, __lt__ ...)
        ps = params_of(obj, drop_self=True)
        if ps and inspect.isfunction(obj) and ps[0].name not in ("self",):
            ps = ps[1:]  # a Python function installed as a method: its first parameter is the tensor
        if ps is None:
            ps = [Param("y", None)]
        targets.append(Target(f"Tensor.{name}", "method", obj, ps))
    for name, obj in _public(oar.nn):
        if not (isinstance(obj, type) and issubclass(obj, oar.nn.Layer)) or obj is oar.nn.Layer:
            continue
        init = params_of(obj.__init__, drop_self=True) or []
        fwd = params_of(obj.forward, drop_self=True) or [Param("x")]
        targets.append(Target(f"oar.nn.{name}", "layer", obj, init, fwd))
    return targets


def total_public():
    """How many public callables the namespaces hold before SKIP (for the report)."""
    return len(discover()) + len(SKIP)
