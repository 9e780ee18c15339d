"""Static-graph programs on Oar's IR (Note [Static mode] in docs/notes/static.md).

A Program owns one pir Tracer, the same one oar.jit.to_static records with. While static
mode is on, the current main program's tracer is active, so every op called through the
Python API runs once on placeholder values (static.data: zeros with each dynamic size
_PLACEHOLDER_SIZE) and is appended to the program as its pd_op op. A static variable is
the oar.Tensor that op returned: it has a name, prints as a variable, supports every
operator and Tensor method, and refuses .numpy() (it has no value until Executor.run).

Parameters made in static mode are builtin.parameter values of the main program; their
initial values become the startup program, whose run fills the scope (Executor.run)."""
import contextlib
import sys
import weakref

import numpy as np

from .. import _C, _trace_state
from ..base import framework

_pir = _C.pir
_Tensor = _C.Tensor
_PLACEHOLDER_SIZE = 2  # not 1: a size-1 placeholder would broadcast where a real batch cannot

_main = None  # the current main / startup programs (made on first use)
_startup = None
_recording = None  # the Program whose tracer is active (the current main while static)
_programs = weakref.WeakSet()  # every traced Program, to tell static variables apart


def _note_pylayer(name, inputs):
    """A PyLayer applied while this module's current program records (its custom backward
    is not recorded: _backward._refuse_pylayers). Installed as _trace_state.note_pylayer."""
    rec = _recording
    if rec is not None and _trace_state.active and rec._tracer is _trace_state.active[-1] and any(
            not t.stop_gradient or rec._tracer.is_traced(t) for t in inputs):
        rec._base()._pylayers.append(name)


_trace_state.note_pylayer = _note_pylayer
_parameters = weakref.WeakValueDictionary()  # name -> parameter made in static mode (later programs declare it)


def unique_name(prefix):
    from ..utils import unique_name as names  # one generator: paddle.utils.unique_name's

    return names.generate(prefix)


class Program:
    """A static program: the ops recorded while it is the current main program (see the
    module doc), its inputs (static.data), parameters and persistable state."""

    def __init__(self):
        self._tracer = _pir.Tracer()
        self._vars = {}       # name -> tensor: data, parameters, named results
        self._inputs = {}     # data name -> (placeholder, dims with -1, dtype)
        self._params = {}     # name -> tensor declared as builtin.parameter
        self._own = []        # names of the parameters made while this was the main program
        self._init = {}       # (as a startup program) name -> initial value
        self._lr_vars = []    # (lr tensor name, LRScheduler) refreshed before each run
        self._grad_records = []  # backward / update steps, replayed per fed shape (_specialize.py)
        self._source = None   # a clone: the program it shares ops with
        self._for_test = False  # clone(for_test=True): runs the forward part only
        self._asserts = []    # static.nn.control_flow.Assert checks: (cond, data, summarize, name)
        self._pylayers = []   # names of the PyLayers recorded (their custom backward is not: _backward.py)
        self._version = 0     # bumped on declarations; ops are counted by the tracer
        self.random_seed = 0
        _programs.add(self)

    # ---- building
    def _declare_parameter(self, name, p):
        if name in self._params:
            return
        self._tracer.add_parameter(p, name)
        self._params[name] = p
        self._vars[name] = p
        self._version += 1

    def _drop_parameter(self, name):
        """Takes back the declaration of another program's parameter `name` if nothing here
        read it (this program is about to make its own of that name)."""
        if not self._tracer.drop_parameter(name):
            return False
        del self._params[name]
        self._vars.pop(name, None)
        self._version += 1
        return True

    def _add_input(self, name, dims, dtype):
        if name in self._vars:
            raise ValueError(f"static.data: a variable named '{name}' already exists in this program")
        shape = [_PLACEHOLDER_SIZE if d == -1 else d for d in dims]
        with _paused():
            t = _C.ops.full(shape, 0.0, dtype, None)
        t.stop_gradient = True
        t.name = name
        self._tracer.add_input(t, name, dims)
        self._inputs[name] = (t, list(dims), dtype)
        self._vars[name] = t
        self._version += 1
        return t

    def _base(self):
        return self._source if self._source is not None else self

    def _ops_version(self):
        base = self._base()
        return (base._version, base._tracer.num_ops)

    def _snapshot(self, outputs, names, prune=False, keep_inputs=None):
        """The pir program so far with these outputs; pruned (inputs kept: keep_inputs,
        all by default) for clone(for_test=True)'s programs and when asked."""
        keep = list(self._base()._inputs) if keep_inputs is None else list(keep_inputs)
        return self._base()._tracer.snapshot(list(outputs), list(names), prune or self._for_test, keep)

    def _var(self, name, who):
        base = self._base()
        t = base._vars.get(name)
        if t is None:
            known = sorted(base._vars)
            raise ValueError(f"{who}: the program has no variable named '{name}' (it has "
                             f"{known[:20]}{'...' if len(known) > 20 else ''})")
        return t

    # ---- Paddle's Program API
    def global_block(self):
        from ._introspect import Block

        return Block(self)

    def block(self, index):
        if index != 0:
            raise IndexError(f"Program.block: a PIR program has one top-level block, got index {index}")
        return self.global_block()

    @property
    def num_blocks(self):
        return 1

    def global_seed(self, seed=0):
        self.random_seed = int(seed)

    def list_vars(self):
        return list(self._base()._vars.values())

    def all_parameters(self):
        base = self._base()
        return [base._params[n] for n in base._own if getattr(base._params[n], "trainable", False)]

    def clone(self, for_test=False):
        """A program sharing this one's ops (recording continues in the original). With
        for_test, it runs the forward part only: parameter writes are dropped, and so is
        the backward and update minimize adds later."""
        c = Program.__new__(Program)
        c.__dict__.update(self.__dict__)
        c._source = self._base()
        c._for_test = bool(for_test)
        c._tracer = None
        _programs.add(c)
        return c

    def state_dict(self, mode="all", scope=None):
        from ._executor import global_scope

        scope = scope or global_scope()
        return {n: scope._get(n) for n in self._base()._params if scope._get(n) is not None}

    def set_state_dict(self, state_dict, scope=None):
        from ._executor import global_scope

        scope = scope or global_scope()
        for n, v in state_dict.items():
            scope._set(n, v if isinstance(v, _Tensor) else _C.to_tensor(np.asarray(v), None, None, True))

    def to_pir(self):
        """The pd_op program recorded so far (an oar.pir.Program copy)."""
        return self._snapshot([], [])

    def __str__(self):
        return str(self.to_pir())

    def __repr__(self):
        return f"<oar.static.Program with {self._base()._tracer.num_ops} ops>"


