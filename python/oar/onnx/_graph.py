"""The ONNX graph under construction while a PIR program is translated (Note [ONNX export]
in docs/notes/jit.md): value names, nodes, initializers, and small helpers the op rules
share (constants, casts, reductions whose signature changed between opsets)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

# Oar dtype name -> (ONNX element type, NumPy dtype)
_DTYPES = {
    "bool": (TensorProto.BOOL, np.bool_),
    "int8": (TensorProto.INT8, np.int8),
    "uint8": (TensorProto.UINT8, np.uint8),
    "int16": (TensorProto.INT16, np.int16),
    "int32": (TensorProto.INT32, np.int32),
    "int64": (TensorProto.INT64, np.int64),
    "float16": (TensorProto.FLOAT16, np.float16),
    "float32": (TensorProto.FLOAT, np.float32),
    "float64": (TensorProto.DOUBLE, np.float64),
}


def dtype_name(dtype):
    """'float32' for oar.float32 (or a string such as 'oar.float32' / 'paddle.float32')."""
    return str(dtype).replace("oar.", "").replace("paddle.", "")


def onnx_type(dtype, what):
    name = dtype_name(dtype)
    if name not in _DTYPES:
        raise NotImplementedError(f"onnx.export: {what} has dtype {name}, which the ONNX export does not support "
                                  f"(supported: {', '.join(_DTYPES)})")
    return _DTYPES[name][0]


def np_type(dtype, what):
    name = dtype_name(dtype)
    if name not in _DTYPES:
        raise NotImplementedError(f"onnx.export: {what} has dtype {name}, which the ONNX export does not support")
    return _DTYPES[name][1]


class Graph:
    """One ONNX graph (the main graph, or a branch of an If). Values of the PIR program map
    to ONNX names (a Tensor[] value to a list of names); a branch looks names up in its
    parent too, and keeps its initializers in the root graph."""

    def __init__(self, opset, parent=None):
        self.opset = opset
        self.parent = parent
        self.root = parent.root if parent is not None else self
        self.nodes = []
        self.values = {}
        if parent is None:
            self.used_names = set()
            self.initializers = []
            self._const_cache = {}
            self.inputs = []
            self.outputs = []

    # ---- names
    def fresh(self, hint="v"):
        hint = "".join(c if c.isalnum() or c in "._-/" else "_" for c in str(hint)) or "v"
        used = self.root.used_names
        name, i = hint, 0
        while name in used:
            i += 1
            name = f"{hint}_{i}"
        used.add(name)
        return name

    def bind(self, value, name):
        self.values[value] = name

    def has(self, value):
        g = self
        while g is not None:
            if value in g.values:
                return True
            g = g.parent
        return False

    def get(self, value, op_name="?"):
        g = self
        while g is not None:
            if value in g.values:
                return g.values[value]
            g = g.parent
        raise NotImplementedError(f"onnx.export: {op_name} reads a value that no translated op produced")

    # ---- building
    def node(self, op_type, inputs, outputs=1, **attrs):
        """Appends a node; returns its output name (or the list when outputs > 1 or a list)."""
        if isinstance(outputs, int):
            names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        else:
            names = list(outputs)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=self.fresh("n_" + op_type), **attrs))
        return names[0] if isinstance(outputs, int) and outputs == 1 else names

    def const(self, array, hint="c"):
        """An initializer holding `array` (small ones deduplicated by value)."""
        array = np.asarray(array)
        root = self.root
        key = None
        if array.size <= 64:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in root._const_cache:
                return root._const_cache[key]
        name = self.fresh(hint)
        root.initializers.append(numpy_helper.from_array(array, name))
        if key is not None:
            root._const_cache[key] = name
        return name

    def ints(self, values):
        return self.const(np.asarray(list(values), dtype=np.int64), "ints")

    def scalar(self, value, np_dtype):
        return self.const(np.asarray(value, dtype=np_dtype), "s")

    def cast(self, name, from_dtype, to_dtype):
        if dtype_name(from_dtype) == dtype_name(to_dtype):
            return name
        return self.node("Cast", [name], to=onnx_type(to_dtype, "a cast"))

    def reduce(self, op_type, x, axes, keepdims):
        """Reduce* over `axes` (None or [] = all). ReduceSum takes axes as an input from opset
        13, the other reductions from opset 18."""
        axes = list(axes or [])
        keep = 1 if keepdims else 0
        if not axes:
            return self.node(op_type, [x], keepdims=keep)
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.node(op_type, [x, self.ints(axes)], keepdims=keep)
        return self.node(op_type, [x], axes=axes, keepdims=keep)

    def unsqueeze(self, x, axes):
        return self.node("Unsqueeze", [x, self.ints(axes)])

    def squeeze(self, x, axes):
        return self.node("Squeeze", [x, self.ints(axes)])

    def transpose(self, x, perm):
        if list(perm) == list(range(len(perm))):
            return x
        return self.node("Transpose", [x], perm=list(perm))
