"""oar.onnx: export to ONNX (Paddle's paddle.onnx.export), Note [ONNX export] in
docs/notes/jit.md.

    oar.onnx.export(net, "out/net", input_spec=[InputSpec([None, 3, 224, 224], "float32", "x")])
    # writes out/net.onnx, which ONNX Runtime (and the rest of the ecosystem) loads

The layer is converted as jit.save converts it (oar.jit.to_static, the same PIR program),
then every op of the program is translated into ONNX nodes: inputs keep their InputSpec
names, -1/None dims become symbolic dims, parameters and constants become initializers,
outputs are named as in the program (out0, out1, ...). An op without a translation, or an
op used in a way ONNX cannot express exactly, raises NotImplementedError naming the op;
no file is written then. The `onnx` package is needed (pip install onnx); onnxruntime is
only needed to run the file.
"""
import os

__all__ = ["export", "export_program"]


def _require_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise ImportError("oar.onnx.export needs the 'onnx' package: pip install onnx") from None


def _max_opset():
    import onnx.defs

    return onnx.defs.onnx_opset_version()


_MIN_OPSET = 14   # Trilu, Reshape(allowzero), axes as inputs of Squeeze/Unsqueeze/ReduceSum/Split


def export(layer, path, input_spec=None, opset_version=17, **configs):
    """Exports `layer` (an oar.nn.Layer or a to_static function) to `path + ".onnx"`.

    input_spec: a list of InputSpec (or example tensors); -1/None dims become dynamic.
    Without it, the to_static function's own input_spec or its last converted signature
    is used. opset_version: the ONNX opset (14 up to what the installed onnx supports).
    configs: `verbose` (print the graph), `output_names` (names for the graph outputs).
    Returns the path of the written file.
    """
    _require_onnx()
    import onnx

    from ..jit.save_load import _check_prefix, concrete_program
    from ..nn import Layer

    if not isinstance(layer, Layer) and not callable(getattr(layer, "get_concrete_program", None)):
        raise TypeError(f"onnx.export: expected an oar.nn.Layer or a to_static function, got {type(layer).__name__}")
    path = _check_prefix(path, "onnx.export")
    if isinstance(opset_version, bool) or not isinstance(opset_version, int):
        raise TypeError(f"onnx.export: opset_version must be an int, got {opset_version!r}")
    if not _MIN_OPSET <= opset_version <= _max_opset():
        raise ValueError(f"onnx.export: opset_version must be between {_MIN_OPSET} and {_max_opset()}, "
                         f"got {opset_version}")
    unknown = set(configs) - {"verbose", "output_names", "enable_onnx_checker"}
    if unknown:
        raise TypeError(f"onnx.export: unexpected keyword arguments {sorted(unknown)}")
    static, entry = concrete_program(layer, input_spec, "onnx.export")
    params = dict(static._state())  # the layer's, or a function's captured state
    model = export_program(entry.program, params, opset_version=opset_version,
                           output_names=configs.get("output_names"),
                           graph_name=type(static._layer).__name__ if static._layer is not None else "oar")
    if configs.get("verbose", False):
        print(onnx.helper.printable_graph(model.graph))
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    from ..jit.save_load import _atomic_write

    _atomic_write(path + ".onnx", model.SerializeToString())
    return path + ".onnx"


def export_program(program, params=None, opset_version=17, output_names=None, graph_name="oar"):
    """Translates a PIR program (builtin.input/parameter/constant/output, pd_op ops, cf.if)
    into a checked onnx.ModelProto. params: name -> Tensor for builtin.parameter ops
    whose data the program does not hold."""
    _require_onnx()
    import onnx
    from onnx import helper

    from ._graph import Graph, onnx_type
    from ._translate import translate_block

    g = Graph(opset_version)
    ops = program.ops()
    outputs = [op for op in ops if op.name == "builtin.output"]
    if output_names is not None:
        output_names = list(output_names)
        if len(output_names) != len(outputs) or not all(isinstance(n, str) and n for n in output_names):
            raise ValueError(f"onnx.export: output_names must be {len(outputs)} non-empty strings, "
                             f"got {output_names!r}")
        if len(set(output_names)) != len(output_names):
            raise ValueError(f"onnx.export: output_names must be distinct, got {output_names!r}")
    # reserve the names users see first: inputs, then outputs
    for op in ops:
        if op.name == "builtin.input":
            name = op.attrs()["name"]
            g.bind(op.result(0), g.fresh(name))
            v = op.result(0)
            dims = [f"{name}_d{i}" if d == -1 else int(d) for i, d in enumerate(v.shape)]
            g.inputs.append(helper.make_tensor_value_info(g.values[v], onnx_type(v.dtype, f"input '{name}'"), dims))
    out_names = []
    for i, op in enumerate(outputs):
        want = output_names[i] if output_names is not None else op.attrs().get("name") or f"out{i}"
        out_names.append(g.fresh(want))
    params = params or {}
    translate_block(g, ops, params, program)
    for op, name in zip(outputs, out_names):
        v = op.operands()[0]
        g.node("Identity", [g.get(v, op.name)], outputs=[name])
        dims = [None if d == -1 else int(d) for d in v.shape]
        g.outputs.append(helper.make_tensor_value_info(name, onnx_type(v.dtype, f"output '{name}'"), dims))
    graph = helper.make_graph(g.nodes, graph_name, g.inputs, g.outputs, initializer=g.initializers)
    model = helper.make_model(graph, producer_name="oar", opset_imports=[helper.make_opsetid("", opset_version)])
    model.ir_version = min(model.ir_version, _ir_version_for(opset_version))
    onnx.checker.check_model(model, full_check=True)
    return model


def _ir_version_for(opset):
    """The lowest IR version that ships with `opset` (so older runtimes accept the file)."""
    from onnx import helper

    irs = [entry[1] for entry in getattr(helper, "VERSION_TABLE", []) if entry[2] == opset]
    return min(irs) if irs else 10 ** 9
