"""The walk over a PIR block: builtin ops (parameters, constants, tensor lists), control
flow (cf.if -> ONNX If) and dispatch of pd_op ops to the rules in _ops.py."""
import numpy as np

from onnx import helper, numpy_helper

from ._graph import Graph, dtype_name, onnx_type
from ._ops import RULES, OpView


def _tensor_to_numpy(t, what):
    name = dtype_name(t.dtype)
    if name == "bfloat16":
        raise NotImplementedError(f"onnx.export: {what} is bfloat16; cast the layer to float32 before exporting")
    return np.ascontiguousarray(t.numpy())


def translate_block(g, ops, params, program):
    for op in ops:
        name = op.name
        if name in ("builtin.input", "builtin.output", "cf.yield"):
            continue   # handled by the caller (graph inputs/outputs, branch outputs)
        if name == "builtin.parameter":
            pname = op.attrs()["name"]
            v = op.result(0)
            if pname not in params:
                raise ValueError(f"onnx.export: no data for parameter '{pname}' (it is not a parameter or "
                                 f"buffer of the layer)")
            t = params[pname]
            if list(t.shape) != list(v.shape) or dtype_name(t.dtype) != dtype_name(v.dtype):
                raise ValueError(f"onnx.export: parameter '{pname}' has shape {list(t.shape)} {t.dtype}, "
                                 f"the program expects {list(v.shape)} {v.dtype}")
            onnx_type(v.dtype, f"parameter '{pname}'")
            arr = _tensor_to_numpy(t, f"parameter '{pname}'")
            iname = g.fresh(pname)
            g.root.initializers.append(numpy_helper.from_array(arr, iname))
            g.bind(v, iname)
        elif name == "builtin.constant":
            v = op.result(0)
            onnx_type(v.dtype, "a constant")
            g.bind(v, g.const(_tensor_to_numpy(v.constant(), "a constant"), "const"))
        elif name == "builtin.combine":
            g.bind(op.result(0), [g.get(x, name) for x in op.operands()])
        elif name == "builtin.split":
            names = g.get(op.operands()[0], name)
            results = op.results()
            if not isinstance(names, list) or len(names) != len(results):
                raise NotImplementedError("onnx.export: builtin.split of a value that is not a tensor list")
            for r, n in zip(results, names):
                g.bind(r, n)
        elif name == "builtin.set_parameter":
            raise NotImplementedError(
                "onnx.export: op 'builtin.set_parameter' is not supported: the program writes layer state "
                "(training-mode statistics); call layer.eval() before exporting")
        elif name == "cf.if":
            _translate_if(g, op, params, program)
        elif name in RULES:
            RULES[name](OpView(g, op))
            for i, r in enumerate(op.results()):
                if not g.has(r) and r.num_uses > 0:
                    raise NotImplementedError(f"onnx.export: op '{name}' is not supported: its result {i} is used")
        else:
            raise NotImplementedError(f"onnx.export: op '{name}' is not supported by the ONNX export")


def _branch(g, op, region, params, program, name):
    sub = Graph(g.opset, parent=g)
    ops = op.ops(region)
    translate_block(sub, ops, params, program)
    yields = [o for o in ops if o.name == "cf.yield"]
    if len(yields) != 1:
        raise NotImplementedError("onnx.export: op 'cf.if' is not supported: a branch without one cf.yield")
    outs = []
    for v, r in zip(yields[0].operands(), op.results()):
        oname = sub.fresh(f"{name}_out")
        sub.node("Identity", [sub.get(v, "cf.yield")], outputs=[oname])
        dims = [None if d == -1 else int(d) for d in r.shape]
        outs.append(helper.make_tensor_value_info(oname, onnx_type(r.dtype, "a cf.if result"), dims))
    return helper.make_graph(sub.nodes, name, [], outs)


def _translate_if(g, op, params, program):
    cond = op.operands()[0]
    if list(cond.shape) not in ([], [1]):
        raise NotImplementedError(f"onnx.export: op 'cf.if' is not supported: a condition of shape {list(cond.shape)}")
    c = g.cast(g.get(cond, "cf.if"), cond.dtype, "bool")
    if list(cond.shape) == [1]:
        c = g.node("Reshape", [c, g.ints([])])
    then_g = _branch(g, op, 0, params, program, g.fresh("then"))
    else_g = _branch(g, op, 1, params, program, g.fresh("else"))
    results = op.results()
    names = g.node("If", [c], outputs=[g.fresh("if") for _ in results], then_branch=then_g, else_branch=else_g)
    for r, n in zip(results, names):
        g.bind(r, n)
