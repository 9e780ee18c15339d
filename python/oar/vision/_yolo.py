"""YOLOv3 head ops of paddle.vision.ops: yolo_box (decode a head's output into boxes and
scores, elementwise) and yolo_loss (the training loss). The loss's target assignment (which
cell and anchor each ground-truth box trains, which predictions are ignored) is index work
on detached values, done in NumPy as in Paddle's kernel; the loss itself is composed of
oar ops on gathers of x, so x gets its gradient."""
import math

import numpy as np

from .._creation import _full_on
from ._roi import _check_tensor, _dtype

__all__ = ["yolo_box", "yolo_loss"]

_FLOATS = ("float32", "float64")


def _oar():
    import oar

    return oar


def _anchors(op, anchors):
    if not isinstance(anchors, (list, tuple)) or not anchors or len(anchors) % 2 or not all(
        isinstance(a, (int, float, np.number)) and not isinstance(a, bool) for a in anchors
    ):
        raise ValueError(f"{op}: anchors must be a non-empty list of (width, height) pairs, got "
                         f"{anchors!r}")
    a = np.array(anchors, np.float64).reshape(-1, 2)
    if not np.isfinite(a).all() or (a <= 0).any():
        raise ValueError(f"{op}: anchors must be positive, got {list(anchors)}")
    return a


def _int_arg(op, name, v, low):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{op}: {name} must be an int >= {low}, got {v!r}")
    return int(v)


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True,
             name=None, scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5):
    """Decodes a YOLOv3 head (Paddle's paddle.vision.ops.yolo_box): x [N, A * (5 + class_num),
    H, W] (iou_aware: A more channels first), img_size [N, 2] (height, width) -> boxes
    [N, A*H*W, 4] (x1, y1, x2, y2 in image pixels) and scores [N, A*H*W, class_num]; both zero
    where the objectness is below conf_thresh."""
    oar = _oar()
    op = "yolo_box"
    _check_tensor(op, "x", x, 4, _FLOATS)
    _check_tensor(op, "img_size", img_size, 2, ("int32", "int64"))
    an = _anchors(op, anchors)
    cls = _int_arg(op, "class_num", class_num, 1)
    ds = _int_arg(op, "downsample_ratio", downsample_ratio, 1)
    n, c, h, w = x.shape
    a = an.shape[0]
    want = a * (6 + cls) if iou_aware else a * (5 + cls)
    if c != want:
        raise ValueError(f"{op}: x must have {want} channels for {a} anchors and class_num "
                         f"{cls} (iou_aware={iou_aware}), got {c}")
    if list(img_size.shape) != [n, 2]:
        raise ValueError(f"{op}: img_size must have shape [{n}, 2], got "
                         f"{list(img_size.shape)}")
    dt = _dtype(x)
    if iou_aware:
        iou = oar.nn.functional.sigmoid(x[:, :a]).unsqueeze(2)
        x = x[:, a:]
    p = x.reshape([n, a, 5 + cls, h, w])
    conf = oar.nn.functional.sigmoid(p[:, :, 4])
    if iou_aware:
        f = float(iou_aware_factor)
        conf = conf.pow(1.0 - f) * iou[:, :, 0].pow(f)
    keep = (conf >= float(conf_thresh)).astype(dt)
    size = img_size.astype(dt)
    img_h = size[:, 0].reshape([n, 1, 1, 1])
    img_w = size[:, 1].reshape([n, 1, 1, 1])
    bias = -0.5 * (scale_x_y - 1.0)
    gx = oar.to_tensor(np.arange(w, dtype=dt).reshape(1, 1, 1, w), place=x.place)
    gy = oar.to_tensor(np.arange(h, dtype=dt).reshape(1, 1, h, 1), place=x.place)
    aw = oar.to_tensor(an[:, 0].astype(dt).reshape(1, a, 1, 1), place=x.place)
    ah = oar.to_tensor(an[:, 1].astype(dt).reshape(1, a, 1, 1), place=x.place)
    sig = oar.nn.functional.sigmoid
    cx = (gx + sig(p[:, :, 0]) * scale_x_y + bias) * img_w / w
    cy = (gy + sig(p[:, :, 1]) * scale_x_y + bias) * img_h / h
    bw = p[:, :, 2].exp() * aw * img_w / (ds * w)
    bh = p[:, :, 3].exp() * ah * img_h / (ds * h)
    x1, y1, x2, y2 = cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2
    if clip_bbox:
        zero = _full_on(x.place, [1], 0.0, dt)
        x1, y1 = oar.maximum(x1, zero), oar.maximum(y1, zero)
        x2, y2 = oar.minimum(x2, img_w - 1), oar.minimum(y2, img_h - 1)
    boxes = oar.stack([x1, y1, x2, y2], axis=-1) * keep.unsqueeze(-1)
    scores = sig(p[:, :, 5:]).transpose([0, 1, 3, 4, 2]) * (conf * keep).unsqueeze(-1)
    return boxes.reshape([n, a * h * w, 4]), scores.reshape([n, a * h * w, cls])


