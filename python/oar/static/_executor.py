"""static.Executor, Scope, global_scope, scope_guard (Note [Static mode] in
docs/notes/static.md).

Executor.run(program, feed, fetch_list) takes a copy of the program recorded so far with
the fetched variables as its outputs (Tracer.snapshot), lowers it with the jit-train
pipeline and runs it on the one executor (pir/executor), as to_static's programs run.
The lowered program is cached per (program state, fetch list, feed shapes and dtypes,
fusion compiler on or off). With FLAGS_use_cinn, or a CompiledProgram whose
BuildStrategy sets build_cinn_pass, the pipeline is `cinn` instead (docs/notes/cinn.md,
"Switching it on"): a training program's backward and optimizer updates, which are ops
here, are fused with the forward's.
Parameters and other persistable variables live in the scope, by name; the program's
builtin.set_parameter ops (optimizer updates) write into the scope's tensors."""
import contextlib

import numpy as np

from .. import _C
from . import _program

_pir = _C.pir
_Tensor = _C.Tensor


class _ScopeTensor:
    """Paddle's LoDTensor view of a scope variable: np.array(t), t.set(value, place)."""

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def _t(self):
        t = self._scope._get(self._name)
        if t is None:
            raise RuntimeError(f"Scope: variable '{self._name}' holds no tensor yet (run the startup program)")
        return t

    def __array__(self, dtype=None, copy=None):
        # A copy: the scope's tensor changes in place with every training run.
        a = np.array(_program.numpy_of(self._t()))
        return a.astype(dtype) if dtype is not None else a

    def set(self, value, place=None):
        value = np.asarray(value)
        old = self._scope._get(self._name)
        if old is not None and list(old.shape) != list(value.shape):
            raise ValueError(f"Scope: '{self._name}' has shape {list(old.shape)}, the value has {list(value.shape)}")
        if old is not None:
            value = value.astype(_program.numpy_of(old).dtype)
        self._scope._set(self._name, _C.to_tensor(value, None, None, True))

    def shape(self):
        return list(self._t().shape)

    def _dtype(self):
        return self._t().dtype

    def __repr__(self):
        return f"<Scope tensor '{self._name}'>"


class _ScopeVar:
    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def get_tensor(self):
        return _ScopeTensor(self._scope, self._name)

    def name(self):
        return self._name


class Scope:
    """Named variables (parameters, optimizer state) that programs read and update."""

    def __init__(self):
        self._vars = {}

    def _get(self, name):
        return self._vars.get(name)

    def _set(self, name, tensor):
        self._vars[name] = tensor

    def var(self, name):
        self._vars.setdefault(name, None)
        return _ScopeVar(self, name)

    def find_var(self, name):
        return _ScopeVar(self, name) if name in self._vars else None

    def local_var_names(self):
        return list(self._vars)

    def drop_kids(self):
        pass


started_readers = []  # PyReaders (iterable=False) after start(): Executor.run(feed=None) reads them

_global_scope = Scope()
_scopes = [_global_scope]


def global_scope():
    """The scope Executor.run uses unless scope_guard or run(scope=...) says otherwise."""
    return _scopes[-1]


@contextlib.contextmanager
def scope_guard(scope):
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard: expected an oar.static.Scope, got {type(scope).__name__}")
    _scopes.append(scope)
    try:
        yield
    finally:
        _scopes.pop()


def _use_cinn(build_strategy):
    """Whether Executor.run compiles with the fusion compiler: asked for by the
    BuildStrategy of a CompiledProgram or by FLAGS_use_cinn, and built (else one warning)."""
    from ..jit.api import _cinn_switch

    asked = bool(getattr(build_strategy, "build_cinn_pass", False)) or _C.get_flag("use_cinn") == "true"
    return _cinn_switch(asked)


class CompiledProgram:
    """Paddle's static.CompiledProgram: a program (or a loaded inference program) with the
    BuildStrategy it runs under. Executor.run runs it as it runs the program itself;
    `build_cinn_pass = True` compiles it with the fusion compiler."""

    def __init__(self, program_or_graph, build_strategy=None):
        from . import BuildStrategy
        from ._io import LoadedProgram

        if not isinstance(program_or_graph, (_program.Program, LoadedProgram)):
            raise TypeError(f"CompiledProgram: program_or_graph must be an oar.static.Program, got "
                            f"{type(program_or_graph).__name__}")
        if build_strategy is not None and not isinstance(build_strategy, BuildStrategy):
            raise TypeError(f"CompiledProgram: build_strategy must be a static.BuildStrategy or None, got "
                            f"{type(build_strategy).__name__}")
        self._program = program_or_graph
        self._build_strategy = build_strategy

    def __repr__(self):
        return f"CompiledProgram(build_strategy={self._build_strategy})"


