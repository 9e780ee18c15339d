"""paddle.incubate: the graph operators' earlier names (graph_send_recv, graph_reindex,
graph_sample_neighbors, segment_*), LookAhead, and incubate.autograd (functional vjp/jvp and
Jacobian/Hessian of a function)."""
from . import asp, autograd  # noqa: F401
from .graph import (  # noqa: F401
    graph_reindex, graph_sample_neighbors, graph_send_recv, segment_max, segment_mean,
    segment_min, segment_sum,
)
from .lookahead import LookAhead  # noqa: F401
from . import nn, optimizer  # noqa: F401


def get_rng_state(device=None, use_index=False):
    """The default generator's state (oar.get_rng_state); Oar has one CPU generator, so device
    and use_index change nothing."""
    from .._creation import get_rng_state as _get
    return _get()


def set_rng_state(state_list, device=None, use_index=False):
    """Restores a state from get_rng_state."""
    from .._creation import set_rng_state as _set
    return _set(state_list)

__all__ = ["LookAhead", "get_rng_state", "set_rng_state", "graph_send_recv", "graph_reindex", "graph_sample_neighbors",
           "segment_sum", "segment_mean", "segment_max", "segment_min"]