def _is_static_var(t):
    return any(p._tracer is not None and p._tracer.is_traced(t) for p in list(_programs))


# ---- the current programs and the recording switch
def default_main_program():
    global _main
    if _main is None:
        _main = Program()
    return _main


def default_startup_program():
    global _startup
    if _startup is None:
        _startup = Program()
    return _startup


def _record(program):
    """Makes `program`'s tracer the active one (None: no recording)."""
    global _recording
    if _recording is program:
        return
    active = _trace_state.active  # the list oar.jit registered (read at call time)
    if _recording is not None:
        _recording._tracer.stop()
        for i in range(len(active) - 1, -1, -1):
            if active[i] is _recording._tracer:
                del active[i]
                break
    _recording = None
    if program is not None:
        if program._tracer is None:
            raise RuntimeError("static: a program made by clone(for_test=True) cannot record more ops; "
                               "build in the original program")
        # Parameters made while another program was current may be used here too.
        for name, p in list(_parameters.items()):
            program._declare_parameter(name, p)
        program._tracer.start()
        # Listed as an active tracer, so the library skips its checks of values that a
        # program does not have yet (index ranges, probabilities), as under to_static.
        active.append(program._tracer)
        _recording = program


@contextlib.contextmanager
def _paused():
    was = _recording
    _record(None)
    try:
        yield
    finally:
        _record(was)


def enable_static():
    """Switches to static-graph mode: op calls record into the current main program."""
    if framework._static_mode:
        return
    framework._static_mode = True
    _install_tensor_patches()
    _record(default_main_program())


def disable_static(place=None):
    """Back to dynamic (eager) mode."""
    if not framework._static_mode:
        return
    framework._static_mode = False
    _record(None)
    _uninstall_tensor_patches()


def switch_main_program(program):
    global _main
    old, _main = default_main_program(), program
    if framework.in_static_mode():
        _record(program)
    return old


