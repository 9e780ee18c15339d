"""The walk over a PIR block: builtin ops (parameters, constants, tensor lists), control
flow (cf.if -> ONNX If, cf.while -> ONNX Loop) and dispatch of pd_op ops to the rules in
_ops.py and its companions (_ops_nn.py, _ops_index.py, _ops_resize.py, _ops_math.py)."""
import numpy as np
from onnx import helper, numpy_helper

from . import _ops_index, _ops_math, _ops_nn, _ops_resize  # noqa: F401  (they add their rules to RULES)
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
        elif name == "cf.while":
            _translate_while(g, op, params, program)
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


def _block_arguments(program, op):
    """The body's block arguments of a cf.while. Program.values() lists, for every op, its
    regions' block arguments right before its results."""
    n = len(op.results())
    values = program.values()
    at = values.index(op.result(0))
    args = values[at - n:at]
    if len(args) != n or not all(a.is_block_argument for a in args):
        raise NotImplementedError("onnx.export: op 'cf.while' is not supported: its body arguments were not found")
    return args


def _value_info(name, v, what):
    dims = [None if d == -1 else int(d) for d in v.shape]
    return helper.make_tensor_value_info(name, onnx_type(v.dtype, what), dims)


def _scalar_bool(g, name, v):
    """A bool condition of shape [] or [1] as the scalar bool ONNX Loop wants."""
    if list(v.shape) not in ([], [1]):
        raise NotImplementedError(f"onnx.export: op 'cf.while' is not supported: a condition of shape {list(v.shape)}")
    c = g.cast(name, v.dtype, "bool")
    return g.node("Reshape", [c, g.ints([])]) if list(v.shape) == [1] else c


def _translate_while(g, op, params, program):
    """cf.while(cond, init...) {body(args...) yield(next_cond, next...)} -> ONNX Loop with no
    trip count: the body graph takes (iteration, cond, carried...) and returns
    (next_cond, next carried...); it reads outer values by name as If branches do."""
    operands, results = op.operands(), op.results()
    if not results:
        raise NotImplementedError("onnx.export: op 'cf.while' is not supported: a loop that carries no values")
    cond = _scalar_bool(g, g.get(operands[0], "cf.while"), operands[0])
    inits = [g.get(v, "cf.while") for v in operands[1:]]
    if any(isinstance(n, list) for n in inits):
        raise NotImplementedError("onnx.export: op 'cf.while' is not supported: it carries a tensor list")
    body = Graph(g.opset, parent=g)
    iter_name, cond_in = body.fresh("loop_iter"), body.fresh("loop_cond_in")
    ins = [helper.make_tensor_value_info(iter_name, onnx_type("int64", "the loop counter"), []),
           helper.make_tensor_value_info(cond_in, onnx_type("bool", "the loop condition"), [])]
    for a in _block_arguments(program, op):
        name = body.fresh("loop_in")
        body.bind(a, name)
        ins.append(_value_info(name, a, "a cf.while carried value"))
    ops = op.ops(0)
    translate_block(body, ops, params, program)
    yields = [o for o in ops if o.name == "cf.yield"]
    if len(yields) != 1:
        raise NotImplementedError("onnx.export: op 'cf.while' is not supported: a body without one cf.yield")
    ys = yields[0].operands()
    outs = []
    next_cond = _scalar_bool(body, body.get(ys[0], "cf.yield"), ys[0])
    cname = body.fresh("loop_cond_out")
    body.node("Identity", [next_cond], outputs=[cname])
    outs.append(helper.make_tensor_value_info(cname, onnx_type("bool", "the loop condition"), []))
    for v, r in zip(ys[1:], results):
        oname = body.fresh("loop_out")
        body.node("Identity", [body.get(v, "cf.yield")], outputs=[oname])
        outs.append(_value_info(oname, r, "a cf.while result"))
    graph = helper.make_graph(body.nodes, g.fresh("loop_body"), ins, outs)
    names = g.node("Loop", ["", cond] + inits, outputs=[g.fresh("loop") for _ in results], body=graph)
    for r, n in zip(results, names):
        g.bind(r, n)
