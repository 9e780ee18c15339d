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

    def __init__(self, program, params, info):
        self._pir = program
        self._executor = _C.pir.Executor(program.run_pipeline("jit-infer", lower_copy=True))
        self._params = params
        self.feed_names = list(self._executor.input_names)
        self.fetch_targets = [FetchTarget(n, i) for i, n in enumerate(info.get("fetch_names")
                                                                      or self._executor.output_names)]

    def _run(self, feed, fetch_list, scope):
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
        params = {n: scope._get(n) if scope._get(n) is not None else t for n, t in self._params.items()}
        outs = self._executor.run(inputs, params)
        by_name = {t.name: t for t in self.fetch_targets}
        picked = []
        for i, f in enumerate(fetch_list or self.fetch_targets):
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
    for n, t in params.items():
        scope._set(n, t)
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
