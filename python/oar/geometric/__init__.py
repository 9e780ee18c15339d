"""paddle.geometric: segment reductions, graph message passing, reindexing and neighbour
sampling, composed from Oar's gather and put_along_axis ops (so they differentiate)."""
from .math import segment_sum, segment_mean, segment_min, segment_max  # noqa: F401
from .message_passing import send_u_recv, send_ue_recv, send_uv  # noqa: F401
from .reindex import reindex_graph, reindex_heter_graph  # noqa: F401
from .sampling import sample_neighbors, weighted_sample_neighbors  # noqa: F401

__all__ = ["send_u_recv", "send_ue_recv", "send_uv", "segment_sum", "segment_mean",
           "segment_min", "segment_max", "reindex_graph", "reindex_heter_graph",
           "sample_neighbors", "weighted_sample_neighbors"]
