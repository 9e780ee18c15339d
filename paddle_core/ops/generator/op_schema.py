"""Parses the op definition files (paddle_core/ops/*.yaml) into OpDef objects.

Schema of one entry (see docs/notes/ops.md for the full description):

  - op: add                                  # name of the C++ function oar::ops::add and of oar.add
    args: (Tensor x, Tensor y)               # typed arguments with optional defaults
    output: Tensor(out)                      # one or more outputs: Tensor(a), Tensor(b)
    infer_meta: BroadcastBinaryInferMeta     # fills output dims/dtype (args: inputs, attrs, outputs)
    kernel: add                              # registry name (default: op); or {func, data_type}
    promote: [x, y]                          # cast these to their common dtype first
    view: TransposeView                      # no kernel: output aliases the input's storage
                                             # (a Tensor[] output: every part does, SplitView)
    backward: {x: "sum_to(grad, x)", y: "..."}   # C++ expressions over differentiable ops;
                                             # a key naming several inputs ("x, scale, bias")
                                             # maps to ONE expression returning a std::tuple
                                             # of their gradients, computed once per backward
    inplace: add_                            # also generate the in-place variant
    data_dependent: [out]                    # outputs whose 0 dims (set by infer_meta as
                                             # placeholders) the kernel sizes from the data:
                                             # dynamic (?) in the IR
    host_inputs: [shape]                     # tensor inputs the kernels read on the host (a
                                             # target shape): exempt from the same-place rule
                                             # and copied to the CPU for every kernel, eager
                                             # and in the executor (Note [Host inputs])
    side_effect: true                        # not pure: never folded, merged or removed
    inplace_kernel: true                     # the kernel may write into input 0's memory (out
                                             # aliasing x): the in-place variant and the
                                             # executor give it that memory (Note [Donated
                                             # outputs]); `grow`: out is larger (append_row)
    amp: white                               # autocast category: white (low precision),
                                             # black (float32); default gray
    decomp: "x * sigmoid(x)"                 # the op's (first) output as a C++ expression
                                             # over primitive ops (oar::decomp::<op>); or a
                                             # map {out_name: expr} naming every output
                                             # (multi-result rules: layer_norm_grad)
    spmd: elementwise                        # the op's SPMD rule (one of SPMD_RULES)
    python: {method: true, scalar: [y], name: add}
"""
import re
from dataclasses import dataclass
from typing import Dict, List, Optional

import yaml

# arg type -> (C++ parameter type, kernel parameter type)
ARG_TYPES = {
    "Tensor": ("const Tensor&", "const DenseTensor&"),
    "Tensor?": ("const Tensor&", "const DenseTensor*"),
    "Tensor[]": ("const std::vector<Tensor>&", "const std::vector<const DenseTensor*>&"),
    "Scalar": ("const Scalar&", "const Scalar&"),
    "int": ("int64_t", "int64_t"),
    "float": ("double", "double"),
    "bool": ("bool", "bool"),
    "str": ("const std::string&", "const std::string&"),
    "int[]": ("const std::vector<int64_t>&", "const std::vector<int64_t>&"),
    "float[]": ("const std::vector<double>&", "const std::vector<double>&"),
    "DataType": ("DataType", "DataType"),
    "Place": ("const Place&", "const Place&"),
}

AMP_CATEGORIES = ("white", "black", "gray")

# The SPMD rules an op may name (`spmd:`), one list, so that a typo is a build error
# naming the op. The first three are derived from the op's shape behaviour; the others
# are written per op (or per family) by the auto-parallel layer.
SPMD_RULES = (
    "elementwise",  # broadcasting n-ary ops: shardings merge per broadcast dimension
    "unary",        # elementwise unary ops: the output takes the input's sharding
    "reduction",    # reductions over `axis` (keepdim): reduced dims become Partial
    "matmul", "embedding", "softmax", "cross_entropy", "layer_norm", "reshape", "transpose",
    "concat", "split", "slice", "squeeze", "unsqueeze", "flatten", "gather", "index_select",
    "where", "cast", "dropout", "scaled_dot_product_attention", "conv2d", "optimizer",
    "expand", "tile", "stack", "sum_to", "layer_norm_grad",
    "along_axis",     # ops working along `axis` (cumsum, flip, topk...): those axes replicated
    "arg_reduction",  # argmax/argmin: the reduced axis replicated (an index cannot be Partial)
)


