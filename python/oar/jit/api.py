"""oar.jit.to_static: converts eager code into a program of Oar's IR by tracing
(Note [Tracing] in docs/notes/jit.md).

The function runs once eagerly on the call's inputs while the core's trace slot is
active: every op it calls is appended to a program (pd_op ops), inputs become
builtin.input and the layer's parameters and buffers builtin.parameter (sharing their
memory). The program runs on the executor (pir/executor) for every later call with the
same signature: the shapes and dtypes of the tensor arguments (dynamic sizes where the
InputSpec says -1/None), the Python values of the other arguments, and the layer's
training flag. Anything that would make the program differ from the Python code is an
error naming the file and line, never a silently wrong program:
  - reading a traced tensor's value in Python (if/while on a tensor, .item(), .numpy());
  - a program that depends on the size of a dynamic dimension (checked by tracing twice).
"""
import functools
import os
import traceback

from .. import _C
from . import _dynamic_shape
from ..autograd import is_grad_enabled as _is_grad_enabled
from .._creation import get_rng_state as _get_rng_state, set_rng_state as _set_rng_state
from ..nn.layer import state_epoch
from ..static import InputSpec

_pir = _C.pir
_Tensor = _C.Tensor
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_enabled = True


class Dy2StaticError(NotImplementedError):
    """Python code that tracing cannot turn into a program (names the file and line)."""


class EagerFallback(Dy2StaticError):
    """Raised while tracing when a signature cannot have a correct program but runs
    correctly eagerly (gradients through cf.if / cf.while); StaticFunction then runs
    that signature's calls eagerly, with a warning."""


_EAGER = "eager"  # the cache entry of a signature that runs eagerly


def enable_to_static(enable_to_static_bool):
    """Globally switches to_static conversion on or off (off: decorated code runs eagerly)."""
    global _enabled
    _enabled = bool(enable_to_static_bool)


def _user_frame():
    """The innermost stack frame outside the oar package: 'file:line: code'."""
    for fs in reversed(traceback.extract_stack()):
        if not os.path.abspath(fs.filename).startswith(_PKG_DIR + os.sep):
            return f"{fs.filename}:{fs.lineno}: {(fs.line or '').strip()}"
    return "<unknown>"


def _frame_of(tb):
    """The innermost frame of a traceback outside the oar package: 'file:line: code'."""
    frames = traceback.extract_tb(tb)
    outside = [fs for fs in frames if not os.path.abspath(fs.filename).startswith(_PKG_DIR + os.sep)]
    # In user code when there is any; else the library line that read the size.
    fs = outside[-1] if outside else (frames[-1] if frames else None)
    return f"{fs.filename}:{fs.lineno}: {(fs.line or '').strip()}" if fs else "<unknown>"


def _dynamic_size_message(where, detail):
    return (f"to_static: {where}\n  the converted program depends on the size of a dynamic dimension: "
            f"the code reads a size such as x.shape[0] as a Python number (e.g. into reshape). Use -1 "
            f"or 0 in reshape, or give a static size in the InputSpec. ({detail})")


# ---- the tracing state: reading a traced tensor's value in Python is an error
_active = []  # the tracers of the conversions in progress (innermost last)
_orig_numpy = _Tensor.numpy
_orig_backward = _Tensor.backward
_orig_clear_gradient = _Tensor.clear_gradient


def _guarded_numpy(self, *args, **kwargs):
    if _active and _active[-1].is_traced(self):
        raise Dy2StaticError(
            f"to_static: {_user_frame()}\n  reads the value of a tensor computed from the inputs or "
            f"parameters (a Python if/while on a tensor, bool(), .item(), .numpy(), float()...). "
            f"Its value differs from call to call, so the converted program cannot depend on it: "
            f"use oar.where, oar.static.nn.cond / oar.static.nn.while_loop, or run this code eagerly.")
    return _orig_numpy(self, *args, **kwargs)


