"""Parses the op definition files (paddle_core/ops/*.yaml) into OpDef objects.

Schema of one entry (see docs/notes/ops.md for the full description):

  - op: add                                  # name of the C++ function oar::ops::add and of oar.add
    args: (Tensor x, Tensor y)               # typed arguments with optional defaults
    output: Tensor(out)                      # one or more outputs: Tensor(a), Tensor(b)
    infer_meta: BroadcastBinaryInferMeta     # fills output dims/dtype (args: inputs, attrs, outputs)
    kernel: add                              # registry name (default: op); or {func, data_type}
    promote: [x, y]                          # cast these to their common dtype first
    view: TransposeView                      # no kernel: output aliases the input's storage
    backward: {x: "sum_to(grad, x)", y: "..."}   # C++ expressions over differentiable ops
    inplace: add_                            # also generate the in-place variant
    data_dependent: [out]                    # outputs whose 0 dims (set by infer_meta as
                                             # placeholders) the kernel sizes from the data:
                                             # dynamic (?) in the IR
    side_effect: true                        # not pure: never folded, merged or removed
    inplace_kernel: true                     # the kernel may write into input 0's memory (out
                                             # aliasing x): the in-place variant does so
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
    backward: Dict[str, str]
    inplace: Optional[str]
    python: dict
    data_dependent: List[str]
    side_effect: bool
    inplace_kernel: bool
    source: str
    doc: str = ""

    @property
    def tensor_args(self):
        return [a for a in self.args if a.is_tensor]

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


def parse_outputs(spec: str, op: str) -> List[Output]:
    outs = []
    for part in _split_top(spec):
        m = re.match(r"^(Tensor(?:\[\])?)\((\w+)\)$", part.strip())
        if not m:
            raise ValueError(f"{op}: cannot parse output '{part}'")
        outs.append(Output(m.group(2), m.group(1) == "Tensor[]"))
    return outs


def load_ops(paths) -> List[OpDef]:
    ops, seen = [], {}
    for path in paths:
        entries = yaml.safe_load(open(path)) or []
        for e in entries:
            name = e["op"]
            if name in seen:
                raise ValueError(f"op '{name}' is defined in both {seen[name]} and {path}")
            seen[name] = path
            kernel = e.get("kernel", name if not e.get("view") and not e.get("composite") else None)
            dtype_from = None
            if isinstance(kernel, dict):
                dtype_from = kernel.get("data_type")
                kernel = kernel.get("func", name)
            ops.append(OpDef(
                name=name,
                args=parse_args(e["args"], name),
                outputs=parse_outputs(e.get("output", "Tensor(out)"), name),
                infer_meta=e.get("infer_meta"),
                kernel=kernel,
                kernel_dtype_from=dtype_from,
                promote=e.get("promote", []),
                promote_float=bool(e.get("promote_float", False)),
                view=e.get("view"),
                backward=e.get("backward") or {},
                inplace=e.get("inplace"),
                python=e.get("python") or {},
                data_dependent=list(e.get("data_dependent", [])),
                side_effect=bool(e.get("side_effect", False)),
                inplace_kernel=bool(e.get("inplace_kernel", False)),
                source=path,
                doc=e.get("doc", ""),
            ))
    return ops
