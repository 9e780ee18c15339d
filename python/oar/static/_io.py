"""save_inference_model / load_inference_model / save / load for static programs.

save_inference_model writes Oar's saved-model files (Note [Saved model] in
docs/notes/jit.md), the ones oar.jit.save writes: the program pruned to what the fetched
variables need (Tracer.snapshot with prune: no optimizer writes, no unused inputs), the
parameters' values from the scope, and the .pdinfo, so oar.inference predictors and
oar.jit.load read them."""
import json
import os
import pickle

import numpy as np

from .. import _C
from . import _program
from ._executor import global_scope

_Tensor = _C.Tensor


def _as_vars(x, who, what):
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    if not items:
        raise ValueError(f"{who}: {what} is empty")
    for i, v in enumerate(items):
        if not isinstance(v, _Tensor) or not _program._is_static_var(v):
            raise TypeError(f"{who}: {what}[{i}] must be a static variable, got {type(v).__name__}")
    return items


def _scope_of(executor):
    return getattr(executor, "_scope", None) or global_scope()


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor, **kwargs):
    from ..framework_io import save as save_tensors
    from ..jit.save_load import _atomic_write, _check_prefix

    who = "static.save_inference_model"
    path = _check_prefix(path_prefix, who)
    feed_vars = _as_vars(feed_vars, who, "feed_vars")
    fetch_vars = _as_vars(fetch_vars, who, "fetch_vars")
    program = kwargs.get("program") or _program.default_main_program()
    base = program._base()
    feed_names = []
    for v in feed_vars:
        if v.name not in base._inputs:
            raise ValueError(f"{who}: feed variable '{v.name}' is no static.data of the program "
                             f"(it has {sorted(base._inputs)})")
        feed_names.append(v.name)
    names = []
    for v in fetch_vars:
        n = v.name
        names.append(n if n not in names else f"{n}_{len(names)}")
    with _program._paused():
        # Every input the fetches do not read goes (the check below names feeds among them).
        pruned = program._snapshot(fetch_vars, names, prune=True, keep_inputs=[])
    scope = _scope_of(executor)
    params = {}
    inputs = []
    for op in pruned.ops():
        if op.name == "builtin.parameter":
            n = op.attrs()["name"]
            t = scope._get(n)
            if t is None:
                raise RuntimeError(f"{who}: parameter '{n}' is not in the scope: run the startup program first")
            params[n] = t
        elif op.name == "builtin.input":
            inputs.append(op.attrs()["name"])
    missing = [n for n in feed_names if n not in inputs]
    if missing:
        raise ValueError(f"{who}: the fetched variables do not depend on the feed variables {missing}")
    info = {"format": "oar.jit/1", "inputs": inputs, "buffers": [],
            "output_struct": {"T": 0} if len(names) == 1 else {"list": [{"T": i} for i in range(len(names))]},
            "fetch_names": names}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _atomic_write(path + ".pdmodel", pruned.serialize(with_parameter_data=False))
    save_tensors(params, path + ".pdiparams")
    _atomic_write(path + ".pdinfo", json.dumps(info, indent=1).encode())


class FetchTarget:
    """A fetch target of a loaded inference program (an output, by name)."""

    def __init__(self, name, index):
        self.name, self._index = name, index

    def __repr__(self):
        return f"FetchTarget(name='{self.name}')"


class LoadedProgram:
    """A program read by load_inference_model; Executor.run runs it."""

    def __init__(self, program, params, info, pipeline="jit-infer"):
        self._pir = program
        self._pipeline = pipeline
        self._executor = _C.pir.Executor(program.run_pipeline(pipeline, lower_copy=True))
        # Executors per (place, fusion compiler) beyond the CPU one above, made on first use.
        self._executors = {("cpu", False): self._executor}
        self._moved = {}  # (parameter, place) -> the file's value copied to that place
        self._params = params
        self._startup = bool(info.get("startup"))
        # parameters the file has no value for come from the scope at run time
        self._scope_params = [(op.attrs()["name"], op.result(0).num_uses > 0) for op in program.ops()
                              if op.name == "builtin.parameter" and op.attrs()["name"] not in params]
        self.feed_names = list(self._executor.input_names)
        self.fetch_targets = [FetchTarget(n, i) for i, n in enumerate(info.get("fetch_names")
                                                                      or self._executor.output_names)]

    def _file_param(self, name, t, place):
        """The file's value of parameter `name` on `place` (copied there once)."""
        if t.place == place:
            return t
        key = (name, place.device_str())
        if key not in self._moved:
            self._moved[key] = t._copy_to(place, False)
        return self._moved[key]

    def _run(self, feed, fetch_list, scope, cinn=False, place=None):
        from ._executor import _as_feed

        for n in feed:
            if n not in self.feed_names:
                raise ValueError(f"Executor.run: feed names '{n}', which is no input of the loaded program "
                                 f"(it has {self.feed_names})")
        inputs = []
        for n, shape, dtype in zip(self.feed_names, self._executor.input_shapes, self._executor.input_dtypes):
            if n not in feed:
                raise ValueError(f"Executor.run: the program needs the input '{n}' but feed has {sorted(feed)}")
            inputs.append(_as_feed(n, feed[n], shape, dtype))
        place = place if place is not None else _C.CPUPlace()
        params = {n: scope._get(n) if scope._get(n) is not None else self._file_param(n, t, place)
                  for n, t in self._params.items()}
        for n, used in self._scope_params:
            t = scope._get(n)
            if t is not None:
                params[n] = t
            elif used:
                raise RuntimeError(f"Executor.run: the loaded program reads the parameter '{n}', which is not "
                                   f"in the scope: run the startup program first")
        key = (place.device_str(), bool(cinn and not self._startup))
        executor = self._executors.get(key)
        if executor is None:  # the fusion compiler's runs on a copy: the loaded program keeps its ops
            program = self._pir.clone() if key[1] else self._pir
            executor = _C.pir.Executor(program.run_pipeline("cinn" if key[1] else self._pipeline, lower_copy=True,
                                                            place=place), place)
            self._executors[key] = executor
        outs = executor.run(inputs, params)
        if self._startup:  # a loaded startup program initialises the scope, as the original does
            for t, o in zip(self.fetch_targets, outs):
                scope._set(t.name, o)
            if not fetch_list:
                return []
        by_name = {t.name: t for t in self.fetch_targets}
        picked = []
        for i, f in enumerate(fetch_list or self.fetch_targets):
            if isinstance(f, _Tensor):  # a variable of the program this one was saved from
                f = f.name
            f = by_name.get(f) if isinstance(f, str) else f
            if not isinstance(f, FetchTarget) or by_name.get(f.name) is not f:
                raise ValueError(f"Executor.run: fetch_list[{i}] is no fetch target of the loaded program "
                                 f"(they are {list(by_name)})")
            picked.append(outs[f._index])
        return picked

    def global_block(self):
        from ._introspect import Block

        return Block(self)

    def __str__(self):
        return str(self._pir)


