"""oar.jit.save / oar.jit.load: the saved-model layout (Note [Saved model] in
docs/notes/jit.md).

    <path>.pdmodel     the program, PIR's versioned binary format, parameters by name only
    <path>.pdiparams   the parameter and buffer data, oar.save's safe tensor format
    <path>.pdinfo      JSON: which of them are buffers, input names, output arity

Loading is one C++ loader (inference/predictor/saved_model.h) shared with the predictor.
"""
import json
import os

import numpy as np

from .. import _C
from ..autograd import no_grad
from ..static import InputSpec
from .api import StaticFunction, _Tensor

_pir = _C.pir


def _example(spec, size, who="jit.save", place=None):
    """An input for an InputSpec on `place` (None: the current device): dynamic sizes become
    `size`; floats random, ints zeros."""
    import oar

    if not isinstance(spec, InputSpec):
        raise TypeError(f"{who}: input_spec entries must be InputSpec, got {type(spec).__name__}")
    if spec.shape is None:
        raise ValueError(f"{who}: InputSpec {spec} has no shape")
    shape = [size if d == -1 else d for d in spec.shape]
    dtype = str(spec.dtype).replace("paddle.", "").replace("oar.", "")
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        data = np.random.default_rng(0).standard_normal(shape).astype("float32")
        return oar.to_tensor(data, place=place).astype(dtype)
    return oar.zeros(shape, dtype=dtype) if place is None else oar.zeros(shape, dtype=dtype).to(place)


def _atomic_write(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def concrete_program(layer, input_spec=None, who="jit.save"):
    """(StaticFunction, ConcreteProgram) for `layer` (an nn.Layer or a to_static function):
    converted for `input_spec` when given (dynamic dims -1/None), else the function's own
    InputSpec, else its last converted signature. Shared by jit.save and onnx.export."""
    from ..nn import Layer

    if input_spec is not None and not isinstance(input_spec, (list, tuple)):
        raise TypeError(f"{who}: input_spec must be a list of InputSpec, got {type(input_spec).__name__}")
    if isinstance(layer, Layer):
        fwd = layer.forward
        static = fwd if isinstance(fwd, StaticFunction) else StaticFunction(fwd, input_spec, layer)
    elif isinstance(layer, StaticFunction):
        static = layer
    else:
        raise TypeError(f"{who}: expected an oar.nn.Layer or a to_static function, got {type(layer).__name__}")
    spec = input_spec if input_spec is not None else static._input_spec
    # Example inputs go where the layer's state is (the program runs there, Note
    # [Executor] in docs/notes/jit.md); the program itself does not depend on it.
    state = list(static._state().items())  # the layer's, or a function's captured state
    place = state[0][1].place if state else None
    if spec is not None:
        spec = [InputSpec.from_tensor(s) if isinstance(s, _Tensor) else s for s in spec]
        examples = [_example(s, 2, who, place) for s in spec]
        saved_spec = static._input_spec
        static._input_spec = spec
        try:
            with no_grad():  # the inference program: no backward, no saved values
                entry, _ = static.get_concrete_program(*examples)
        finally:
            static._input_spec = saved_spec
    elif static.concrete_programs:
        # forward programs only: not a training signature's, nor a training step's (whose
        # program updates the parameters: Note [Training steps])
        plain = [e for e in static.concrete_programs if e.backward_program is None and e.step is None]
        if plain:
            entry = plain[-1]
        else:  # only training signatures so far: convert the last one for inference
            last = static.concrete_programs[-1]
            examples = [_example(InputSpec(shape, dtype), 2, who, place)
                        for shape, dtype in zip(last.executor.input_shapes, last.executor.input_dtypes)]
            with no_grad():
                entry, _ = static.get_concrete_program(*examples)
    else:
        raise ValueError(f"{who}: give input_spec (a list of InputSpec), or call the to_static "
                         f"function once before {'saving' if who == 'jit.save' else 'exporting'}")
    if not hasattr(entry, "program") or entry.step is not None:
        # the signature runs eagerly (a training step converted under no_grad: its
        # loss.backward() cannot run) or updates the parameters: not a model to deploy
        raise ValueError(f"{who}: {getattr(static._function, '__qualname__', 'the function')} is a training step "
                         f"(it calls loss.backward() or an optimizer's step()): "
                         f"{'save' if who == 'jit.save' else 'export'} the model, or a to_static function of its "
                         f"forward, instead")
    return static, entry


def _check_prefix(path, who):
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path) or os.path.basename(os.fspath(path)) == "":
        raise ValueError(f"{who}: path must be a file prefix such as 'out/model', got {path!r}")
    return os.fspath(path)


