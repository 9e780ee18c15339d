"""static.auc: the area under the ROC / PR curve from bucketed prediction counts that
persist across Executor.run calls (Paddle's auc op)."""
import numbers

import numpy as np



def _check(input, label, curve, num_thresholds, topk, slide_steps, ins_tag_weight):  # noqa: A002
    import oar

    if not isinstance(input, oar.Tensor) or len(input.shape) != 2 or input.shape[1] != 2:
        raise ValueError(f"auc: input must be a [batch, 2] tensor of the two classes' probabilities, got "
                         f"{list(getattr(input, 'shape', [])) if isinstance(input, oar.Tensor) else type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"auc: input must be floating point, got {input.dtype}")
    if not isinstance(label, oar.Tensor) or label.dtype not in (oar.int32, oar.int64, oar.bool):
        raise TypeError(f"auc: label must be an int32/int64/bool tensor, got "
                        f"{getattr(label, 'dtype', type(label).__name__)}")
    if curve not in ("ROC", "PR"):
        raise ValueError(f"auc: curve must be 'ROC' or 'PR', got {curve!r}")
    for name, v in (("num_thresholds", num_thresholds), ("topk", topk), ("slide_steps", slide_steps)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < (0 if name == "slide_steps" else 1):
            raise ValueError(f"auc: {name} must be an int >= {0 if name == 'slide_steps' else 1}, got {v!r}")
    if ins_tag_weight is not None and not isinstance(ins_tag_weight, oar.Tensor):
        raise TypeError(f"auc: ins_tag_weight must be a tensor or None, got {type(ins_tag_weight).__name__}")


def _area(pos, neg, curve):
    """The area from per-bucket positive/negative counts (float64 [buckets]), walking the
    thresholds from high to low as Paddle's calcAuc: trapezoids of (FP, TP) for ROC,
    (TP / (TP + FP) precision over recall) for PR; 0 when either class is absent."""
    import oar

    tp = oar.flip(oar.cumsum(oar.flip(pos, [0]), 0), [0])  # predictions >= each bucket
    fp = oar.flip(oar.cumsum(oar.flip(neg, [0]), 0), [0])
    # high to low: bucket b's point follows bucket b+1's
    tp_prev = oar.concat([tp[1:], oar.zeros([1], dtype="float64")])
    fp_prev = oar.concat([fp[1:], oar.zeros([1], dtype="float64")])
    tot_pos, tot_neg = tp[0], fp[0]
    both = oar.logical_and(tot_pos > 0, tot_neg > 0)
    one = oar.ones([], dtype="float64")
    if curve == "ROC":
        area = oar.sum((fp - fp_prev) * (tp + tp_prev) / 2.0)
        return oar.where(both, area / oar.where(both, tot_pos * tot_neg, one), oar.zeros([], dtype="float64"))
    prec = tp / oar.maximum(tp + fp, one)
    prec_prev = oar.where(tp_prev + fp_prev > 0, tp_prev / oar.maximum(tp_prev + fp_prev, one), prec)
    area = oar.sum((tp - tp_prev) * (prec + prec_prev) / 2.0)
    return oar.where(both, area / oar.where(both, tot_pos, one), oar.zeros([], dtype="float64"))


def auc(input, label, curve="ROC", num_thresholds=2**12 - 1, topk=1, slide_steps=1,  # noqa: A002
        ins_tag_weight=None):
    """(auc, batch_auc, [batch_stat_pos, batch_stat_neg, stat_pos, stat_neg]): the AUC over
    every batch run so far and over this batch. A prediction input[i, 1] falls in bucket
    int(p * num_thresholds); stat_pos / stat_neg count the positive (label > 0) and
    negative rows per bucket and persist in the scope between Executor.run calls (the
    startup program zeroes them). A batch whose ins_tag_weight starts with 0 is fake data:
    it updates no statistics. Eagerly, each call starts from zero statistics."""
    import oar

    from ..base import framework
    from . import _program

    _check(input, label, curve, num_thresholds, topk, slide_steps, ins_tag_weight)
    buckets = int(num_thresholds) + 1
    p = oar.clip(input[:, 1].astype("float64"), 0.0, 1.0)
    idx = oar.floor(p * float(num_thresholds)).astype("int64")
    positive = (oar.reshape(label, [-1]).astype("int64") > 0).astype("float64")
    hits = oar.nn.functional.one_hot(idx, buckets).astype("float64")  # [batch, buckets]
    batch_pos = oar.sum(hits * oar.unsqueeze(positive, [1]), axis=0)
    batch_neg = oar.sum(hits * oar.unsqueeze(1.0 - positive, [1]), axis=0)
    if ins_tag_weight is not None:
        real = (oar.reshape(ins_tag_weight, [-1])[:1] != 0).astype("float64")
        batch_pos, batch_neg = batch_pos * real, batch_neg * real
    if framework.in_static_mode():
        zeros = np.zeros([buckets], "float64")
        names = [_program.unique_name(n) for n in ("_auc_stat_pos", "_auc_stat_neg")]
        stat_pos, stat_neg = (_program.create_persistable(n, oar.to_tensor(zeros)) for n in names)
        new_pos, new_neg = stat_pos + batch_pos, stat_neg + batch_neg
        oar.assign(new_pos, output=stat_pos)  # set_parameter writes: the counts persist in the scope
        oar.assign(new_neg, output=stat_neg)
    else:
        new_pos, new_neg = batch_pos, batch_neg
    auc_out = _area(new_pos, new_neg, curve)
    batch_auc = _area(batch_pos, batch_neg, curve)
    return auc_out, batch_auc, [batch_pos, batch_neg, new_pos, new_neg]