def _sce(oar, x, label):
    """Sigmoid cross entropy with logits, elementwise."""
    return oar.nn.functional.relu(x) - x * label + (1.0 + (-x.abs()).exp()).log()


def _center_iou(b1, b2):
    """IoU of center-format (cx, cy, w, h) boxes, broadcast over leading dims."""
    ix = np.minimum(b1[..., 0] + b1[..., 2] / 2, b2[..., 0] + b2[..., 2] / 2) - \
        np.maximum(b1[..., 0] - b1[..., 2] / 2, b2[..., 0] - b2[..., 2] / 2)
    iy = np.minimum(b1[..., 1] + b1[..., 3] / 2, b2[..., 1] + b2[..., 3] / 2) - \
        np.maximum(b1[..., 1] - b1[..., 3] / 2, b2[..., 1] - b2[..., 3] / 2)
    inter = np.where((ix > 0) & (iy > 0), ix * iy, 0.0)
    union = b1[..., 2] * b1[..., 3] + b2[..., 2] * b2[..., 3] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def yolo_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh,
              downsample_ratio, gt_score=None, use_label_smooth=True, name=None, scale_x_y=1.0):
    """YOLOv3 loss (Paddle's paddle.vision.ops.yolo_loss) of a head x [N, len(anchor_mask) *
    (5 + class_num), H, W] against gt_box [N, B, 4] (cx, cy, w, h normalized to [0, 1]),
    gt_label [N, B] and optional gt_score [N, B] -> [N]: sigmoid cross entropy on x/y, L1 on
    w/h, objectness (predictions overlapping a ground truth by more than ignore_thresh are
    not penalized) and per-class sigmoid cross entropy (label smoothing optional)."""
    oar = _oar()
    op = "yolo_loss"
    _check_tensor(op, "x", x, 4, _FLOATS)
    _check_tensor(op, "gt_box", gt_box, 3, _FLOATS)
    _check_tensor(op, "gt_label", gt_label, 2, ("int32", "int64"))
    an = _anchors(op, anchors)
    if not isinstance(anchor_mask, (list, tuple)) or not anchor_mask or not all(
        isinstance(m, int) and not isinstance(m, bool) and 0 <= m < len(an) for m in anchor_mask
    ):
        raise ValueError(f"{op}: anchor_mask must be a non-empty list of anchor indices in "
                         f"[0, {len(an)}), got {anchor_mask!r}")
    cls = _int_arg(op, "class_num", class_num, 1)
    ds = _int_arg(op, "downsample_ratio", downsample_ratio, 1)
    n, c, h, w = x.shape
    am = len(anchor_mask)
    if c != am * (5 + cls):
        raise ValueError(f"{op}: x must have {am * (5 + cls)} channels for {am} masked anchors "
                         f"and class_num {cls}, got {c}")
    nb = gt_box.shape[1]
    if gt_box.shape[0] != n or gt_box.shape[2] != 4:
        raise ValueError(f"{op}: gt_box must have shape [{n}, B, 4], got {list(gt_box.shape)}")
    if list(gt_label.shape) != [n, nb]:
        raise ValueError(f"{op}: gt_label must have shape [{n}, {nb}], got "
                         f"{list(gt_label.shape)}")
    if gt_score is not None:
        _check_tensor(op, "gt_score", gt_score, 2, _FLOATS)
        if list(gt_score.shape) != [n, nb]:
            raise ValueError(f"{op}: gt_score must have shape [{n}, {nb}], got "
                             f"{list(gt_score.shape)}")
        score = gt_score.numpy().astype(np.float64)
    else:
        score = np.ones((n, nb))
    dt = _dtype(x)
    gt = gt_box.numpy().astype(np.float64)
    label = gt_label.numpy().astype(np.int64)
    valid = (gt[..., 2] >= 1e-6) & (gt[..., 3] >= 1e-6)
    if ((label < 0) | (label >= cls))[valid].any():
        raise ValueError(f"{op}: gt_label must lie in [0, class_num={cls}), got "
                         f"{np.unique(label[valid]).tolist()}")
    input_size = ds * h
    bias = -0.5 * (scale_x_y - 1.0)
    xv = x.numpy().astype(np.float64).reshape(n, am, 5 + cls, h, w)
    sig = 1.0 / (1.0 + np.exp(-xv[:, :, :4]))
    mask_an = an[list(anchor_mask)]
    pred = np.stack([
        (np.arange(w)[None, None, None, :] + sig[:, :, 0] * scale_x_y + bias) / h,
        (np.arange(h)[None, None, :, None] + sig[:, :, 1] * scale_x_y + bias) / h,
        np.exp(xv[:, :, 2]) * mask_an[None, :, 0, None, None] / input_size,
        np.exp(xv[:, :, 3]) * mask_an[None, :, 1, None, None] / input_size], -1)
    obj = np.zeros((n, am, h, w))
    if nb:
        iou = _center_iou(pred[:, :, :, :, None, :], gt[:, None, None, None, :, :])
        iou = np.where(valid[:, None, None, None, :], iou, 0.0)
        obj[iou.max(-1) > ignore_thresh] = -1.0
    # target assignment: the best anchor (over all anchors) by shape IoU, if it is masked
    shape_gt = np.concatenate([np.zeros(gt.shape[:2] + (2,)), gt[..., 2:]], -1)
    shape_an = np.concatenate([np.zeros((len(an), 2)), an / input_size], -1)
    best = _center_iou(shape_gt[:, :, None, :], shape_an[None, None]).argmax(-1)
    where_mask = {m: k for k, m in reversed(list(enumerate(anchor_mask)))}
    smooth = min(1.0 / cls, 1.0 / 40) if use_label_smooth else 0.0
    pos, neg = 1.0 - smooth, smooth
    rows, targets = [], []
    for i, t in zip(*np.nonzero(valid)):
        k = where_mask.get(int(best[i, t]), -1)
        if k < 0:
            continue
        gi = min(max(int(gt[i, t, 0] * w), 0), w - 1)
        gj = min(max(int(gt[i, t, 1] * h), 0), h - 1)
        g = gt[i, t]
        s = score[i, t]
        rows.append((i, ((i * am + k) * h + gj) * w + gi))
        onehot = np.full(cls, neg)
        onehot[label[i, t]] = pos
        targets.append([g[0] * h - gi, g[1] * h - gj,
                        math.log(g[2] * input_size / an[best[i, t], 0]),
                        math.log(g[3] * input_size / an[best[i, t], 1]),
                        (2.0 - g[2] * g[3]) * s, s, *onehot])
        obj[i, k, gj, gi] = s
    xo = x.reshape([n, am, 5 + cls, h, w])[:, :, 4]
    pos_w = oar.to_tensor(np.where(obj > 1e-5, obj, 0.0).astype(dt), place=x.place)
    neg_w = oar.to_tensor(((obj <= 1e-5) & (obj > -0.5)).astype(dt), place=x.place)
    loss = (_sce(oar, xo, 1.0) * pos_w + _sce(oar, xo, 0.0) * neg_w).sum(axis=[1, 2, 3])
    if rows:
        tab = x.reshape([n, am, 5 + cls, h, w]).transpose([0, 1, 3, 4, 2])
        g = oar.gather(tab.reshape([n * am * h * w, 5 + cls]),
                       oar.to_tensor(np.array([r[1] for r in rows], np.int64), place=x.place))
        tg = oar.to_tensor(np.array(targets).astype(dt), place=x.place)
        wl, ws = tg[:, 4], tg[:, 5]
        per = (_sce(oar, g[:, 0], tg[:, 0]) + _sce(oar, g[:, 1], tg[:, 1]) +
               (g[:, 2] - tg[:, 2]).abs() + (g[:, 3] - tg[:, 3]).abs()) * wl
        per = per + (_sce(oar, g[:, 5:], tg[:, 6:]) * ws.unsqueeze(1)).sum(axis=1)
        owner = np.zeros((n, len(rows)), dt)
        owner[[r[0] for r in rows], np.arange(len(rows))] = 1.0
        loss = loss + oar.matmul(oar.to_tensor(owner, place=x.place), per.unsqueeze(1)).squeeze(1)
    return loss
