"""Segment reductions: rows of `data` that share a segment id reduce into one output row."""
from oar._creation import _full_on

from ._common import check_tensor, scatter_rows

_FLOAT = ("float16", "bfloat16", "float32", "float64", "int32", "int64")


def _segment(op, data, segment_ids, reduce_op):
    check_tensor(op, "data", data, _FLOAT)
    check_tensor(op, "segment_ids", segment_ids, ("int32", "int64"), 1)
    if data.ndim < 1 or segment_ids.shape[0] != data.shape[0]:
        raise ValueError(f"{op}: segment_ids must have one id per row of data: "
                         f"{segment_ids.shape[0]} ids for data of shape {list(data.shape)}")
    if segment_ids.shape[0] == 0:
        return _full_on(data.place, [0] + list(data.shape[1:]), 0, data.dtype)
    ids = segment_ids.numpy()
    if int(ids.min()) < 0:
        raise ValueError(f"{op}: segment_ids must be non-negative, got minimum {int(ids.min())}")
    return scatter_rows(op, data, segment_ids, int(ids.max()) + 1, reduce_op)


def segment_sum(data, segment_ids, name=None):
    """out[i] = sum of data[j] over j with segment_ids[j] == i; rows = max(segment_ids) + 1,
    empty segments are 0."""
    return _segment("segment_sum", data, segment_ids, "sum")


def segment_mean(data, segment_ids, name=None):
    """out[i] = mean of data[j] over j with segment_ids[j] == i (0 for empty segments)."""
    return _segment("segment_mean", data, segment_ids, "mean")


def segment_min(data, segment_ids, name=None):
    """out[i] = minimum of data[j] over j with segment_ids[j] == i (0 for empty segments)."""
    return _segment("segment_min", data, segment_ids, "min")


def segment_max(data, segment_ids, name=None):
    """out[i] = maximum of data[j] over j with segment_ids[j] == i (0 for empty segments)."""
    return _segment("segment_max", data, segment_ids, "max")


__all__ = ["segment_sum", "segment_mean", "segment_min", "segment_max"]