def save(layer, path, input_spec=None, **configs):
    """Converts `layer` (an nn.Layer or a to_static function) and writes the saved model
    under the prefix `path` (see the module doc)."""
    from ..framework_io import save as save_tensors
    from ..nn import Layer

    if not isinstance(layer, (Layer, StaticFunction)):
        raise TypeError(f"jit.save: expected an oar.nn.Layer or a to_static function, got {type(layer).__name__}")
    path = _check_prefix(path, "jit.save")
    static, entry = concrete_program(layer, input_spec, "jit.save")
    program = entry.program
    from ..nn.layer import Parameter

    state = static._state()  # the layer's, or a function's captured state (Note [Captured state])
    names = program.parameter_names()
    params = {n: state[n] for n in names if n in state}
    if static._layer is not None:
        buffers = {n for n, _ in static._layer.named_buffers()}
    else:  # a captured layer's buffers and captured plain tensors
        buffers = {n for n, t in state.items() if not isinstance(t, Parameter)}
    info = {
        "format": "oar.jit/1",
        "inputs": entry.input_names,
        "buffers": sorted(n for n in params if n in buffers),
        "output_struct": _struct_to_json(entry.out_struct),
    }
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    _atomic_write(path + ".pdmodel", program.serialize(with_parameter_data=False))
    save_tensors(params, path + ".pdiparams")
    _atomic_write(path + ".pdinfo", json.dumps(info, indent=1).encode())


def _struct_to_json(struct):
    kind, val = struct
    if kind == "T":
        return {"T": val}
    if kind in ("list", "tuple"):
        return {kind: [_struct_to_json(s) for s in val]}
    if kind == "dict":
        return {"dict": [[k, _struct_to_json(s)] for k, s in val]}
    return {"C": val if isinstance(val, (int, float, str, bool, type(None))) else repr(val)}


def _struct_from_json(j):
    (kind, val), = j.items()
    if kind == "T":
        return ("T", int(val))
    if kind in ("list", "tuple"):
        return (kind, tuple(_struct_from_json(s) for s in val))
    if kind == "dict":
        return ("dict", tuple((k, _struct_from_json(s)) for k, s in val))
    return ("C", val)


def load_program(path):
    """(program, params dict, info dict) of a saved model. The program and its parameters
    come from the one saved-model loader (inference/predictor/saved_model.h, which the
    predictors use too): a missing file raises FileNotFoundError, a corrupt, truncated or
    mismatching one ValueError naming the file and what is wrong."""
    path = os.fspath(path)
    try:
        program = _C.inference.load_saved_model(path + ".pdmodel", path + ".pdiparams")
    except FileNotFoundError as e:
        raise FileNotFoundError(f"jit.load: {e}") from None
    except ValueError as e:
        raise ValueError(f"jit.load: {e}") from None
    params = {n: program.parameter_data(n) for n in program.parameter_names()}
    info = {}
    if os.path.exists(path + ".pdinfo"):
        try:
            with open(path + ".pdinfo") as f:
                info = json.load(f)
            if not isinstance(info, dict):
                raise ValueError("not a JSON object")
        except ValueError as e:
            raise ValueError(f"jit.load: '{path}.pdinfo' is corrupt: {e}") from None
    return program, params, info


def load(path, **configs):
    """Loads a saved model as a TranslatedLayer: it runs, and its parameters can be fine-tuned."""
    from .translated_layer import TranslatedLayer

    program, params, info = load_program(path)
    return TranslatedLayer(program, params, info)


__all__ = ["save", "load", "load_program", "concrete_program"]
