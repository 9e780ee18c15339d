"""paddle.incubate: the graph operators' earlier names (graph_send_recv, graph_reindex,
graph_sample_neighbors, segment_*), LookAhead, and incubate.autograd (functional vjp/jvp and
Jacobian/Hessian of a function), ModelAverage."""
from . import asp, autograd  # noqa: F401
from .graph import (  # noqa: F401
    graph_reindex, graph_sample_neighbors, graph_send_recv, segment_max, segment_mean,
    segment_min, segment_sum,
)
from .lookahead import LookAhead  # noqa: F401
from .modelaverage import ModelAverage  # noqa: F401
from . import nn, optimizer  # noqa: F401


_state_slots = [None]  # use_index: generator states registered by index (slot 0: the initial one)
_current_slot = [0]


def get_rng_state(device=None, use_index=False):
    """The default generator's state (oar.get_rng_state); with use_index, [the index of the
    registered state in use] instead. Oar has one CPU generator, so device changes nothing."""
    if use_index:
        return [_current_slot[0]]
    from .._creation import get_rng_state as _get
    return _get()


def set_rng_state(state_list, device=None, use_index=False):
    """Restores a state from get_rng_state; with use_index, switches to the registered
    state of that index (the one in use is kept at its own index)."""
    from .._creation import get_rng_state as _get, set_rng_state as _set

    if not use_index:
        return _set(state_list)
    idx = state_list[0] if isinstance(state_list, (list, tuple)) and len(state_list) == 1 else state_list
    if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(_state_slots):
        raise ValueError(f"set_rng_state: index must be one of the registered indices 0..{len(_state_slots) - 1}, "
                         f"got {state_list!r}")
    _state_slots[_current_slot[0]] = _get()
    if _state_slots[idx] is not None:
        _set(_state_slots[idx])
    _current_slot[0] = idx
    return None


def register_rng_state_as_index(state_list=None, device=None):
    """Registers the generator's current state (or state_list) under a new index and
    returns [that index]; set_rng_state([index], use_index=True) switches to it."""
    from .._creation import get_rng_state as _get

    _state_slots.append(state_list if state_list is not None else _get())
    return [len(_state_slots) - 1]


def identity_loss(x, reduction="none"):
    """x as the loss: reduced by sum ("sum" or 0), mean ("mean" or 1) or not ("none" or 2)."""
    import oar

    kinds = {0: "sum", 1: "mean", 2: "none", "sum": "sum", "mean": "mean", "none": "none"}
    kind = kinds.get(reduction) if not isinstance(reduction, bool) else None
    if kind is None:
        raise ValueError(f"identity_loss: reduction must be 'sum'/0, 'mean'/1 or 'none'/2, got {reduction!r}")
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"identity_loss: x must be a Tensor, got {type(x).__name__}")
    return oar.sum(x) if kind == "sum" else oar.mean(x) if kind == "mean" else x


def __getattr__(name):
    if name in ("layers", "autotune", "distributed", "passes"):  # loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'oar.incubate' has no attribute '{name}'")

__all__ = ["LookAhead", "ModelAverage", "get_rng_state", "set_rng_state", "graph_send_recv", "graph_reindex", "graph_sample_neighbors",
           "segment_sum", "segment_mean", "segment_max", "segment_min", "identity_loss",
           "register_rng_state_as_index"]