@dataclass
class Arg:
    type: str
    name: str
    default: Optional[str] = None

    @property
    def is_tensor(self):
        return self.type.startswith("Tensor")

    @property
    def cpp_type(self):
        return ARG_TYPES[self.type][0]

    @property
    def kernel_type(self):
        return ARG_TYPES[self.type][1]

    def cpp_default(self):
        d = self.default
        if d is None:
            return None
        if self.type == "DataType":
            return "DataType::UNDEFINED" if d in ("None", "UNDEFINED") else f"DataType::{d}"
        if self.type == "Place":
            return "Place()" if d in ("None",) else d
        if self.type in ("int[]", "float[]"):
            return "{" + d.strip("[]{}") + "}"
        if self.type == "str":
            return d if d.startswith('"') else f'"{d}"'
        if self.type == "Tensor?":
            return "Tensor()"
        if self.type == "Scalar":
            return f"Scalar({d})"
        return d


@dataclass
class Output:
    name: str
    is_list: bool = False


@dataclass
class BackwardRule:
    """One backward expression and the inputs whose gradients it yields: one input
    (the expression is that gradient) or several (it returns a std::tuple of theirs,
    in this order; Note [Multi-gradient backward] in docs/notes/ops.md)."""
    inputs: List[str]
    expr: str

    @property
    def is_multi(self):
        return len(self.inputs) > 1


@dataclass
class OpDef:
    name: str
    args: List[Arg]
    outputs: List[Output]
    infer_meta: Optional[str]
    kernel: Optional[str]
    kernel_dtype_from: Optional[str]
    promote: List[str]
    promote_float: bool
    view: Optional[str]
    backward: Dict[str, str]  # input -> the expression yielding its gradient (derived)
    backward_rules: List[BackwardRule]  # the backward as written: one entry per key
    inplace: Optional[str]
    python: dict
    data_dependent: List[str]
    host_inputs: List[str]
    side_effect: bool
    inplace_kernel: bool
    inplace_grows: bool
    amp: str
    decomp: Optional[str]
    spmd: Optional[str]
    source: str
    doc: str = ""
    decomp_all: bool = False  # `decomp:` was a map: it gives every output (a tuple)

    @property
    def tensor_args(self):
        return [a for a in self.args if a.is_tensor]

    @property
    def device_tensor_args(self):
        """The tensor arguments the kernels read on the op's place (all but host_inputs)."""
        return [a for a in self.args if a.is_tensor and a.name not in self.host_inputs]

    @property
    def attrs(self):
        return [a for a in self.args if not a.is_tensor]

    @property
    def differentiable(self):
        return bool(self.backward)


_ARG_RE = re.compile(r"^\s*([A-Za-z]+(?:\[\]|\?)?)\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(.+?))?\s*$")


def _split_top(s: str):
    """Splits on commas that are not inside brackets/braces/quotes."""
    parts, depth, cur, quote = [], 0, "", None
    for ch in s:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def parse_args(spec: str, op: str) -> List[Arg]:
    spec = spec.strip()
    assert spec.startswith("(") and spec.endswith(")"), f"{op}: args must be '(...)'"
    out = []
    for part in _split_top(spec[1:-1]):
        m = _ARG_RE.match(part)
        if not m or m.group(1) not in ARG_TYPES:
            raise ValueError(f"{op}: cannot parse argument '{part}'")
        out.append(Arg(m.group(1), m.group(2), m.group(3)))
    return out


