"""Box ops of paddle.vision.ops: box_coder and prior_box (elementwise, differentiable where
Paddle is), nms and matrix_nms (index selection: a greedy loop over a vectorized IoU matrix)
distribute_fpn_proposals (a level per box, gathers) and generate_proposals (RPN decoding,
NumPy index work: it has no gradient in Paddle either)."""
import math

import numpy as np

from .. import _C
from ._roi import _check_tensor, _dtype

__all__ = ["box_coder", "prior_box", "nms", "matrix_nms", "distribute_fpn_proposals",
           "generate_proposals"]

_FLOATS = ("float32", "float64")


def _oar():
    import oar

    return oar


def _float_list(op, name, v, length=None):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(
        isinstance(e, (int, float, np.number)) and not isinstance(e, bool) for e in v
    ):
        raise TypeError(f"{op}: {name} must be a list of floats, got {v!r}")
    v = [float(e) for e in v]
    if length is not None and len(v) != length:
        raise ValueError(f"{op}: {name} must hold {length} values, got {v}")
    if not all(math.isfinite(e) for e in v):
        raise ValueError(f"{op}: {name} must be finite, got {v}")
    return v


def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size",
              box_normalized=True, axis=0, name=None):
    """Encodes target boxes against prior boxes as center/size offsets, or decodes such offsets
    back to corner boxes (Paddle's paddle.vision.ops.box_coder). prior_box [M, 4];
    prior_box_var: None, a [M, 4] Tensor or 4 floats; encode: target [N, 4] -> [N, M, 4];
    decode: target [N, M, 4] -> [N, M, 4] (axis=1: the priors run along dim 0)."""
    oar = _oar()
    op = "box_coder"
    _check_tensor(op, "prior_box", prior_box, 2, _FLOATS)
    _check_tensor(op, "target_box", target_box, None, _FLOATS)
    if prior_box.shape[1] != 4:
        raise ValueError(f"{op}: prior_box must have shape [M, 4], got {list(prior_box.shape)}")
    if code_type not in ("encode_center_size", "decode_center_size"):
        raise ValueError(f"{op}: code_type must be 'encode_center_size' or "
                         f"'decode_center_size', got {code_type!r}")
    if axis not in (0, 1):
        raise ValueError(f"{op}: axis must be 0 or 1, got {axis!r}")
    dt = _dtype(prior_box)
    if _dtype(target_box) != dt:
        raise TypeError(f"{op}: target_box dtype {_dtype(target_box)} must equal prior_box's {dt}")
    m = prior_box.shape[0]
    var = None
    if isinstance(prior_box_var, oar.Tensor):
        _check_tensor(op, "prior_box_var", prior_box_var, 2, _FLOATS)
        if list(prior_box_var.shape) != [m, 4]:
            raise ValueError(f"{op}: prior_box_var must have prior_box's shape {[m, 4]}, got "
                             f"{list(prior_box_var.shape)}")
        var = prior_box_var.astype(dt)
    elif prior_box_var is not None:
        var = oar.to_tensor(np.array(_float_list(op, "prior_box_var", prior_box_var, 4), dt),
                            place=prior_box.place)
    norm = 0.0 if box_normalized else 1.0
    pw = prior_box[:, 2] - prior_box[:, 0] + norm
    ph = prior_box[:, 3] - prior_box[:, 1] + norm
    pcx = prior_box[:, 0] + pw * 0.5
    pcy = prior_box[:, 1] + ph * 0.5
    if code_type == "encode_center_size":
        if len(target_box.shape) != 2 or target_box.shape[1] != 4:
            raise ValueError(f"{op}: target_box must have shape [N, 4] to encode, got "
                             f"{list(target_box.shape)}")
        tw = (target_box[:, 2] - target_box[:, 0] + norm).unsqueeze(1)
        th = (target_box[:, 3] - target_box[:, 1] + norm).unsqueeze(1)
        # the target's center is its corners' midpoint (the +1 of unnormalized boxes is not
        # halved into it, unlike the prior's)
        tcx = ((target_box[:, 0] + target_box[:, 2]) * 0.5).unsqueeze(1)
        tcy = ((target_box[:, 1] + target_box[:, 3]) * 0.5).unsqueeze(1)
        out = oar.stack([(tcx - pcx) / pw, (tcy - pcy) / ph, (tw / pw).abs().log(),
                         (th / ph).abs().log()], axis=-1)
        if var is not None:
            out = out / (var.unsqueeze(0) if len(var.shape) == 2 else var)
        return out
    if len(target_box.shape) != 3 or target_box.shape[2] != 4:
        raise ValueError(f"{op}: target_box must have shape [N, M, 4] to decode, got "
                         f"{list(target_box.shape)}")
    if target_box.shape[1 - axis] != m:
        raise ValueError(f"{op}: target_box dim {1 - axis} ({target_box.shape[1 - axis]}) must "
                         f"equal the number of priors {m} (axis={axis})")

    def along(t):  # a per-prior [M] value, broadcast against target's [N, M] (or [M, N])
        return t.unsqueeze(0) if axis == 0 else t.unsqueeze(1)

    d = [target_box[..., k] for k in range(4)]
    if var is not None:
        v = [along(var[:, k]) if len(var.shape) == 2 else var[k] for k in range(4)]
        d = [d[k] * v[k] for k in range(4)]
    cx = d[0] * along(pw) + along(pcx)
    cy = d[1] * along(ph) + along(pcy)
    w = d[2].exp() * along(pw)
    h = d[3].exp() * along(ph)
    return oar.stack([cx - w * 0.5, cy - h * 0.5, cx + w * 0.5 - norm, cy + h * 0.5 - norm],
                     axis=-1)