def switch_startup_program(program):
    global _startup
    old, _startup = default_startup_program(), program
    return old


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Ops called inside record into main_program; parameters made inside initialise in
    startup_program."""
    if not isinstance(main_program, Program):
        raise TypeError(f"program_guard: main_program must be an oar.static.Program, got "
                        f"{type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError(f"program_guard: startup_program must be an oar.static.Program, got "
                        f"{type(startup_program).__name__}")
    old_main = switch_main_program(main_program)
    old_startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(old_main)
        if old_startup is not None:
            switch_startup_program(old_startup)


def _check_static(who):
    if not framework.in_static_mode():
        raise RuntimeError(f"{who} is only available in static-graph mode: call oar.enable_static() first")


def data(name, shape, dtype=None, lod_level=0):
    """A program input: `shape` with None or -1 where the size is fed at run time."""
    _check_static("static.data")
    from .._dtype import convert_dtype, get_default_dtype

    if not isinstance(name, str) or not name:
        raise ValueError(f"static.data: name must be a non-empty str, got {name!r}")
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"static.data '{name}': shape must be a list, got {type(shape).__name__}")
    dims = []
    for d in shape:
        if d is None:
            d = -1
        if not isinstance(d, (int, np.integer)) or d < -1:
            raise ValueError(f"static.data '{name}': shape must hold sizes >= 0 or None/-1, got {list(shape)}")
        dims.append(int(d))
    dtype = convert_dtype(dtype if dtype is not None else get_default_dtype())
    t = default_main_program()._add_input(name, dims, dtype)
    t.lod_level = int(lod_level)  # sequence level of the fed data (base.dataset's sparse slots)
    return t


def _register_parameter(p):
    """A parameter made in static mode: its current value is its initial value in the
    startup program; the main program declares it (as every program made later does)."""
    name = p.name or unique_name("param")
    p.name = name
    main = default_main_program()
    shared = main._params.get(name)
    if (shared is not None and name not in main._own and (list(shared.shape) != list(p.shape) or shared.dtype != p.dtype)
            and main._drop_parameter(name)):
        # Another program's parameter of that name (declared here when this program became
        # the main one) that this program never read: as in Paddle, where each program has
        # its own variables, this program makes its own.
        shared = None
    if shared is not None:
        # Paddle shares a parameter by name: within a program (ParamAttr(name=...) twice) and
        # across programs, whose variables of one name are one scope variable (a test
        # program built under a fresh unique_name.guard() uses the training program's).
        if list(shared.shape) != list(p.shape) or shared.dtype != p.dtype:
            raise ValueError(f"create_parameter: parameter '{name}' exists with shape {list(shared.shape)} "
                             f"{shared.dtype}, asked again with shape {list(p.shape)} {p.dtype}")
        startup = default_startup_program()
        if name not in startup._init:  # this program's startup initialises it too, as Paddle's does
            with _paused():
                startup._init[name] = _C.ops.assign(p)
            startup._version += 1
        if name not in main._own:
            main._own.append(name)
        return shared
    _parameters[name] = p  # first: resuming the recording below declares the registry's parameters
    with _paused():
        init = _C.ops.assign(p)
    default_startup_program()._init[name] = init
    default_startup_program()._version += 1
    main._declare_parameter(name, p)
    main._own.append(name)
    return p


def create_persistable(name, value):
    """A persistable, non-trainable state variable (an optimizer accumulator): `value`'s
    copy initialises it in the startup program."""
    from ..nn.layer import Parameter

    with _paused():
        p = Parameter(_C.ops.assign(value), trainable=False, name=name)
    return _register_parameter(p)


# ---- static variables as oar.Tensors: name, printing, no value
_saved = {}


def _var_name(self):
    n = _saved["name"].fget(self)
    if not n and _is_static_var(self):
        n = unique_name("tmp")
        _saved["name"].fset(self, n)
        if _recording is not None:
            _recording._vars[n] = self
    return n


def _set_var_name(self, value):
    _saved["name"].fset(self, value)
    if value and _recording is not None and _recording._tracer.is_traced(self):
        _recording._vars[value] = self


def _dims(t):
    """t's shape in its program (-1 where dynamic)."""
    for p in list(_programs):
        if p._tracer is not None and p._tracer.is_traced(t):
            return list(p._tracer.dims_of(t))
    return list(t.shape)


def _describe(t):
    return f"name='{t.name}', shape={_dims(t)}, dtype={str(t.dtype).replace('oar.', 'paddle.')}"


def _var_repr(self):
    if _is_static_var(self):
        # Paddle's text form of a variable
        kind = "var"
        if getattr(self, "persistable", False):
            kind = "persist trainable param" if getattr(self, "trainable", False) else "persist var"
        dtype = str(self.dtype).replace("oar.", "").replace("paddle.", "")
        return (f"{kind} {self.name} : DENSE_TENSOR.shape{tuple(_dims(self))}.dtype({dtype})"
                f".stop_gradient({self.stop_gradient})")
    return _saved["__repr__"](self)


def numpy_of(t):
    """t's values (the unpatched Tensor.numpy: a fetched result is no static variable)."""
    return (_saved.get("numpy") or _Tensor.numpy)(t)


def _var_numpy(self, *args, **kwargs):
    if _is_static_var(self):
        raise RuntimeError(
            f"static variable {_describe(self)} has no value while the program is built: fetch it with "
            f"exe.run(program, feed=..., fetch_list=[var]) (or disable_static() for eager tensors)")
    return _saved["numpy"](self, *args, **kwargs)


def _install_tensor_patches():
    if _saved:
        return
    for k in ("name", "__repr__", "__str__", "numpy"):
        _saved[k] = _Tensor.__dict__.get(k)
    _Tensor.name = property(_var_name, _set_var_name)
    _Tensor.__repr__ = _var_repr
    _Tensor.__str__ = _var_repr
    _Tensor.numpy = _var_numpy


def _uninstall_tensor_patches():
    for k, v in _saved.items():
        if v is None:
            delattr(_Tensor, k)
        else:
            setattr(_Tensor, k, v)
    _saved.clear()


framework._static = sys.modules[__name__]  # nn's hooks reach static mode through it
