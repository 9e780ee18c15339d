"""oar.static: static-graph mode (Note [Static mode] in docs/notes/static.md) and the
static-graph vocabulary (InputSpec; nn.cond / nn.while_loop / nn.fc... in oar.static.nn).

Programs, the executor and the scope load on first use (oar's import stays fast)."""
import numpy as _np


class InputSpec:
    """Describes a program input: shape (None or -1 marks a dynamic size), dtype, name.

    Used by oar.jit.to_static / oar.jit.save (and by oar.Model's inputs/labels)."""

    def __init__(self, shape=None, dtype="float32", name=None, stop_gradient=False):
        if shape is not None:
            if isinstance(shape, int):
                shape = [shape]
            shape = [-1 if d is None else d for d in shape]
            for d in shape:
                if not isinstance(d, (int, _np.integer)) or d < -1:
                    raise ValueError(f"InputSpec: shape must hold sizes >= 0, or -1/None for a dynamic "
                                     f"size, got {list(shape)}")
            shape = [int(d) for d in shape]
        self.shape = shape
        self.dtype = dtype
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(list(tensor.shape), tensor.dtype, name)

    @classmethod
    def from_numpy(cls, ndarray, name=None):
        return cls(list(ndarray.shape), str(_np.asarray(ndarray).dtype), name)

    def batch(self, batch_size):
        """Inserts a leading batch dim (an int, or -1/None for a dynamic batch) into this
        spec's shape, in place (as Paddle's); returns the spec."""
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ValueError(f"InputSpec.batch: batch_size must be an int or a list of one int, "
                                 f"got {batch_size}")
            batch_size = batch_size[0]
        batch_size = -1 if batch_size is None else batch_size
        if not isinstance(batch_size, (int, _np.integer)) or batch_size < -1:
            raise ValueError(f"InputSpec.batch: batch_size must be an int >= 0 or -1/None, got {batch_size!r}")
        self.shape = [int(batch_size)] + list(self.shape or [])
        return self

    def unbatch(self):
        """Removes the leading (batch) dim of this spec, in place (as Paddle's); returns it."""
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the spec has no dims to remove")
        self.shape = list(self.shape[1:])
        return self

    def __eq__(self, other):
        return (isinstance(other, InputSpec) and self.shape == other.shape
                and str(self.dtype) == str(other.dtype) and self.name == other.name)

    def __hash__(self):
        return hash((tuple(self.shape or ()), str(self.dtype), self.name))

    def __repr__(self):
        # Paddle's form (its dtype names print with the paddle. prefix)
        dtype = str(self.dtype).replace("oar.", "").replace("paddle.", "")
        return (f"InputSpec(shape={tuple(self.shape or ())}, dtype=paddle.{dtype}, name={self.name}, "
                f"stop_gradient={self.stop_gradient})")


class BuildStrategy:
    """Paddle's build options, for to_static (oar.jit.to_static(fn, build_strategy=...))
    and static.CompiledProgram(program, build_strategy). `build_cinn_pass = True` runs
    the programs through the fusion compiler, as backend='CINN' does. The other Paddle options are accepted and have no effect: Oar's
    pass pipelines already fuse what they name."""

    def __init__(self):
        self.build_cinn_pass = False
        self.fuse_elewise_add_act_ops = False
        self.fuse_bn_act_ops = False
        self.enable_inplace = False

    def __repr__(self):
        return f"BuildStrategy(build_cinn_pass={self.build_cinn_pass})"


from . import nn  # noqa: E402,F401
from .. import framework_io as _framework_io  # noqa: E402


def _is_program(obj):
    import sys

    mod = sys.modules.get("oar.static._program")  # not loaded: no Program exists
    return mod is not None and isinstance(obj, mod.Program)


def _program_to_bytes(program):
    from . import _io

    return _io.program_to_bytes(program)


def _program_from_bytes(data, info):
    from . import _io

    return _io.program_from_bytes(data, info)


# oar.save / oar.load of a Program (Note [Saved programs] in docs/notes/static.md)
_framework_io.register_codec("static.Program", _is_program, _program_to_bytes, _program_from_bytes)

_LAZY = {
    "_program": ("Program", "program_guard", "default_main_program", "default_startup_program", "data",
                 "switch_main_program", "switch_startup_program"),
    "_executor": ("Executor", "CompiledProgram", "Scope", "global_scope", "scope_guard", "cpu_places",
                  "cuda_places"),
    "_backward": ("append_backward", "gradients"),
    "_io": ("save_inference_model", "load_inference_model", "save", "load"),
    "_metric": ("auc",),
    "_misc": ("accuracy", "Print", "normalize_program", "load_program_state", "set_program_state", "name_scope",
              "device_guard"),
}
_WHERE = {name: mod for mod, names in _LAZY.items() for name in names}


def enable_static():
    """Switches to static-graph mode: op calls record into the current main program
    (Note [Static mode]; the machinery loads here, on first use)."""
    from . import _program

    _program.enable_static()


def disable_static(place=None):
    """Back to dynamic (eager) mode."""
    from ..base import framework

    if framework.in_static_mode():
        framework._static.disable_static()


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A parameter of the current program (initialised by the startup program)."""
    from ..nn.layer import create_parameter as make

    return make(shape, dtype, name, attr, is_bias, default_initializer)


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A variable holding `value` everywhere; persistable ones live in the scope."""
    import oar
    from . import _program

    t = oar.full(shape, value, dtype)
    if not persistable:
        return t
    return _program.create_persistable(name or _program.unique_name("global_var"), t)


def __getattr__(name):
    mod = _WHERE.get(name)
    if name in ("amp", "log_helper"):  # submodules, loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.amp" if name == "amp" else "oar.base.log_helper")
    if mod is None:
        if name == "Variable":
            from .._C import Tensor

            return Tensor
        raise AttributeError(f"module 'oar.static' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value