def _prior_ratios(aspect_ratios, flip):
    out = [1.0]
    for ar in aspect_ratios:
        if any(abs(ar - e) < 1e-6 for e in out):
            continue
        out.append(ar)
        if flip:
            out.append(1.0 / ar)
    return out


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.0],  # noqa: B006
              variance=[0.1, 0.1, 0.2, 0.2], flip=False, clip=False, steps=[0.0, 0.0],  # noqa: B006
              offset=0.5, min_max_aspect_ratios_order=False, name=None):
    """SSD prior (anchor) boxes of every cell of input's feature map (Paddle's
    paddle.vision.ops.prior_box): returns (boxes, variances), each [H, W, num_priors, 4],
    boxes as (x1, y1, x2, y2) normalized by image's size."""
    oar = _oar()
    op = "prior_box"
    _check_tensor(op, "input", input, 4, _FLOATS)
    _check_tensor(op, "image", image, 4, _FLOATS)
    mins = _float_list(op, "min_sizes", min_sizes)
    maxs = [] if max_sizes is None else _float_list(op, "max_sizes", max_sizes)
    ars = _float_list(op, "aspect_ratios", aspect_ratios)
    var = _float_list(op, "variance", variance, 4)
    st = _float_list(op, "steps", steps, 2)
    if not mins or any(s <= 0 for s in mins):
        raise ValueError(f"{op}: min_sizes must be non-empty and positive, got {mins}")
    if maxs and (len(maxs) != len(mins) or any(a <= b for a, b in zip(maxs, mins))):
        raise ValueError(f"{op}: max_sizes must pair with min_sizes and exceed them, got "
                         f"{maxs} for {mins}")
    if any(a <= 0 for a in ars):
        raise ValueError(f"{op}: aspect_ratios must be positive, got {ars}")
    if any(s < 0 for s in st):
        raise ValueError(f"{op}: steps must be non-negative, got {st}")
    h, w = input.shape[2], input.shape[3]
    img_h, img_w = image.shape[2], image.shape[3]
    if img_h <= 0 or img_w <= 0:
        raise ValueError(f"{op}: image must have a positive size, got {list(image.shape)}")
    step_w = st[0] if st[0] > 0 else img_w / max(w, 1)
    step_h = st[1] if st[1] > 0 else img_h / max(h, 1)
    ratios = _prior_ratios(ars, flip)
    half = []  # (half width, half height) of each prior, in Paddle's order
    for k, s in enumerate(mins):
        big = [(math.sqrt(s * maxs[k]) / 2,) * 2] if maxs else []
        if min_max_aspect_ratios_order:
            half += [(s / 2, s / 2)] + big
            half += [(s * math.sqrt(a) / 2, s / math.sqrt(a) / 2) for a in ratios
                     if abs(a - 1.0) >= 1e-6]
        else:
            half += [(s * math.sqrt(a) / 2, s / math.sqrt(a) / 2) for a in ratios] + big
    half = np.array(half, np.float64)
    cx = (np.arange(w) + offset) * step_w
    cy = (np.arange(h) + offset) * step_h
    cx = np.broadcast_to(cx[None, :, None], (h, w, len(half)))
    cy = np.broadcast_to(cy[:, None, None], (h, w, len(half)))
    boxes = np.stack([(cx - half[:, 0]) / img_w, (cy - half[:, 1]) / img_h,
                      (cx + half[:, 0]) / img_w, (cy + half[:, 1]) / img_h], -1)
    if clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    dt = _dtype(input)
    variances = np.broadcast_to(np.array(var), boxes.shape)
    return (oar.to_tensor(boxes.astype(dt), place=input.place),
            oar.to_tensor(variances.astype(dt), place=input.place))