class _Compiled:
    """One lowered program: its executor and what to feed it."""

    def __init__(self, pir_program, fetch_names, place, cinn=False):
        self.program = pir_program
        pipeline = "cinn" if cinn else "jit-train"
        self.executor = _pir.Executor(pir_program.run_pipeline(pipeline, lower_copy=True, place=place), place)
        self.fetch_names = fetch_names
        self.params = []
        for op in pir_program.ops():
            if op.name == "builtin.parameter":
                self.params.append((op.attrs()["name"], op.result(0).num_uses > 0))


class Executor:
    """Runs static programs (see the module doc)."""

    def __init__(self, place=None):
        self.place = place
        # Where its programs run: `place` (a Place or a device string), else Paddle's
        # expected place, the current device. Parameters live there too.
        self._place = _C._get_current_place() if place is None else _pir_place(place)
        self._cache = {}

    def close(self):
        self._cache.clear()

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed", fetch_var_name="fetch",
            scope=None, return_numpy=True, use_program_cache=False, use_prune=False):
        from ._io import LoadedProgram

        program = program if program is not None else _program.default_main_program()
        strategy = None
        if isinstance(program, CompiledProgram):
            program, strategy = program._program, program._build_strategy
        scope = scope if scope is not None else global_scope()
        if isinstance(feed, (list, tuple)):  # per place, as a DataLoader(return_list=False) yields
            if len(feed) != 1 or not isinstance(feed[0], dict):
                raise ValueError(f"Executor.run: feed must be a dict, or a list of one dict per place (one "
                                 f"place here), got a list of {len(feed)} {type(feed[0]).__name__ if feed else ''}")
            feed = feed[0]
        feed = dict(feed or {})
        if not feed and started_readers and isinstance(program, _program.Program):
            feed = _reader_feed(program)
        if fetch_list is None:
            fetch_list = []
        elif not isinstance(fetch_list, (list, tuple)):
            fetch_list = [fetch_list]
        if isinstance(program, LoadedProgram):
            outs = program._run(feed, fetch_list, scope, _use_cinn(strategy), self._place)
        elif isinstance(program, _program.Program):
            if program._init:  # a startup program
                return self._run_startup(program, scope)
            asserts = program._base()._asserts
            extra = [t for cond, data, _, _ in asserts for t in [cond] + data]
            outs = self._run_main(program, feed, list(fetch_list) + extra, scope, _use_cinn(strategy))
            if extra:
                outs, checked = outs[:len(fetch_list)], outs[len(fetch_list):]
                _check_asserts(asserts, checked)
        else:
            raise TypeError(f"Executor.run: program must be an oar.static.Program, got {type(program).__name__}")
        if return_numpy:
            return [_fetched_array(o) for o in outs]
        return outs

    def train_from_dataset(self, program=None, dataset=None, scope=None, thread=0, debug=False, fetch_list=None,
                           fetch_info=None, print_period=100, fetch_handler=None):
        """Runs `program` once per batch of `dataset` (paddle.base.dataset), printing the
        fetched values every print_period batches."""
        from ..base.dataset import run_from_dataset

        run_from_dataset(self, program, dataset, scope, fetch_list, fetch_info, print_period, False)

    def infer_from_dataset(self, program=None, dataset=None, scope=None, thread=0, debug=False, fetch_list=None,
                           fetch_info=None, print_period=100, fetch_handler=None):
        """train_from_dataset on the forward part of `program` (no parameter updates)."""
        from ..base.dataset import run_from_dataset

        run_from_dataset(self, program if program is not None else _program.default_main_program(), dataset,
                         scope, fetch_list, fetch_info, print_period, True)

    def _run_startup(self, program, scope):
        names = list(program._init)
        key = (id(program), "startup", program._version)
        c = self._cache.get(key)
        if c is None:
            with _program._paused():
                c = _Compiled(program._snapshot([program._init[n] for n in names], names), names, self._place)
            self._cache[key] = c
        with _program._paused():
            outs = c.executor.run([], {})
            # Copies: the scope's tensors are updated in place by the main program, while
            # the startup program's outputs are its constants' memory.
            for n, o in zip(names, outs):
                scope._set(n, _C.ops.assign(o))
        return []

    def _fetch_targets(self, program, fetch_list):
        tensors, names = [], []
        for i, f in enumerate(fetch_list):
            if isinstance(f, str):
                t = program._var(f, "Executor.run: fetch_list")
            elif isinstance(f, _Tensor):
                t = f
                if not program._base()._tracer.is_traced(t):
                    what = f"variable '{t.name}'" if _program._is_static_var(t) else "an eager tensor"
                    raise ValueError(f"Executor.run: fetch_list[{i}] is {what} of shape {list(t.shape)}, which "
                                     f"this program does not compute")
            else:
                raise TypeError(f"Executor.run: fetch_list[{i}] must be a variable or its name, got "
                                f"{type(f).__name__}")
            tensors.append(t)
            names.append(f"fetch{i}")
        return tensors, names

    def _feed_inputs(self, program, c, feed):
        inputs_decl = program._base()._inputs
        for name in feed:
            if name not in inputs_decl:
                raise ValueError(f"Executor.run: feed names '{name}', which is no static.data of the program "
                                 f"(it has {sorted(inputs_decl)})")
        out = []
        for name in c.executor.input_names:
            if name not in feed:
                raise ValueError(f"Executor.run: the program needs the input '{name}' but feed has "
                                 f"{sorted(feed)}")
            _, dims, dtype = inputs_decl[name]
            out.append(_as_feed(name, feed[name], dims, dtype))
        return out

    def _run_main(self, program, feed, fetch_list, scope, cinn):
        tensors, names = self._fetch_targets(program, fetch_list)
        shapes = tuple((k, tuple(np.shape(v)), str(getattr(v, "dtype", ""))) for k, v in sorted(feed.items()))
        key = (id(program), program._ops_version(), tuple(id(t) for t in tensors), shapes, cinn)
        c = self._cache.get(key)
        if c is None:
            from . import _specialize

            with _program._paused():
                if _specialize.needs_specialization(program):
                    fed = {k: list(np.shape(v)) if not isinstance(v, _Tensor) else list(v.shape)
                           for k, v in feed.items()}
                    pir_program = _specialize.record(program, fed, tensors, self._place)
                else:
                    pir_program = program._snapshot(tensors, names)
                c = _Compiled(pir_program, names, self._place, cinn)
            c.keep = tensors  # the ids in the key stay valid while the entry lives
            self._cache[key] = c
        inputs = self._feed_inputs(program, c, feed)
        base = program._base()
        for name, sched in base._lr_vars:
            t = scope._get(name)
            if t is not None:
                with _program._paused():
                    t._copy_from(_C.to_tensor(np.asarray(sched(), dtype=np.float64).reshape(list(t.shape)),
                                              None, None, True))
        params = {}
        for name, used in c.params:
            t = scope._get(name)
            if t is None:
                if used:
                    raise RuntimeError(f"Executor.run: the program reads '{name}', which the scope does not hold: "
                                       f"run the startup program first (exe.run(static.default_startup_program()))")
                continue
            params[name] = t
        with _program._paused():
            return c.executor.run(inputs, params)