class _Tracing:
    """While open, `tracer` records (innermost of the active ones); the first one installs
    the guarded `numpy` and `backward` (Note [Training steps]) and the run-time sizes."""

    def __init__(self, tracer):
        self.tracer = tracer

    def __enter__(self):
        if not _active:
            from . import _train_step

            _Tensor.numpy = _guarded_numpy
            _Tensor.backward = _train_step.guarded_backward
            _Tensor.clear_gradient = _train_step.guarded_clear_gradient
            _dynamic_shape.install()
        _active.append(self.tracer)
        self.tracer.start()
        return self.tracer

    def __exit__(self, *exc):
        self.tracer.stop()
        _active.pop()
        if not _active:
            _Tensor.numpy = _orig_numpy
            _Tensor.backward = _orig_backward
            _Tensor.clear_gradient = _orig_clear_gradient
            _dynamic_shape.uninstall()
        return False


# ---- flattening nested Python structures of tensors
def _flatten(obj, tensors):
    """(structure, tensors appended): tensors become ('T', index); other leaves stay."""
    if isinstance(obj, _Tensor):
        tensors.append(obj)
        return ("T", len(tensors) - 1)
    if isinstance(obj, _dynamic_shape.TensorList):
        raise Dy2StaticError("to_static: a list appended to in a converted loop (its length known at run time "
                             "only) cannot be returned or passed as a list: return oar.stack(the_list) or "
                             "oar.concat(the_list) instead")
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_flatten(o, tensors) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(v, tensors)) for k, v in obj.items()))
    return ("C", obj)


def _unflatten(struct, tensors):
    kind, val = struct
    if kind == "T":
        return tensors[val]
    if kind in ("list", "tuple"):
        items = [_unflatten(s, tensors) for s in val]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: _unflatten(s, tensors) for k, s in val}
    return val


def _key_of(struct, tensors, specs):
    """A hashable signature: the structure with each tensor's (shape, dtype)."""
    def leaf(s):
        kind, val = s
        if kind == "T":
            shape = specs[val] if specs[val] is not None else tuple(tensors[val].shape)
            return ("T", tuple(shape), str(tensors[val].dtype))
        if kind in ("list", "tuple"):
            return (kind, tuple(leaf(x) for x in val))
        if kind == "dict":
            return ("dict", tuple((k, leaf(x)) for k, x in val))
        try:
            hash(val)
            return ("C", type(val).__name__, val)
        except TypeError:
            return ("C", type(val).__name__, repr(val))
    return leaf(struct)


class ConcreteProgram:
    """One converted signature: the forward program and its executor, and for training
    signatures the backward program (Note [Backward program] in docs/notes/jit.md)."""

    def __init__(self, program, out_struct, param_names, input_names, backward=None, wrt_inputs=(),
                 wrt_params=(), grad_outputs=(), n_out=None, cinn=False, place=None, step=None):
        # The registered pipeline (Note [Pass pipelines] in docs/notes/jit.md) runs on the
        # programs, which stay in the op dialect (printed, saved by jit.save, exported to
        # ONNX); the executors run lowered copies.
        pipeline = "jit-train" if backward is not None else "jit-infer"
        self.program = program
        self.out_struct = out_struct
        self.param_names = param_names
        self.input_names = input_names
        # The programs are lowered for the place the tensors live on (Note [Lowering for a
        # place] in pir/transforms/inplace_lower.cc): that device's kernels, the CPU's
        # through the fallback for the rest.
        self.place = place if place is not None else _C._get_current_place()
        self.executed_program = program.run_pipeline(pipeline, lower_copy=True, place=self.place)
        if cinn:
            # The fusion compiler (docs/notes/cinn.md) runs on a copy: the program users
            # print and jit.save writes keeps its ops, the executor runs compiled groups.
            self.executed_program = program.clone().run_pipeline("cinn", lower_copy=True, place=self.place)
        # A training step (Note [Training steps]): its _train_step.StepProgram; the update
        # op lowers to its kernel step.
        self.step = step
        if step is not None:
            _C.distributed.lower_collectives(self.executed_program)
        self.executor = _pir.Executor(self.executed_program, self.place)
        self.backward_program = backward
        self.executed_backward_program = None
        self.backward_executor = None
        if backward is not None:
            self.executed_backward_program = backward.run_pipeline(pipeline, lower_copy=True, place=self.place)
            if cinn:
                self.executed_backward_program = backward.clone().run_pipeline("cinn", lower_copy=True,
                                                                                  place=self.place)
            self.backward_executor = _pir.Executor(self.executed_backward_program, self.place)
        self.wrt_inputs = list(wrt_inputs)    # indices of the tensor arguments that get grads
        self.wrt_params = list(wrt_params)    # names of the parameters that get grads
        self.grad_outputs = list(grad_outputs)  # outputs that carry gradients
        self.n_out = n_out

    @property
    def main_program(self):
        return self.program

    def run(self, tensors, params):
        if self.backward_executor is None:
            return self.executor.run(tensors, params)
        wrt = [tensors[i] for i in self.wrt_inputs] + [params[n] for n in self.wrt_params]
        return _pir.run_program(self.executor, self.backward_executor, tensors, params, wrt, self.n_out,
                                self.grad_outputs)


