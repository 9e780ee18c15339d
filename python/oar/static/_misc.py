"""Smaller static-mode APIs: accuracy, Print, program state, normalize_program, name
and device guards."""
import contextlib

import numpy as np

from .. import _C


def accuracy(input, label, k=1, correct=None, total=None):  # noqa: A002
    """Top-k accuracy of a batch as ops of the program (a 0-D float32 variable)."""
    import oar

    if label.ndim == 1:
        label = oar.unsqueeze(label, [-1])
    _, idx = oar.topk(input, k)
    hit = (idx == label.astype(idx.dtype)).astype("float32").sum(axis=1)
    return oar.mean(oar.clip(hit, 0.0, 1.0))


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True, print_tensor_type=True,
          print_tensor_shape=True, print_tensor_lod=True, print_phase="both"):
    """Prints `input` every time the program runs (pd_op.print_tensor); returns it."""
    label = message or ""
    if print_tensor_name and input.name:
        label = f"{label} {input.name}".strip()
    return _C.ops._print_tensor(input, label, int(summarize))


def normalize_program(program, feed_vars, fetch_vars, **kwargs):
    """The inference program for feed_vars -> fetch_vars (what save_inference_model saves)."""
    from ._io import _as_vars

    _as_vars(feed_vars, "normalize_program", "feed_vars")
    fetch_vars = _as_vars(fetch_vars, "normalize_program", "fetch_vars")
    return program.clone(for_test=True)


def load_program_state(model_path, var_list=None):
    """The dict static.save wrote (name -> numpy array)."""
    import pickle

    path = model_path if model_path.endswith(".pdparams") else model_path + ".pdparams"
    with open(path, "rb") as f:
        return pickle.load(f)


def set_program_state(program, state_dict):
    """Puts state_dict's arrays into the global scope's variables of `program`."""
    from ._executor import global_scope

    scope = global_scope()
    names = set(program._base()._params)
    for n, a in state_dict.items():
        if n not in names:
            raise ValueError(f"set_program_state: '{n}' is no variable of the program")
        scope._set(n, _C.to_tensor(np.asarray(a), None, None, True))


@contextlib.contextmanager
def name_scope(prefix=None):
    yield


@contextlib.contextmanager
def device_guard(device=None):
    yield