def parse_decomp(value, output_spec: str, op: str) -> Optional[str]:
    """`decomp:` as the C++ expression oar::decomp::<op> returns: a string is the first
    output's; a map names every output ({x_grad: ..., scale_grad: ...}, in the outputs'
    order, no list outputs) and becomes a std::make_tuple of them."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{op}: decomp must be a string or a map of outputs, got {value!r}")
    outs = parse_outputs(output_spec, op)
    names = [o.name for o in outs]
    if list(value) != names or any(o.is_list for o in outs):
        raise ValueError(f"{op}: a decomp map must name the outputs {names} in order (no lists), got {list(value)}")
    return "std::make_tuple(" + ", ".join(f"Tensor({value[n]})" for n in names) + ")"


def parse_outputs(spec: str, op: str) -> List[Output]:
    outs = []
    for part in _split_top(spec):
        m = re.match(r"^(Tensor(?:\[\])?)\((\w+)\)$", part.strip())
        if not m:
            raise ValueError(f"{op}: cannot parse output '{part}'")
        outs.append(Output(m.group(2), m.group(1) == "Tensor[]"))
    return outs


def parse_backward(spec, op: str, args: List[Arg]) -> List[BackwardRule]:
    """`backward:` -> rules; a key may name several inputs ("x, scale, bias")."""
    tensors = {a.name: a for a in args if a.is_tensor}
    rules, seen = [], set()
    for key, expr in (spec or {}).items():
        names = [n.strip() for n in str(key).split(",")]
        for n in names:
            if n not in tensors:
                raise ValueError(f"{op}: backward names '{n}', which is not a tensor argument "
                                 f"(tensor arguments: {', '.join(tensors) or 'none'})")
            if n in seen:
                raise ValueError(f"{op}: backward gives the gradient of '{n}' twice")
            if len(names) > 1 and tensors[n].type == "Tensor[]":
                raise ValueError(f"{op}: backward key '{key}': a Tensor[] input ('{n}') cannot "
                                 "share a multi-gradient expression")
            seen.add(n)
        if not isinstance(expr, str) or not expr.strip():
            raise ValueError(f"{op}: backward of '{key}' must be a C++ expression string")
        rules.append(BackwardRule(names, expr))
    return rules


def parse_host_inputs(names, op: str, args: List[Arg]) -> List[str]:
    """`host_inputs:` -> names of Tensor / Tensor? arguments (a list of tensors is not one)."""
    kinds = {a.name: a.type for a in args}
    names = list(names or [])
    for n in names:
        if kinds.get(n) not in ("Tensor", "Tensor?"):
            raise ValueError(f"{op}: host_inputs names '{n}', which is not a Tensor or Tensor? argument "
                             f"(arguments: {', '.join(f'{t} {a}' for a, t in kinds.items())})")
    if len(set(names)) != len(names):
        raise ValueError(f"{op}: host_inputs names an argument twice: {names}")
    return names


def _check_choice(op: str, key: str, value, choices):
    if value is not None and value not in choices:
        raise ValueError(f"{op}: {key}: '{value}' is not one of: {', '.join(choices)}")
    return value


# Every key an entry may have; anything else is a typo (an error naming the op).
KNOWN_KEYS = {"op", "args", "output", "infer_meta", "kernel", "promote", "promote_float", "view",
              "backward", "inplace", "python", "data_dependent", "host_inputs", "side_effect", "inplace_kernel",
              "amp", "decomp", "spmd", "doc"}


def load_ops(paths) -> List[OpDef]:
    ops, seen = [], {}
    for path in paths:
        entries = yaml.safe_load(open(path)) or []
        for e in entries:
            name = e["op"]
            if name in seen:
                raise ValueError(f"op '{name}' is defined in both {seen[name]} and {path}")
            seen[name] = path
            unknown = sorted(set(e) - KNOWN_KEYS)
            if unknown:
                raise ValueError(f"{name}: unknown key(s) {', '.join(unknown)} in {path} "
                                 f"(known: {', '.join(sorted(KNOWN_KEYS))})")
            kernel = e.get("kernel", name if not e.get("view") else None)
            dtype_from = None
            if isinstance(kernel, dict):
                dtype_from = kernel.get("data_type")
                kernel = kernel.get("func", name)
            args = parse_args(e["args"], name)
            rules = parse_backward(e.get("backward"), name, args)
            ops.append(OpDef(
                name=name,
                args=args,
                outputs=parse_outputs(e.get("output", "Tensor(out)"), name),
                infer_meta=e.get("infer_meta"),
                kernel=kernel,
                kernel_dtype_from=dtype_from,
                promote=e.get("promote", []),
                promote_float=bool(e.get("promote_float", False)),
                view=e.get("view"),
                backward={n: r.expr for r in rules for n in r.inputs},
                backward_rules=rules,
                inplace=e.get("inplace"),
                python=e.get("python") or {},
                data_dependent=list(e.get("data_dependent", [])),
                host_inputs=parse_host_inputs(e.get("host_inputs"), name, args),
                side_effect=bool(e.get("side_effect", False)),
                inplace_kernel=bool(e.get("inplace_kernel", False)),
                inplace_grows=e.get("inplace_kernel") == "grow",
                amp=_check_choice(name, "amp", e.get("amp", "gray"), AMP_CATEGORIES),
                decomp=parse_decomp(e.get("decomp"), e.get("output", "Tensor(out)"), name),
                decomp_all=isinstance(e.get("decomp"), dict),
                spmd=_check_choice(name, "spmd", e.get("spmd"), SPMD_RULES),
                source=path,
                doc=e.get("doc", ""),
            ))
    return ops