def _iou_matrix(b, plus_one=0.0):
    """IoU of every pair of [K, 4] corner boxes (float64)."""
    area = np.clip(b[:, 2] - b[:, 0] + plus_one, 0, None) * \
        np.clip(b[:, 3] - b[:, 1] + plus_one, 0, None)
    iw = np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0])
    ih = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1])
    inter = np.clip(iw + plus_one, 0, None) * np.clip(ih + plus_one, 0, None)
    union = area[:, None] + area[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def _greedy(b, thresh):
    """Indices kept by greedy NMS over boxes b (float64 [N, 4]) in the given order: each kept
    box suppresses the later boxes overlapping it by more than thresh (the nms kernel)."""
    return _C.ops._nms(_C.to_tensor(np.ascontiguousarray(b), None, None, True), thresh).numpy()


def nms(boxes, iou_threshold=0.3, scores=None, category_idxs=None, categories=None,
        top_k=None):
    """Non-maximum suppression (Paddle's paddle.vision.ops.nms): the int64 indices of the
    boxes [N, 4] kept. Without scores, boxes are visited in their order; with scores, by
    descending score; with category_idxs and categories, per category, then merged by score;
    top_k keeps the first top_k."""
    oar = _oar()
    op = "nms"
    _check_tensor(op, "boxes", boxes, 2, _FLOATS)
    if boxes.shape[1] != 4:
        raise ValueError(f"{op}: boxes must have shape [N, 4], got {list(boxes.shape)}")
    if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, (int, float)):
        raise TypeError(f"{op}: iou_threshold must be a float, got {iou_threshold!r}")
    b = boxes.numpy().astype(np.float64)
    n = b.shape[0]
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or
                              top_k < 0):
        raise ValueError(f"{op}: top_k must be a non-negative int, got {top_k!r}")
    if scores is None:
        return oar.to_tensor(_greedy(b, float(iou_threshold)), place=boxes.place)
    _check_tensor(op, "scores", scores, 1, _FLOATS)
    if scores.shape[0] != n:
        raise ValueError(f"{op}: scores must have one score per box ({n}), got shape "
                         f"{list(scores.shape)}")
    s = scores.numpy().astype(np.float64)
    if category_idxs is None:
        order = np.argsort(-s, kind="stable")
        keep = order[_greedy(b[order], float(iou_threshold))]
    else:
        _check_tensor(op, "category_idxs", category_idxs, 1, ("int32", "int64"))
        if category_idxs.shape[0] != n:
            raise ValueError(f"{op}: category_idxs must have one entry per box ({n}), got "
                             f"shape {list(category_idxs.shape)}")
        if categories is None:
            raise ValueError(f"{op}: categories is required with category_idxs")
        cats = category_idxs.numpy()
        kept = []
        for c in categories:
            idx = np.nonzero(cats == c)[0]
            if idx.size:
                order = idx[np.argsort(-s[idx], kind="stable")]
                kept.append(order[_greedy(b[order], float(iou_threshold))])
        keep = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        keep = keep[np.argsort(-s[keep], kind="stable")]
    if top_k is not None:
        keep = keep[:top_k]
    return oar.to_tensor(keep.astype(np.int64), place=boxes.place)


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k,
               use_gaussian=False, gaussian_sigma=2.0, background_label=0, normalized=True,
               return_index=False, return_rois_num=True, name=None):
    """Matrix NMS of SOLOv2 (Paddle's paddle.vision.ops.matrix_nms): per image and class,
    scores decay by their overlap with higher-scored boxes (linear or gaussian) instead of
    being cut. bboxes [N, M, 4], scores [N, C, M] -> (out [K, 6] rows (label, score, x1, y1,
    x2, y2), rois_num [N] int32 or None, index [K, 1] int32 or None)."""
    oar = _oar()
    op = "matrix_nms"
    _check_tensor(op, "bboxes", bboxes, 3, _FLOATS)
    _check_tensor(op, "scores", scores, 3, _FLOATS)
    n, m = bboxes.shape[0], bboxes.shape[1]
    if bboxes.shape[2] != 4:
        raise ValueError(f"{op}: bboxes must have shape [N, M, 4], got {list(bboxes.shape)}")
    if scores.shape[0] != n or scores.shape[2] != m:
        raise ValueError(f"{op}: scores must have shape [N, C, M] = [{n}, C, {m}], got "
                         f"{list(scores.shape)}")
    for nm, v in (("nms_top_k", nms_top_k), ("keep_top_k", keep_top_k),
                  ("background_label", background_label)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{op}: {nm} must be an int, got {v!r}")
    b = bboxes.numpy().astype(np.float64)
    sc = scores.numpy().astype(np.float64)
    plus = 0.0 if normalized else 1.0
    rows, index, counts = [], [], []
    for i in range(n):
        det = []  # (score, label, box index)
        for c in range(sc.shape[1]):
            if c == background_label:
                continue
            cand = np.nonzero(sc[i, c] > score_threshold)[0]
            cand = cand[np.argsort(-sc[i, c, cand], kind="stable")]
            if nms_top_k > -1:
                cand = cand[:nms_top_k]
            if cand.size == 0:
                continue
            iou = np.triu(_iou_matrix(b[i, cand], plus), 1)  # iou[j, k]: j ranked above k
            comp = iou.max(axis=0)  # each box's largest overlap with a higher-ranked one
            if use_gaussian:
                decay = np.exp((comp[:, None] ** 2 - iou ** 2) * gaussian_sigma)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    decay = (1.0 - iou) / (1.0 - comp[:, None])
            upper = np.triu(np.ones_like(iou, bool), 1)
            decay = np.minimum(np.where(upper, decay, np.inf).min(axis=0), 1.0)
            ds = decay * sc[i, c, cand]
            for k in np.nonzero(ds > post_threshold)[0]:
                det.append((ds[k], c, cand[k]))
        det.sort(key=lambda t: -t[0])
        if keep_top_k > -1:
            det = det[:keep_top_k]
        for s_, c, k in det:
            rows.append([c, s_, *b[i, k]])
            index.append(i * m + k)
        counts.append(len(det))
    dt = _dtype(bboxes)
    out = oar.to_tensor(np.array(rows, np.float64).reshape(-1, 6).astype(dt), place=bboxes.place)
    idx = oar.to_tensor(np.array(index, np.int32).reshape(-1, 1), place=bboxes.place) if return_index else None
    num = oar.to_tensor(np.array(counts, np.int32), place=bboxes.place) if return_rois_num else None
    return out, num, idx


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale,
                             pixel_offset=False, rois_num=None, name=None):
    """Assigns every RoI to an FPN level by its scale (Paddle's
    paddle.vision.ops.distribute_fpn_proposals): level = floor(refer_level +
    log2(sqrt(area) / refer_scale)), clamped to [min_level, max_level]. Returns (the RoIs of
    each level, restore_ind [R, 1] int32 that puts the concatenated levels back in order, and
    with rois_num the per-image counts of each level, else None)."""
    oar = _oar()
    op = "distribute_fpn_proposals"
    _check_tensor(op, "fpn_rois", fpn_rois, 2, _FLOATS)
    if fpn_rois.shape[1] != 4:
        raise ValueError(f"{op}: fpn_rois must have shape [R, 4], got {list(fpn_rois.shape)}")
    for nm, v in (("min_level", min_level), ("max_level", max_level),
                  ("refer_level", refer_level), ("refer_scale", refer_scale)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{op}: {nm} must be an int, got {v!r}")
    if min_level > max_level or max_level - min_level > 64:
        raise ValueError(f"{op}: need min_level <= max_level (at most 65 levels), got "
                         f"{min_level}, {max_level}")
    if refer_scale <= 0:
        raise ValueError(f"{op}: refer_scale must be positive, got {refer_scale}")
    r = fpn_rois.shape[0]
    if rois_num is not None:
        _check_tensor(op, "rois_num", rois_num, 1, ("int32", "int64"))
        counts = rois_num.numpy().astype(np.int64)
        if (counts < 0).any() or counts.sum() != r:
            raise ValueError(f"{op}: rois_num must be non-negative and sum to the number of "
                             f"rois {r}, got {counts.tolist()}")
        image = np.repeat(np.arange(len(counts)), counts)
    b = fpn_rois.numpy().astype(np.float64)
    off = 1.0 if pixel_offset else 0.0
    w, h = b[:, 2] - b[:, 0] + off, b[:, 3] - b[:, 1] + off
    area = np.where((w < 0) | (h < 0), 0.0, w * h)
    with np.errstate(divide="ignore"):
        lvl = np.floor(np.log2(np.sqrt(area) / refer_scale + 1e-8) + refer_level)
    lvl = np.clip(lvl, min_level, max_level).astype(np.int64)
    multi, per_level, order = [], [], []
    for level in range(min_level, max_level + 1):
        idx = np.nonzero(lvl == level)[0]
        order.append(idx)
        multi.append(oar.gather(fpn_rois, oar.to_tensor(idx, place=fpn_rois.place)))
        if rois_num is not None:
            per_level.append(oar.to_tensor(
                np.bincount(image[idx], minlength=len(counts)).astype(np.int32), place=fpn_rois.place))
    restore = np.empty(r, np.int32)
    restore[np.concatenate(order)] = np.arange(r, dtype=np.int32)
    restore = oar.to_tensor(restore.reshape(-1, 1), place=fpn_rois.place)
    return multi, restore, (per_level if rois_num is not None else None)


def _nms_adaptive(b, thresh, eta, offset):
    """Greedy NMS over score-sorted boxes: each box is kept when its overlap with every kept
    box is at most the current threshold, which (eta < 1) shrinks by eta after each kept box
    while above 0.5 (Paddle's adaptive NMS)."""
    iou = _iou_matrix(b, offset)
    keep = []
    for i in range(len(b)):
        if not keep or iou[i, keep].max() <= thresh:
            keep.append(i)
            if eta < 1 and thresh > 0.5:
                thresh *= eta
    return np.array(keep, np.int64)


def generate_proposals(scores, bbox_deltas, img_size, anchors, variances, pre_nms_top_n=6000,
                       post_nms_top_n=1000, nms_thresh=0.5, min_size=0.1, eta=1.0,
                       pixel_offset=False, return_rois_num=False, name=None):
    """RPN proposals (Paddle's paddle.vision.ops.generate_proposals): per image, the
    pre_nms_top_n best-scored anchors decoded by bbox_deltas and variances, clipped to
    img_size (height, width), boxes smaller than min_size dropped, NMS, then the
    post_nms_top_n best. scores [N, A, H, W], bbox_deltas [N, 4A, H, W], anchors and variances
    [H, W, A, 4] -> (rois [R, 4], roi_probs [R, 1], rois_num [N] int32 or None); an image
    left with no box gives one zero box of score 0."""
    oar = _oar()
    op = "generate_proposals"
    _check_tensor(op, "scores", scores, 4, _FLOATS)
    _check_tensor(op, "bbox_deltas", bbox_deltas, 4, _FLOATS)
    _check_tensor(op, "img_size", img_size, 2, _FLOATS + ("int32", "int64"))
    _check_tensor(op, "anchors", anchors, None, _FLOATS)
    _check_tensor(op, "variances", variances, None, _FLOATS)
    n, a, h, w = scores.shape
    if list(bbox_deltas.shape) != [n, 4 * a, h, w]:
        raise ValueError(f"{op}: bbox_deltas must have shape {[n, 4 * a, h, w]}, got "
                         f"{list(bbox_deltas.shape)}")
    if list(img_size.shape) != [n, 2]:
        raise ValueError(f"{op}: img_size must have shape [{n}, 2], got {list(img_size.shape)}")
    for nm, t in (("anchors", anchors), ("variances", variances)):
        if t.size != h * w * a * 4:
            raise ValueError(f"{op}: {nm} must have shape {[h, w, a, 4]}, got {list(t.shape)}")
    for nm, v in (("pre_nms_top_n", pre_nms_top_n), ("post_nms_top_n", post_nms_top_n)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{op}: {nm} must be an int, got {v!r}")
    off = 1.0 if pixel_offset else 0.0
    sc = scores.numpy().astype(np.float64).transpose(0, 2, 3, 1).reshape(n, h * w * a)
    dl = bbox_deltas.numpy().astype(np.float64).reshape(n, a, 4, h, w)
    dl = dl.transpose(0, 3, 4, 1, 2).reshape(n, h * w * a, 4)
    an = anchors.numpy().astype(np.float64).reshape(-1, 4)
    va = variances.numpy().astype(np.float64).reshape(-1, 4)
    im = img_size.numpy().astype(np.float64)
    rois, probs, nums = [], [], []
    clip = math.log(1000.0 / 16.0)
    for i in range(n):
        order = np.argsort(-sc[i], kind="stable")
        if 0 < pre_nms_top_n < order.size:
            order = order[:pre_nms_top_n]
        d, anc, var, s = dl[i, order], an[order], va[order], sc[i, order]
        aw = anc[:, 2] - anc[:, 0] + off
        ah = anc[:, 3] - anc[:, 1] + off
        cx = var[:, 0] * d[:, 0] * aw + anc[:, 0] + 0.5 * aw
        cy = var[:, 1] * d[:, 1] * ah + anc[:, 1] + 0.5 * ah
        bw = np.exp(np.minimum(var[:, 2] * d[:, 2], clip)) * aw
        bh = np.exp(np.minimum(var[:, 3] * d[:, 3], clip)) * ah
        box = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2 - off, cy + bh / 2 - off], 1)
        ih, iw = im[i]
        box[:, 0::2] = np.clip(box[:, 0::2], 0, iw - off)
        box[:, 1::2] = np.clip(box[:, 1::2], 0, ih - off)
        ws, hs = box[:, 2] - box[:, 0] + off, box[:, 3] - box[:, 1] + off
        ms = max(float(min_size), 1.0)
        ok = (ws >= ms) & (hs >= ms)
        if pixel_offset:
            ok &= (box[:, 0] + ws / 2 <= iw) & (box[:, 1] + hs / 2 <= ih)
        box, s = box[ok], s[ok]
        if box.shape[0] == 0:
            box, s = np.zeros((1, 4)), np.zeros(1)
        else:
            keep = _nms_adaptive(box, float(nms_thresh), float(eta), off)
            if post_nms_top_n > 0:
                keep = keep[:post_nms_top_n]
            box, s = box[keep], s[keep]
        rois.append(box)
        probs.append(s)
        nums.append(len(s))
    dt = _dtype(scores)
    out = oar.to_tensor(np.concatenate(rois + [np.zeros((0, 4))]).astype(dt), place=scores.place)
    prob = oar.to_tensor(np.concatenate(probs + [np.zeros(0)]).reshape(-1, 1).astype(dt),
                         place=scores.place)
    num = oar.to_tensor(np.array(nums, np.int32), place=scores.place) if return_rois_num else None
    return out, prob, num
