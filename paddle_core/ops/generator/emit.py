"""C++ emitters shared by the generators (gen_ops.py: eager op functions and kernel steps;
gen_pir_ops.py: the IR's shape inference), so promotion and shape inference are written
once and eager, the executor and the IR agree by construction."""
import argparse
import os
import re


def write_if_changed(path, text):
    """Writes `text` to `path` unless it already holds it, so builds stay incremental."""
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)


def generator_args(*extra):
    """A generator's command line: --out DIR [extra options] yaml...; returns the parsed
    arguments and DIR/oar_generated (created)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    for opt in extra:
        ap.add_argument(opt, required=True)
    ap.add_argument("yaml", nargs="+")
    args = ap.parse_args()
    d = os.path.join(args.out, "oar_generated")
    os.makedirs(d, exist_ok=True)
    return args, d


def api_params(op, with_defaults):
    """The C++ parameter list of an op function (`with_defaults`: for a declaration)."""
    ps = []
    for a in op.args:
        p = f"{a.cpp_type} {a.name}"
        if with_defaults and a.default is not None:
            p += f" = {a.cpp_default()}"
        ps.append(p)
    return ", ".join(ps)


def promoted(op):
    """The tensor arguments cast to their common dtype before the kernel (Paddle's
    promotion): the op's `promote` list, or its first tensor when `promote_float`."""
    tensors = op.tensor_args
    names = op.promote or ([tensors[0].name] if op.promote_float and tensors else [])
    kinds = {a.name: a.type for a in tensors}
    return [n for n in names if kinds.get(n) == "Tensor"]


def emit_promotion(op, dtype_of, apply, indent="  "):
    """Lines computing `common` from the promoted arguments' dtypes (`dtype_of(name)` is
    a C++ expression) and applying it to each (`apply(name)` is a C++ statement)."""
    names = promoted(op)
    if not names:
        return []
    L = [f"{indent}DataType common = {dtype_of(names[0])};"]
    for n in names[1:]:
        L.append(f"{indent}common = promote_types(common, {dtype_of(n)});")
    if op.promote_float:
        L.append(f"{indent}if (is_integral(common, true)) common = default_float_dtype();")
    L.extend(f"{indent}{apply(n)}" for n in names)
    return L


def infer_meta_call(op, karg, outputs):
    """The infer-meta call: `karg(arg)` is the C++ expression of an argument (tensor
    metadata or attribute), `outputs` the expressions of the output pointers."""
    m = re.match(r"^(\w+)\((.*)\)$", op.infer_meta.strip())
    meta_fn = m.group(1) if m else op.infer_meta.strip()
    params = [p.strip() for p in m.group(2).split(",") if p.strip()] if m else None
    by_name = {a.name: a for a in op.args}
    args = [karg(by_name[p]) for p in params] if params is not None else [karg(a) for a in op.args]
    return f"{meta_fn}({', '.join(args + list(outputs))});"


def infer_meta_params(op):
    """The argument names the infer-meta call reads (all of them when it names none)."""
    m = re.match(r"^\w+\((.*)\)$", (op.infer_meta or "").strip())
    if m and not op.view:
        return {p.strip() for p in m.group(1).split(",")}
    return {a.name for a in op.args}
