"""multi_label_margin_loss, temporal_shift and gather_tree, composed of existing ops."""
from .._C import Tensor, ops as _ops

__all__ = ["multi_label_margin_loss", "temporal_shift", "gather_tree"]


def _tensor(v, op, name):
    if not isinstance(v, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(v).__name__}")


def multi_label_margin_loss(input, label, reduction="mean", name=None):
    """sum over target classes j and non-target classes k of max(0, 1 - (x[j] - x[k])) / C per
    sample, the targets of a row being its labels up to the first -1."""
    import oar
    op = "multi_label_margin_loss"
    _tensor(input, op, "input")
    _tensor(label, op, "label")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")
    if input.ndim not in (1, 2) or list(label.shape) != list(input.shape):
        raise ValueError(f"{op}: input must be [N, C] or [C] and label the same shape, got "
                         f"{list(input.shape)} and {list(label.shape)}")
    if label.dtype.name not in ("int32", "int64"):
        raise TypeError(f"{op}: label must be int32/int64, got {label.dtype.name}")
    squeeze = input.ndim == 1
    x = input.unsqueeze(0) if squeeze else input
    lab = (label.unsqueeze(0) if squeeze else label).astype("int64")
    c = x.shape[1]
    if lab.size:
        lo, hi = int(lab.min()), int(lab.max())
        if lo < -1 or hi >= c:
            raise ValueError(f"{op}: labels must be class indices in [0, {c}) or -1, got values "
                             f"in [{lo}, {hi}]")
    valid = (lab >= 0).astype("int64").cumprod(1) > 0  # up to the first -1
    slots = oar.nn.functional.one_hot(oar.where(valid, lab, oar.zeros_like(lab)), c)
    count = (slots * valid.unsqueeze(-1).astype(slots.dtype)).sum(1).astype(x.dtype)  # [N, C]
    is_target = (count > 0).astype(x.dtype)
    hinge = oar.nn.functional.relu(1 - (x.unsqueeze(2) - x.unsqueeze(1)))  # [N, j, k]
    loss = (hinge * count.unsqueeze(2) * (1 - is_target).unsqueeze(1)).sum([1, 2]) / c
    if squeeze:
        loss = loss.squeeze(0)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format="NCHW"):
    """Shifts the first int(C * shift_ratio) channels one segment back in time and the next
    int(C * 2 * shift_ratio) - int(C * shift_ratio) one segment forward, zero-filled, on
    [N*T, C, H, W] (or NHWC) with T = seg_num."""
    import oar
    op = "temporal_shift"
    _tensor(x, op, "x")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{op}: data_format must be 'NCHW' or 'NHWC', got '{data_format}'")
    if x.ndim != 4:
        raise ValueError(f"{op}: x must be 4-D, got shape {list(x.shape)}")
    if isinstance(seg_num, bool) or not isinstance(seg_num, int) or seg_num <= 0 or \
            x.shape[0] % seg_num:
        raise ValueError(f"{op}: seg_num must be a positive int dividing x's first dim "
                         f"{x.shape[0]}, got {seg_num!r}")
    if not 0 <= float(shift_ratio) <= 0.5:
        raise ValueError(f"{op}: shift_ratio must be in [0, 0.5], got {shift_ratio}")
    last = data_format == "NHWC"
    if last:
        x = x.transpose([0, 3, 1, 2])
    nt, c, h, w = x.shape
    t = seg_num
    v = x.reshape([nt // t, t, c, h, w])
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    zero = _ops.full([nt // t, 1, c, h, w], 0.0, x.dtype, x.place)
    back = oar.concat([zero, v[:, :t - 1]], axis=1)  # output t reads input t - 1
    fwd = oar.concat([v[:, 1:], zero], axis=1)  # output t reads input t + 1
    out = oar.concat([back[:, :, :c1], fwd[:, :, c1:c2], v[:, :, c2:]], axis=2)
    out = out.reshape([nt, c, h, w])
    return out.transpose([0, 2, 3, 1]) if last else out


def gather_tree(ids, parents):
    """Full beam-search sequences from per-step ids and parent beams [max_time, batch, beam]:
    backtracks from the last step through the parents."""
    import oar
    op = "gather_tree"
    _tensor(ids, op, "ids")
    _tensor(parents, op, "parents")
    if ids.ndim != 3 or list(parents.shape) != list(ids.shape):
        raise ValueError(f"{op}: ids and parents must both be [max_time, batch, beam], got "
                         f"{list(ids.shape)} and {list(parents.shape)}")
    if ids.dtype.name not in ("int32", "int64") or parents.dtype != ids.dtype:
        raise TypeError(f"{op}: ids and parents must be int32/int64 of one dtype, got "
                        f"{ids.dtype.name} and {parents.dtype.name}")
    steps, _, beam = ids.shape
    if steps == 0:
        return ids.clone()
    if parents.size and (int(parents.min()) < 0 or int(parents.max()) >= beam):
        raise ValueError(f"{op}: parents must be beam indices in [0, {beam})")
    out = [ids[steps - 1]]
    parent = parents[steps - 1].astype("int64")
    for t in range(steps - 2, -1, -1):  # steps is a dim of ids
        out.append(oar.take_along_axis(ids[t], parent, axis=1))
        parent = oar.take_along_axis(parents[t].astype("int64"), parent, axis=1)
    return oar.stack(out[::-1], axis=0)