def load_inference_model(path_prefix, executor, **kwargs):
    """[program, feed_target_names, fetch_targets] of a model save_inference_model (or
    oar.jit.save) wrote; the parameters go into the executor's scope."""
    from ..jit.save_load import load_program

    program, params, info = load_program(os.fspath(path_prefix))
    scope = _scope_of(executor)
    place = getattr(executor, "_place", None)  # where it runs its programs (the scope's tensors live there)
    for n, t in params.items():
        scope._set(n, t if place is None or t.place == place else t._copy_to(place, False))
    loaded = LoadedProgram(program, params, info)
    return [loaded, list(loaded.feed_names), list(loaded.fetch_targets)]


def save(program, model_path, protocol=4, **configs):
    """The program's parameters and persistable variables (from the global scope) into
    model_path + '.pdparams' (a pickled dict of numpy arrays, as Paddle)."""
    scope = global_scope()
    state = {}
    for n in program._base()._params:
        t = scope._get(n)
        if t is not None:
            state[n] = np.asarray(t.__array__())
    d = os.path.dirname(os.path.abspath(model_path))
    os.makedirs(d, exist_ok=True)
    with open(model_path + ".pdparams", "wb") as f:
        pickle.dump(state, f, protocol=protocol)


def load(program, model_path, executor=None, var_list=None):
    """Reads what static.save wrote into the scope's variables of `program`."""
    path = model_path if model_path.endswith(".pdparams") else model_path + ".pdparams"
    with open(path, "rb") as f:
        state = pickle.load(f)
    scope = _scope_of(executor)
    names = set(program._base()._params)
    unknown = [n for n in state if n not in names]
    if unknown:
        raise ValueError(f"static.load: '{path}' holds {unknown[:5]}, which are no variables of the program")
    for n, a in state.items():
        scope._set(n, _C.to_tensor(np.asarray(a), None, None, True))


# ---- a whole Program in oar.save / oar.load (Note [Saved programs] in docs/notes/static.md)
_PROGRAM_FORMAT = "oar.static.program/1"


def program_to_bytes(program):
    """The serialized pir program of a static Program and its info for oar.save: the ops
    recorded so far, each named result variable as an output under its name and every
    other unused result as `fetch_<k>`; a startup program's initial values as outputs
    named like their parameters."""
    who = "oar.save"
    base = program._base()
    if base._grad_records and not program._for_test:
        raise NotImplementedError(
            f"{who}: the program has a backward or optimizer step (append_backward/gradients/minimize), which "
            f"Oar records per fed shape when it runs, so it cannot be saved as one program; save "
            f"program.clone(for_test=True) (the forward part) and the parameters (static.save) instead")
    if program._init:  # a startup program
        names = list(program._init)
        with _program._paused():
            snap = program._snapshot([program._init[n] for n in names], names)
        return snap.serialize(with_parameter_data=False), {"format": _PROGRAM_FORMAT, "startup": True,
                                                           "fetch_names": names}
    # the '<param>@GRAD' inputs _backward.py adds are bound by the per-shape backward, which
    # a clone(for_test=True) does not run
    named = [(n, t) for n, t in base._vars.items()
             if n not in base._inputs and n not in base._params and not n.endswith("@GRAD")]
    names = [n for n, _ in named]
    with _program._paused():
        snap = program._snapshot([t for _, t in named], names)
    k = 0
    for op in snap.ops():
        if op.name == "builtin.input" and op.attrs()["name"] not in base._inputs:
            raise NotImplementedError(f"{who}: the program reads '{op.attrs()['name']}', which no static.data "
                                      f"declares and no op computes")
        if op.name.startswith("builtin."):
            continue
        for v in op.results():
            if v.num_uses == 0:
                while f"fetch_{k}" in base._vars:
                    k += 1
                snap.add_output(v, f"fetch_{k}")
                names.append(f"fetch_{k}")
                k += 1
    return snap.serialize(with_parameter_data=False), {"format": _PROGRAM_FORMAT, "startup": False,
                                                       "fetch_names": names}


def program_from_bytes(data, info):
    """The runnable program oar.load rebuilds from program_to_bytes' output."""
    if not isinstance(info, dict) or info.get("format") != _PROGRAM_FORMAT:
        raise ValueError(f"a saved program of an unknown format {info!r} (this build reads {_PROGRAM_FORMAT})")
    program = _C.pir.deserialize(data)
    return LoadedProgram(program, {}, info, pipeline="jit-train")