def _named_state(layer):
    """The tensors a layer's program reads by name: parameters, then buffers."""
    if layer is None:
        return []
    state = list(layer.named_parameters())
    seen = {id(t) for _, t in state}
    state += [(n, b) for n, b in layer.named_buffers() if id(b) not in seen]
    return state


def _captured(fn):
    """Note [Captured state]: the layers and tensors a plain function reads through its
    closure, its module's globals (every name its code, nested functions included, loads)
    or, for a bound method of another object, that object's attributes; lists, tuples and
    dicts of them one level down. [(name, Layer or Tensor)], first-seen order."""
    from ..nn.layer import Layer

    kinds = (Layer, _Tensor)
    out, seen = [], set()

    def add(name, obj):
        if isinstance(obj, kinds):
            if id(obj) not in seen:
                seen.add(id(obj))
                out.append((name, obj))
        elif isinstance(obj, (list, tuple)):
            for i, o in enumerate(obj):
                if isinstance(o, kinds):
                    add(f"{name}.{i}", o)
        elif isinstance(obj, dict):
            for k, o in obj.items():
                if isinstance(k, str) and isinstance(o, kinds):
                    add(f"{name}.{k}", o)

    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, Layer):
        for name, obj in vars(owner).items() if hasattr(owner, "__dict__") else ():
            add(name, obj)
    f = getattr(fn, "__func__", fn)
    code = getattr(f, "__code__", None)
    if code is None:
        return out
    for name, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
        try:
            add(name, cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    glob = getattr(f, "__globals__", {})
    codes = [code]
    while codes:
        c = codes.pop()
        for name in c.co_names:
            if name in glob:
                add(name, glob[name])
        codes += [k for k in c.co_consts if hasattr(k, "co_names")]
    return out


def _captured_state(captured):
    """The program names and tensors of captured layers (their parameters and buffers,
    prefixed by the name they were found under) and tensors."""
    from ..nn.layer import Layer

    state, seen = [], set()
    for name, obj in captured:
        items = [(f"{name}.{n}", t) for n, t in _named_state(obj)] if isinstance(obj, Layer) else [(name, obj)]
        for n, t in items:
            if id(t) not in seen:
                seen.add(id(t))
                state.append((n, t))
    return state


def _run_place(tensors, state):
    """Where a converted program runs: on the place of its first tensor argument, else of
    its layer's first parameter or buffer, else on the current device."""
    for t in tensors:
        return t.place
    for _, t in state:
        return t.place
    return _C._get_current_place()


def trace_program(fn, layer, args, kwargs, dyn_dims=None, input_names=None, backward=False, cinn=False,
                  state=None):
    """Runs fn(*args, **kwargs) under a tracer and returns its ConcreteProgram. dyn_dims[i]
    marks the dynamic dims (-1) of the i-th tensor argument. With `backward`, the forward
    runs with autograd on and the gradient of the outputs with respect to the inputs and
    parameters that require grad is traced too, from the ops' backward rules."""
    from ..autograd import enable_grad, no_grad

    tensors = []
    struct = _flatten((args, kwargs), tensors)
    state = _named_state(layer) if state is None else list(state)
    # The tracer tells tensors apart by identity: the same tensor passed twice is traced
    # as two handles on its memory, so the program keeps two inputs (f(p, p) then f(p, q)).
    # So is an argument that is also state (f(net.weight) where f calls net): the program
    # reads the argument from its input and the state from the parameter, and a later call
    # with another argument reads that argument.
    seen = {id(t) for _, t in state}
    for i, t in enumerate(tensors):
        if id(t) in seen:
            alias = _Tensor(t)
            alias.stop_gradient = t.stop_gradient
            tensors[i] = alias
        seen.add(id(tensors[i]))
    tracer = _pir.Tracer()
    names = []
    for i, t in enumerate(tensors):
        name = input_names[i] if input_names and i < len(input_names) and input_names[i] else f"x{i}"
        while name in names:
            name = name + "_"
        names.append(name)
        dims = list(t.shape)
        if dyn_dims is not None and dyn_dims[i] is not None:
            dims = [-1 if d == -1 else s for d, s in zip(dyn_dims[i], dims)]
        tracer.add_input(t, name, dims)
    for name, t in state:
        tracer.add_parameter(t, name)
    # Tracing runs the code once; its side effects on the state (running statistics,
    # parameters updated under no_grad), on the inputs (x.add_(y), x.copy_(v): Note
    # [Input writes] in docs/notes/jit.md) and on the random generator are undone, so the
    # first run of the program is the one that counts, as every later call. A trainable
    # parameter written under autograd is an error (the gradient would read the new
    # value); under no_grad its write is converted too.
    rng = _get_rng_state()
    tracer.allow_input_writes(True)
    versions = [(t, t._version) for _, t in state] + [(t, t._version) for t in tensors]
    with no_grad():
        saved = {id(t): _C.ops.assign(t) for t, _ in versions
                 if not backward or not t.dtype.is_floating_point or t.stop_gradient}
    from ._train_step import StepProgram, StepTrace, finish_step, step_traces

    step = StepTrace(tracer, state) if backward else None
    if step is not None:
        step_traces.append(step)
    with _Tracing(tracer), (enable_grad() if backward else no_grad()):
        a, k = _unflatten(struct, tensors)
        try:
            try:
                out = fn(*a, **k)
                stepped = finish_step(step)
            finally:
                if step is not None:
                    step_traces.remove(step)
                    for p in step.params:
                        p.grad = step.entry_grads[id(p)]  # as before the trace
                    for t, g in reversed(step.restore_grads):
                        t.grad = g
        except EagerFallback:
            _set_rng_state(rng)  # the eager run that follows starts from the same state
            _undo_writes(versions, saved)
            raise
        except NotImplementedError as e:
            _undo_writes(versions, saved)
            if isinstance(e, Dy2StaticError) or "dynamic sizes" not in str(e):
                raise
            raise Dy2StaticError(_dynamic_size_message(_frame_of(e.__traceback__), str(e))) from None
    for t, v in versions:
        if t._version != v and id(t) not in saved:
            what = tracer.write_op(t) or "a write"
            _undo_writes(versions, saved)
            raise Dy2StaticError(f"to_static: the converted code writes into a tensor of shape {list(t.shape)} that "
                                 f"requires grad ({what}) while autograd records: the gradient would read the "
                                 f"overwritten value. Update it under oar.no_grad() (then the program writes it in "
                                 f"place), or outside the converted function")
    outs = []
    out_struct = _flatten(out, outs)
    extra = {}
    try:
        if backward and not stepped:
            extra = _trace_backward(tracer, tensors, state, outs)
            outs_all = outs + extra.pop("saved")
        else:  # a training step returns the gradients its code leaves in .grad (Note [Training steps])
            outs_all = outs + ([g for _, g in step.kept] if stepped else [])
            if stepped and step.found_inf is not None:
                outs_all.append(step.found_inf)
        program = tracer.finish(outs_all)
    finally:
        _set_rng_state(rng)
        _undo_writes(versions, saved)
    step_names = [n for n, _ in step.extra] if stepped else []
    return ConcreteProgram(program, out_struct, [n for n, _ in state] + step_names, names, n_out=len(outs),
                           cinn=cinn, place=_run_place(tensors, state),
                           step=StepProgram(tuple(step.updates), dict(step.extra), step.params,
                                            [p for p, _ in step.kept], frozenset(step.cleared_first),
                                            list(step.held), frozenset(id(p) for p, _ in step.held),
                                            step.scaler, step.scale, step.scaler_update,
                                            step.found_inf is not None, tuple(step.deferred),
                                            tuple(step.sat_out))
                           if stepped else None,
                           **extra)


def _undo_writes(versions, saved):
    """Puts back what tracing wrote into the inputs and the state (their first run is the program's)."""
    from ..autograd import no_grad

    with no_grad():
        for t, v in versions:
            if t._version != v and id(t) in saved:
                t._copy_from(saved[id(t)])


def _trace_backward(tracer, tensors, state, outs):
    """Traces d(outs)/d(inputs and parameters that require grad) into a backward program
    whose inputs are the forward values it reads (saved<k>) and one gradient per output."""
    import oar

    wrt_inputs = [i for i, t in enumerate(tensors) if not t.stop_gradient]
    wrt_params = [n for n, t in state if not t.stop_gradient]
    grad_outputs = [k for k, o in enumerate(outs) if not o.stop_gradient and o.dtype.is_floating_point]
    if not grad_outputs or not (wrt_inputs or wrt_params):
        return {"saved": []}
    by_name = dict(state)
    wrt = [tensors[i] for i in wrt_inputs] + [by_name[n] for n in wrt_params]
    heads = [outs[k] for k in grad_outputs]
    cotangents = [oar.ones_like(h) for h in heads]  # stand-ins, made outside both programs
    btracer = _pir.Tracer()
    btracer.set_source(tracer)
    for i, (h, c) in enumerate(zip(heads, cotangents)):
        btracer.add_input(c, f"grad{i}", tracer.dims_of(h))
    with _Tracing(btracer):
        grads = _C.grad(heads, wrt, cotangents, False, False, True)
        grads = [g if g is not None else oar.zeros_like(w) for g, w in zip(grads, wrt)]
    saved = btracer.saved()
    backward = btracer.finish(grads)
    return {"saved": saved, "backward": backward, "wrt_inputs": wrt_inputs,
            "wrt_params": wrt_params, "grad_outputs": grad_outputs}


def _grow(t, dims):
    """t with every dynamic dim one longer (the first slice repeated): a second example."""
    import oar

    for axis in dims:
        first = oar.slice(t, [axis], [0], [1]) if t.shape[axis] > 0 else None
        if first is None:
            shape = list(t.shape)
            shape[axis] = 1
            first = oar.zeros(shape, dtype=t.dtype)
        t = oar.concat([t, first], axis=axis)
    return t


class StaticFunction:
    """A function (or a layer's forward) converted by to_static; calls run the program."""

    def __init__(self, function, input_spec=None, layer=None, full_graph=True, cinn=False):
        self._function = function
        self._cinn_requested = cinn  # backend='CINN' or build_strategy.build_cinn_pass
        self._layer = layer
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._full_graph = full_graph
        self._converted = None  # the function with its Python control flow converted (dy2static.py)
        self._cache = {}
        self._state_cache = None
        # A plain function's layers and tensors, read live (Note [Captured state]); found at
        # the first call, when the module's globals are set (a decorator runs before them)
        self._captured_objs = None if layer is None else []
        functools.update_wrapper(self, function)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        # `@to_static def forward(self, x)`: one StaticFunction per layer instance.
        bound = instance.__dict__.get("_static_" + self._function.__name__)
        if bound is None:
            bound = StaticFunction(self._function.__get__(instance, owner), self._input_spec, instance,
                                   self._full_graph, self._cinn_requested)
            instance.__dict__["_static_" + self._function.__name__] = bound
        return bound

    @property
    def dygraph_function(self):
        return self._function

    def _tensor_specs(self, args, n):
        """The InputSpec of each of the n flattened tensor arguments: input_spec[i] belongs to
        positional argument i (a list of specs to a list/tuple argument), so an argument that
        is None or a Python value keeps its place (Paddle's rule)."""
        out = [None] * n
        if not self._input_spec:
            return out
        k = 0

        def walk(obj, spec):
            nonlocal k
            if isinstance(obj, _Tensor):
                if k < n and isinstance(spec, InputSpec):
                    out[k] = spec
                k += 1
            elif isinstance(obj, (list, tuple)):
                specs = spec if isinstance(spec, (list, tuple)) and len(spec) == len(obj) else [None] * len(obj)
                for o, sp in zip(obj, specs):
                    walk(o, sp)
            elif isinstance(obj, dict):
                for v in obj.values():
                    walk(v, None)
        for i, a in enumerate(args):
            walk(a, self._input_spec[i] if i < len(self._input_spec) else None)
        return out

    def _spec_dims(self, args, tensors):
        """Per tensor argument: the InputSpec's shape when it declares dynamic dims, else None."""
        out = [None] * len(tensors)
        for i, spec in enumerate(self._tensor_specs(args, len(tensors))):
            if spec is None or spec.shape is None:
                continue
            t = tensors[i]
            if len(spec.shape) != len(t.shape) or any(d != -1 and d != s for d, s in zip(spec.shape, t.shape)):
                raise ValueError(f"to_static: input {i} has shape {list(t.shape)}, which does not match "
                                 f"its InputSpec shape {list(spec.shape)}")
            if str(spec.dtype).replace("paddle.", "").replace("oar.", "") != str(t.dtype).replace("oar.", "").replace("paddle.", ""):
                raise TypeError(f"to_static: input {i} has dtype {t.dtype}, its InputSpec says {spec.dtype}")
            if -1 in spec.shape:
                out[i] = list(spec.shape)
        return out

    def _input_names(self, args, n):
        return [getattr(s, "name", None) for s in self._tensor_specs(args, n)]

    def get_concrete_program(self, *args, **kwargs):
        if not kwargs and not self._input_spec and all(isinstance(a, _Tensor) for a in args):
            # The common call f(t1, t2...) without InputSpec: the signature straight from
            # the tensors (the general path below flattens nested structures first).
            tensors = list(args)
            struct = None
            specs = [None] * len(tensors)
        else:
            tensors = []
            struct = _flatten((args, kwargs), tensors)
            specs = self._spec_dims(args, tensors)
        training = getattr(self._layer, "training", None)
        if self._layer is None and self._captured():
            training = tuple(getattr(o, "training", None) for _, o in self._captured())
        state = self._state()
        # Which tensors need gradients decides whether the signature has a backward program.
        grads = None
        if _is_grad_enabled():
            grads = (tuple([not t.stop_gradient for t in tensors]),
                     tuple([not t.stop_gradient for t in state.values()]))
            if not any(grads[0]) and not any(grads[1]):
                grads = None
        if grads is not None:
            # Backward rules read concrete sizes (reshape(grad, x.dims()), sum_to...), so a
            # training signature is converted per concrete shape; InputSpec's dynamic dims
            # serve the forward-only programs (inference, jit.save).
            specs = [None] * len(tensors)
        # Autocast decides the casts the program records, so its state is part of the key.
        amp = _C._amp_get_state()
        amp = (amp[0], amp[1], tuple(amp[2]), tuple(amp[3])) if amp[0] else None
        sig = (tuple([(tuple(t.shape), t.dtype) for t in tensors]) if struct is None
               else _key_of(struct, tensors, specs))
        place = _run_place(tensors, state.items()).device_str()
        key = (sig, training, grads, amp, self._use_cinn(), place)
        entry = self._entry(key, args, kwargs, tensors, specs, grads is not None)
        if entry is not _EAGER and entry.step is not None:
            # A training step's program reads the gradients held when it was traced
            # (accumulation, Note [Training steps]); other held gradients need a variant.
            from ._train_step import held_key

            held = held_key(entry.step)
            if held != entry.step.held_ids:
                entry = self._entry(key + (held,), args, kwargs, tensors, specs, True)
        return entry, tensors

    def _entry(self, key, args, kwargs, tensors, specs, backward):
        entry = self._cache.get(key)
        if entry is None:
            try:
                entry = self._convert(args, kwargs, tensors, specs, backward=backward)
            except EagerFallback as e:
                import warnings
                warnings.warn(str(e), stacklevel=4)
                entry = _EAGER
            self._cache[key] = entry
        return entry

    def _traced_function(self):
        """What tracing runs: with full_graph (the default), the function whose Python
        if/while on tensors became cond/while_loop (dy2static.convert_function, converted
        once); the function as written when OAR_DY2STATIC=0 or full_graph=False."""
        from . import dy2static

        if not (self._full_graph and dy2static.enabled):
            return self._function
        if self._converted is None:
            self._converted = dy2static.convert_function(self._function)
        return self._converted

    def _convert(self, args, kwargs, tensors, specs, backward):
        names = self._input_names(args, len(tensors))
        fn = self._traced_function()
        cinn = self._use_cinn()
        state = list(self._state().items())
        entry = trace_program(fn, self._layer, args, kwargs, specs, names, backward, cinn, state)
        if any(s is not None for s in specs):
            # Trace again with every dynamic dim one longer: a program that read such a
            # size as a Python number (x.shape[0] into reshape) would come out different.
            grown = [(_grow(t, [i for i, d in enumerate(s) if d == -1]) if s is not None else t)
                     for t, s in zip(tensors, specs)]
            struct = _flatten((args, kwargs), [])
            a2, k2 = _unflatten(struct, grown)
            entry2 = trace_program(fn, self._layer, a2, k2, specs, names, backward, cinn, state)
            if (str(entry.program) != str(entry2.program)
                    or str(entry.backward_program) != str(entry2.backward_program)):
                raise Dy2StaticError(_dynamic_size_message(
                    getattr(self._function, "__qualname__", "the function"),
                    f"two traces with different sizes for the InputSpec's -1 dims "
                    f"{[s for s in specs if s is not None]} gave different programs"))
        return entry

    def _use_cinn(self):
        """The fusion compiler runs when asked for (backend='CINN', BuildStrategy's
        build_cinn_pass, FLAGS_use_cinn) and built; otherwise one warning, unfused."""
        return _cinn_switch(self._cinn_requested or _C.get_flag("use_cinn") == "true")

    def __call__(self, *args, **kwargs):
        if not _enabled:
            return self._function(*args, **kwargs)
        if _active:
            # Called while another conversion (or a static program) traces: the outer trace
            # records this function's ops, as Paddle inlines nested to_static functions. (Its
            # own program run here would reach the outer program as a constant result.)
            return self._traced_function()(*args, **kwargs)
        entry, tensors = self.get_concrete_program(*args, **kwargs)
        if entry is _EAGER:
            return self._function(*args, **kwargs)
        params = self._state()
        if entry.step is not None:  # Note [Training steps]
            from ._train_step import run_step

            outs = run_step(entry, tensors, params)
        else:
            outs = entry.run(tensors, params)
        result = _unflatten(entry.out_struct, outs)
        # A layer whose forward does eager bookkeeping on its outputs (DataParallel readies
        # its gradient all-reduce for the coming backward) gets each run's outputs: the
        # program ran, not its Python forward.
        after = getattr(self._layer, "_after_converted_forward", None)
        if after is not None:
            after(result)
        return result

    def _captured(self):
        if self._captured_objs is None:
            self._captured_objs = _captured(self._function)
        return self._captured_objs

    def _state(self):
        """The layer's parameters and buffers by name, recollected only when some layer's
        state changed (the traversal costs ~0.4 ms on ResNet-18)."""
        if self._layer is None and not self._captured():
            return {}
        epoch = state_epoch()
        if self._state_cache is None or self._state_cache[0] != epoch:
            state = _named_state(self._layer) if self._layer is not None else _captured_state(self._captured())
            self._state_cache = (epoch, dict(state))
        return self._state_cache[1]

    # ---- introspection
    @property
    def concrete_programs(self):
        return [e for e in self._cache.values() if e is not _EAGER]

    @property
    def main_program(self):
        if not self.concrete_programs:
            raise RuntimeError("to_static: the function has not been called yet, so no program exists")
        return self.concrete_programs[-1].program

    def rollback(self):
        """Restores the eager function (Paddle's StaticFunction.rollback)."""
        if self._layer is not None and self._layer.__dict__.get("forward") is self:
            del self._layer.__dict__["forward"]
            return self._layer.forward
        return self._function


_cinn_warned = False


def _cinn_switch(requested):
    global _cinn_warned
    if not requested:
        return False
    if _C.cinn.compiled_with_cinn():
        # Paddle's CINN switches turn the decompositions on (FLAGS_prim_all).
        _C.set_flag("prim_all", "true")
        return True
    if not _cinn_warned:
        import warnings
        _cinn_warned = True
        warnings.warn("CINN was requested but Oar was built without LLVM 19 (OAR_WITH_CINN=OFF); "
                      "running unfused", stacklevel=3)
    return False


def _wants_cinn(build_strategy, backend):
    if backend is not None and (not isinstance(backend, str) or backend.upper() not in ("CINN",)):
        raise ValueError(f"to_static: backend must be None or 'CINN', got {backend!r}")
    return backend is not None or bool(getattr(build_strategy, "build_cinn_pass", False))


def to_static(function=None, input_spec=None, build_strategy=None, backend=None, full_graph=True,
              **kwargs):
    """Converts a function or an nn.Layer into a static program (see the module doc).

    @oar.jit.to_static
    def f(x): ...

    net = oar.jit.to_static(net, input_spec=[InputSpec([None, 784], "float32")])
    """
    if input_spec is not None:
        if not isinstance(input_spec, (list, tuple)):
            raise TypeError(f"to_static: input_spec must be a list of InputSpec, got {type(input_spec).__name__}")
        for s in input_spec:
            if not isinstance(s, (InputSpec, _Tensor)) and s is not None:
                raise TypeError(f"to_static: input_spec entries must be InputSpec, got {type(s).__name__}")
        input_spec = [InputSpec.from_tensor(s) if isinstance(s, _Tensor) else s for s in input_spec]
    cinn = _wants_cinn(build_strategy, backend)

    def decorate(fn):
        from ..nn import Layer

        if isinstance(fn, Layer):
            layer = fn
            forward = layer.forward
            if isinstance(forward, StaticFunction):
                return layer
            layer.__dict__["forward"] = StaticFunction(forward, input_spec, layer, full_graph, cinn)
            return layer
        if isinstance(fn, StaticFunction):
            return fn
        if not callable(fn):
            raise TypeError(f"to_static: expected a function or an oar.nn.Layer, got {type(fn).__name__}")
        layer = getattr(fn, "__self__", None)
        layer = layer if isinstance(layer, Layer) else None
        return StaticFunction(fn, input_spec, layer, full_graph, cinn)

    if function is None:
        return decorate
    return decorate(function)


def not_to_static(func=None):
    """Paddle's marker: calls to `func` from converted code run it as written (its Python
    control flow is not converted; ops still trace). Decorator with or without ()."""
    def mark(f):
        target = getattr(f, "__func__", f)
        try:
            target.__oar_not_to_static__ = True
        except (AttributeError, TypeError):
            pass
        return f
    return mark(func) if func is not None else mark


_ignored_modules = set()


def ignore_module(modules):
    """Functions of these modules (module objects or names; their submodules too) are
    called as written from converted code, not converted (Paddle's ignore_module)."""
    for m in modules if isinstance(modules, (list, tuple, set)) else [modules]:
        _ignored_modules.add(m if isinstance(m, str) else m.__name__)


def is_tracing():
    """True while to_static is converting code on this thread."""
    return bool(_active)

