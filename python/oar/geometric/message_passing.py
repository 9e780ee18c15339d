"""Graph message passing: gather node features along edges (src -> dst), combine them with edge
features, and reduce the messages into the destination nodes."""
import oar

from ._common import check_index, check_tensor, out_rows, reduce_op_name, scatter_rows

_MESSAGE = ("add", "sub", "mul", "div")


def _message_op(op, message_op):
    if message_op not in _MESSAGE:
        raise ValueError(f"{op}: message_op must be 'add', 'sub', 'mul' or 'div', got "
                         f"{message_op!r}")


def _combine(a, b, message_op):
    return {"add": oar.add, "sub": oar.subtract, "mul": oar.multiply,
            "div": oar.divide}[message_op](a, b)


def _lhs_rhs(x, y):
    """Paddle's reshape_lhs_rhs: 1-D operands become columns, then the one with fewer dims
    gets size-1 axes after its first, so [E, C] and [E] broadcast per edge."""
    if x.ndim == 1:
        x = x.reshape([-1, 1])
    if y.ndim == 1:
        y = y.reshape([-1, 1])
    if x.ndim < y.ndim:
        x = x.reshape([x.shape[0]] + [1] * (y.ndim - x.ndim) + list(x.shape[1:]))
    elif y.ndim < x.ndim:
        y = y.reshape([y.shape[0]] + [1] * (x.ndim - y.ndim) + list(y.shape[1:]))
    return x, y


def _edges(op, x, src_index, dst_index):
    check_tensor(op, "x", x)
    if x.ndim < 1:
        raise ValueError(f"{op}: 'x' must have a node axis, got a 0-D tensor")
    check_index(op, "src_index", src_index, x.shape[0], "x.shape[0]")
    check_tensor(op, "dst_index", dst_index, ("int32", "int64"), 1)
    if src_index.shape[0] != dst_index.shape[0]:
        raise ValueError(f"{op}: src_index and dst_index must have the same length, got "
                         f"{src_index.shape[0]} and {dst_index.shape[0]}")


def send_u_recv(x, src_index, dst_index, reduce_op="sum", out_size=None, name=None):
    """out[d] = reduce_op over edges e with dst_index[e] == d of x[src_index[e]];
    reduce_op: 'sum', 'mean', 'max', 'min'; rows = out_size if > 0 else x.shape[0]."""
    op = "send_u_recv"
    reduce_op_name(op, reduce_op)
    _edges(op, x, src_index, dst_index)
    rows = out_rows(op, out_size, x.shape[0])
    check_index(op, "dst_index", dst_index, rows, "the output rows")
    return scatter_rows(op, oar.gather(x, src_index, axis=0), dst_index, rows, reduce_op)


def send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None,
                 name=None):
    """Like send_u_recv, with each message x[src_index[e]] combined with the edge feature y[e]
    by message_op ('add', 'sub', 'mul', 'div') before the reduction."""
    op = "send_ue_recv"
    _message_op(op, message_op)
    reduce_op_name(op, reduce_op)
    _edges(op, x, src_index, dst_index)
    check_tensor(op, "y", y)
    if y.ndim < 1 or y.shape[0] != src_index.shape[0]:
        raise ValueError(f"{op}: 'y' must hold one feature per edge ({src_index.shape[0]}), "
                         f"got shape {list(y.shape)}")
    rows = out_rows(op, out_size, x.shape[0])
    check_index(op, "dst_index", dst_index, rows, "the output rows")
    xs, ys = _lhs_rhs(oar.gather(x, src_index, axis=0), y)
    return scatter_rows(op, _combine(xs, ys, message_op), dst_index, rows, reduce_op)


def send_uv(x, y, src_index, dst_index, message_op="add", name=None):
    """out[e] = x[src_index[e]] message_op y[dst_index[e]]: one row per edge."""
    op = "send_uv"
    _message_op(op, message_op)
    _edges(op, x, src_index, dst_index)
    check_tensor(op, "y", y)
    if y.ndim < 1:
        raise ValueError(f"{op}: 'y' must have a node axis, got a 0-D tensor")
    check_index(op, "dst_index", dst_index, y.shape[0], "y.shape[0]")
    xs, ys = _lhs_rhs(oar.gather(x, src_index, axis=0), oar.gather(y, dst_index, axis=0))
    return _combine(xs, ys, message_op)


__all__ = ["send_u_recv", "send_ue_recv", "send_uv"]