def _pir_place(place):
    """Executor(place)'s place as the core takes it (a Place, or a device string)."""
    from .._device import parse_device

    return parse_device(place, "Executor") if isinstance(place, str) else place


def _check_asserts(asserts, values):
    """Raises for the first Assert whose condition came out False."""
    from .nn.control_flow import check

    i = 0
    for cond, data, summarize, name in asserts:
        ok = bool(np.asarray(_program.numpy_of(values[i])).reshape(()))
        vals = [_program.numpy_of(v) for v in values[i + 1:i + 1 + len(data)]]
        check(ok, vals, data, summarize, name)
        i += 1 + len(data)


def _reader_feed(program):
    """The next batch of the started PyReader that feeds this program's inputs."""
    inputs = program._base()._inputs
    for reader in started_readers:
        if all(v.name in inputs for v in reader._feed_list):
            feed = reader._next_feed()
            if feed is None:
                from ..base.core import EOFException

                raise EOFException("Executor.run: the started PyReader has no more batches (call reset(), then "
                                   "start() for another pass)")
            return feed
    return {}


def _as_feed(name, value, dims, dtype):
    """A feed value as a tensor, checked against the static.data declaration."""
    if isinstance(value, _Tensor):
        t = value
    else:
        arr = np.asarray(value)
        if arr.dtype == object:
            raise TypeError(f"Executor.run: feed '{name}' is not numeric data")
        want = np.dtype(str(dtype).replace("oar.", "").replace("paddle.", "").replace("bfloat16", "float32"))
        if arr.dtype != want:
            # Python scalars and lists take the declared dtype; arrays must match it.
            if isinstance(value, np.ndarray):
                raise TypeError(f"Executor.run: feed '{name}' has dtype {arr.dtype}, but static.data '{name}' "
                                f"is {want}")
            arr = arr.astype(want)
        t = _C.to_tensor(arr, None, None, True)
    if t.dtype != dtype:
        raise TypeError(f"Executor.run: feed '{name}' has dtype {str(t.dtype).replace('oar.', '')}, but "
                        f"static.data '{name}' is {str(dtype).replace('oar.', '')}")
    shape = list(t.shape)
    if len(shape) != len(dims) or any(d != -1 and d != s for d, s in zip(dims, shape)):
        raise ValueError(f"Executor.run: feed '{name}' has shape {shape}, but static.data '{name}' is declared "
                         f"with shape {dims}")
    return t


def cpu_places(device_count=None):
    from .._device import CPUPlace

    return [CPUPlace() for _ in range(device_count or 1)]


def cuda_places(device_ids=None):
    from .._device import CUDAPlace

    return [CUDAPlace(i) for i in (device_ids or [0])]


def _fetched_array(t):
    """A fetched tensor as NumPy, int64 typed as C long long as Paddle's fetch returns it (its
    repr says dtype=int64; equal dtype, same memory)."""
    import numpy as np
    a = _program.numpy_of(t)
    return a.view(np.longlong) if isinstance(a, np.ndarray) and a.dtype == np.int64 else a
