"""paddle.vision.ops box ops (box_coder, prior_box, nms, matrix_nms, distribute_fpn_proposals)
and YOLOv3 ops (yolo_box, yolo_loss) against float64 NumPy loops written from Paddle's
documented semantics; gradients against finite differences; bad inputs."""
import math

import numpy as np
import pytest

import oar
from oar.vision import ops

from test_roi_deform_ops import check_grad, t64


def iou(a, b, plus=0.0):
    iw = max(min(a[2], b[2]) - max(a[0], b[0]) + plus, 0.0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]) + plus, 0.0)
    inter = iw * ih
    union = (a[2] - a[0] + plus) * (a[3] - a[1] + plus) + (b[2] - b[0] + plus) * \
        (b[3] - b[1] + plus) - inter
    return inter / union if union > 0 else 0.0


def rand_corner_boxes(rng, *shape):
    lo = rng.uniform(0, 1, shape + (2,))
    return np.concatenate([lo, lo + rng.uniform(0.05, 0.6, shape + (2,))], -1)


# ---------------------------------------------------------------- box_coder
def ref_encode(prior, var, target, norm):
    out = np.zeros((len(target), len(prior), 4))
    for i, t in enumerate(target):
        for j, p in enumerate(prior):
            pw, ph = p[2] - p[0] + norm, p[3] - p[1] + norm
            tw, th = t[2] - t[0] + norm, t[3] - t[1] + norm
            v = [((t[0] + t[2]) / 2 - p[0] - pw / 2) / pw, ((t[1] + t[3]) / 2 - p[1] - ph / 2) / ph,
                 math.log(abs(tw / pw)), math.log(abs(th / ph))]
            vv = var[j] if var is not None and np.ndim(var) == 2 else var
            out[i, j] = np.array(v) / (1.0 if vv is None else np.asarray(vv))
    return out


def ref_decode(prior, var, target, norm, axis):
    out = np.zeros(target.shape)
    for i in range(target.shape[0]):
        for j in range(target.shape[1]):
            k = j if axis == 0 else i
            p = prior[k]
            vv = np.ones(4) if var is None else (var[k] if np.ndim(var) == 2 else np.asarray(var))
            pw, ph = p[2] - p[0] + norm, p[3] - p[1] + norm
            cx = vv[0] * target[i, j, 0] * pw + p[0] + pw / 2
            cy = vv[1] * target[i, j, 1] * ph + p[1] + ph / 2
            w, h = math.exp(vv[2] * target[i, j, 2]) * pw, math.exp(vv[3] * target[i, j, 3]) * ph
            out[i, j] = [cx - w / 2, cy - h / 2, cx + w / 2 - norm, cy + h / 2 - norm]
    return out


def test_box_coder_matches_reference_and_gradients():
    rng = np.random.default_rng(0)
    prior = rand_corner_boxes(rng, 5)
    var = rng.uniform(0.1, 0.3, (5, 4))
    target = rand_corner_boxes(rng, 3)
    for v, normalized in ((var, True), ([0.1, 0.1, 0.2, 0.2], False), (None, True)):
        vt = t64(v) if isinstance(v, np.ndarray) else v
        out = ops.box_coder(t64(prior), vt, t64(target), "encode_center_size", normalized)
        np.testing.assert_allclose(out.numpy(), ref_encode(prior, v, target, 0.0 if normalized
                                                           else 1.0), rtol=1e-12)
        deltas = rng.normal(scale=0.3, size=(3, 5, 4))
        for axis in (0, 1):
            d = deltas if axis == 0 else rng.normal(scale=0.3, size=(5, 2, 4))
            out = ops.box_coder(t64(prior), vt, t64(d), "decode_center_size", normalized,
                                axis=axis)
            np.testing.assert_allclose(out.numpy(), ref_decode(prior, v, d, 0.0 if normalized
                                                               else 1.0, axis), rtol=1e-12)
    check_grad(lambda p, v, t: ops.box_coder(p, v, t), [prior, var, target], [0, 1, 2])
    check_grad(lambda p, t: ops.box_coder(p, [0.1, 0.2, 0.3, 0.4], t, "decode_center_size"),
               [prior, rng.normal(scale=0.3, size=(2, 5, 4))], [0, 1])
    empty = ops.box_coder(t64(prior), None, t64(np.zeros((0, 4))))
    assert empty.shape == [0, 5, 4]


def test_box_coder_bad_inputs():
    p = oar.rand([5, 4])
    with pytest.raises(ValueError, match=r"box_coder: prior_box must have shape \[M, 4\]"):
        ops.box_coder(oar.rand([5, 3]), None, oar.rand([2, 4]))
    with pytest.raises(ValueError, match="box_coder: code_type must be"):
        ops.box_coder(p, None, oar.rand([2, 4]), "encode")
    with pytest.raises(ValueError, match=r"box_coder: target_box must have shape \[N, M, 4\]"):
        ops.box_coder(p, None, oar.rand([2, 4]), "decode_center_size")
    with pytest.raises(ValueError, match=r"box_coder: target_box dim 1 \(3\)"):
        ops.box_coder(p, None, oar.rand([2, 3, 4]), "decode_center_size")
    with pytest.raises(ValueError, match=r"box_coder: prior_box_var must hold 4 values"):
        ops.box_coder(p, [0.1, 0.2], oar.rand([2, 4]))
    with pytest.raises(ValueError, match=r"box_coder: prior_box_var must have prior_box's shape"):
        ops.box_coder(p, oar.rand([4, 4]), oar.rand([2, 4]))
    with pytest.raises(TypeError, match="box_coder: target_box dtype float64"):
        ops.box_coder(p, None, oar.rand([2, 4], dtype="float64"))


# ---------------------------------------------------------------- prior_box
def ref_prior_box(h, w, img_h, img_w, mins, maxs, ars, var, flip, clip, steps, offset, order):
    ratios = [1.0]
    for a in ars:
        if any(abs(a - e) < 1e-6 for e in ratios):
            continue
        ratios.append(a)
        if flip:
            ratios.append(1.0 / a)
    sw = steps[0] if steps[0] > 0 else img_w / w
    sh = steps[1] if steps[1] > 0 else img_h / h
    out = []
    for i in range(h):
        for j in range(w):
            cx, cy = (j + offset) * sw, (i + offset) * sh
            cell = []
            for k, s in enumerate(mins):
                sizes = []
                if order:
                    sizes.append((s, s))
                    if maxs:
                        sizes.append((math.sqrt(s * maxs[k]),) * 2)
                    sizes += [(s * math.sqrt(a), s / math.sqrt(a)) for a in ratios
                              if abs(a - 1.0) > 1e-6]
                else:
                    sizes += [(s * math.sqrt(a), s / math.sqrt(a)) for a in ratios]
                    if maxs:
                        sizes.append((math.sqrt(s * maxs[k]),) * 2)
                for bw, bh in sizes:
                    cell.append([(cx - bw / 2) / img_w, (cy - bh / 2) / img_h,
                                 (cx + bw / 2) / img_w, (cy + bh / 2) / img_h])
            out.append(cell)
    out = np.array(out).reshape(h, w, -1, 4)
    if clip:
        out = np.clip(out, 0, 1)
    return out, np.broadcast_to(np.array(var), out.shape)


@pytest.mark.parametrize("flip,clip,order,maxs,steps", [
    (True, True, False, None, [0.0, 0.0]), (False, False, True, [5.0, 9.0], [2.0, 3.0]),
    (True, False, False, [5.0, 9.0], [0.0, 0.0])])
def test_prior_box_matches_reference(flip, clip, order, maxs, steps):
    inp, img = oar.rand([1, 3, 5, 7]), oar.rand([1, 3, 11, 13])
    box, var = ops.prior_box(inp, img, [2.0, 4.0], maxs, [1.0, 2.0, 0.5, 3.0], [0.1, 0.2, 0.3,
                             0.4], flip, clip, steps, 0.5, order)
    rb, rv = ref_prior_box(5, 7, 11, 13, [2.0, 4.0], maxs, [1.0, 2.0, 0.5, 3.0],
                           [0.1, 0.2, 0.3, 0.4], flip, clip, steps, 0.5, order)
    assert box.shape == list(rb.shape) and box.dtype == oar.float32
    np.testing.assert_allclose(box.numpy(), rb, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(var.numpy(), rv, rtol=1e-6)


def test_prior_box_bad_inputs():
    inp, img = oar.rand([1, 3, 5, 7]), oar.rand([1, 3, 11, 13])
    with pytest.raises(ValueError, match=r"prior_box: min_sizes must be non-empty and positive"):
        ops.prior_box(inp, img, [-2.0])
    with pytest.raises(ValueError, match="prior_box: max_sizes must pair with min_sizes"):
        ops.prior_box(inp, img, [2.0, 4.0], [3.0])
    with pytest.raises(ValueError, match=r"prior_box: variance must hold 4 values"):
        ops.prior_box(inp, img, [2.0], variance=[0.1])
    with pytest.raises(ValueError, match="prior_box: aspect_ratios must be positive"):
        ops.prior_box(inp, img, [2.0], aspect_ratios=[0.0])
    with pytest.raises(ValueError, match="prior_box: input must be a 4-D Tensor"):
        ops.prior_box(oar.rand([3, 5, 7]), img, [2.0])


# ---------------------------------------------------------------- nms / matrix_nms
def ref_greedy(boxes, thr):
    keep = []
    for i in range(len(boxes)):
        if all(iou(boxes[i], boxes[k]) <= thr for k in keep):
            keep.append(i)
    return keep


def test_nms_matches_reference():
    rng = np.random.default_rng(1)
    boxes = rand_corner_boxes(rng, 40)
    scores = rng.uniform(size=40)
    cats = rng.integers(0, 3, 40)
    np.testing.assert_array_equal(ops.nms(t64(boxes), 0.3).numpy(), ref_greedy(boxes, 0.3))
    order = np.argsort(-scores, kind="stable")
    ref = order[ref_greedy(boxes[order], 0.4)]
    out = ops.nms(t64(boxes), 0.4, t64(scores))
    assert out.dtype == oar.int64
    np.testing.assert_array_equal(out.numpy(), ref)
    kept = []
    for c in (0, 2):  # category 1 not listed: its boxes are dropped
        idx = np.nonzero(cats == c)[0]
        o = idx[np.argsort(-scores[idx], kind="stable")]
        kept += list(o[ref_greedy(boxes[o], 0.4)])
    kept = sorted(kept, key=lambda k: -scores[k])[:5]
    out = ops.nms(t64(boxes), 0.4, t64(scores), oar.to_tensor(cats), [0, 2], 5)
    np.testing.assert_array_equal(out.numpy(), kept)
    assert ops.nms(t64(np.zeros((0, 4))), 0.5).shape == [0]
    assert ops.nms(t64(np.zeros((0, 4))), 0.5, t64(np.zeros(0))).shape == [0]


def test_nms_kernel_many_boxes_and_edge_cases():
    # The nms kernel against the per-pair reference on 600 crowded boxes (float32 and float64
    # inputs), IoU exactly at the threshold (kept: only > suppresses), zero-area and NaN boxes
    # (a NaN union suppresses nothing), one box; bad boxes name the op.
    rng = np.random.default_rng(5)
    boxes = rand_corner_boxes(rng, 600) * 3
    for thr in (0.0, 0.25, 0.7):
        np.testing.assert_array_equal(ops.nms(t64(boxes), thr).numpy(), ref_greedy(boxes, thr))
    b32 = boxes.astype(np.float32)
    np.testing.assert_array_equal(ops.nms(oar.to_tensor(b32), 0.25).numpy(),
                                  ref_greedy(b32.astype(np.float64), 0.25))
    half = np.array([[0, 0, 2, 1], [1, 0, 3, 1], [0, 0, 2, 1]], np.float64)  # IoU 1/3, then 1
    assert ops.nms(t64(half), 1 / 3).numpy().tolist() == [0, 1]
    assert ops.nms(t64(half), 0.3).numpy().tolist() == [0]
    odd = np.array([[0, 0, 1, 1], [0, 0, 0, 0], [np.nan, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0],
                    [0, 0, 1, np.nan]], np.float64)
    assert ops.nms(t64(odd), 0.5).numpy().tolist() == [0, 1, 2, 4, 5]
    assert ops.nms(t64(boxes[:1]), 0.5).numpy().tolist() == [0]
    with pytest.raises(ValueError, match=r"nms: boxes must have shape \[N, 4\]"):
        oar._C.ops._nms(t64(np.zeros((3, 5))), 0.5)
    with pytest.raises(TypeError, match="nms: boxes must be a float tensor"):
        oar._C.ops._nms(oar.to_tensor(np.zeros((3, 4), np.int64)), 0.5)


def ref_matrix_nms(b, sc, sthr, pthr, ntop, ktop, gauss, sigma, bg, normalized):
    plus = 0.0 if normalized else 1.0
    rows, idx, nums = [], [], []
    for i in range(b.shape[0]):
        det = []
        for c in range(sc.shape[1]):
            if c == bg:
                continue
            cand = [k for k in np.argsort(-sc[i, c], kind="stable") if sc[i, c, k] > sthr]
            if ntop > -1:
                cand = cand[:ntop]
            ious = [[iou(b[i, cand[p]], b[i, cand[q]], plus) for q in range(len(cand))]
                    for p in range(len(cand))]
            imax = [max([ious[p][q] for q in range(p)], default=0.0) for p in range(len(cand))]
            for p in range(len(cand)):
                dec = 1.0
                for q in range(p):
                    if gauss:
                        d = math.exp((imax[q] ** 2 - ious[p][q] ** 2) * sigma)
                    else:
                        d = (1 - ious[p][q]) / (1 - imax[q])
                    dec = min(dec, d)
                s = dec * sc[i, c, cand[p]]
                if s > pthr:
                    det.append((s, c, cand[p]))
        det.sort(key=lambda t: -t[0])
        if ktop > -1:
            det = det[:ktop]
        rows += [[c, s, *b[i, k]] for s, c, k in det]
        idx += [i * b.shape[1] + k for s, c, k in det]
        nums.append(len(det))
    return np.array(rows).reshape(-1, 6), np.array(idx).reshape(-1, 1), np.array(nums)


@pytest.mark.parametrize("gauss,normalized,ntop,ktop", [(False, True, -1, -1),
                                                        (True, False, 6, 9)])
def test_matrix_nms_matches_reference(gauss, normalized, ntop, ktop):
    rng = np.random.default_rng(2)
    b = rand_corner_boxes(rng, 3, 12) * (1 if normalized else 10)
    sc = rng.uniform(size=(3, 4, 12))
    out, num, index = ops.matrix_nms(t64(b), t64(sc), 0.3, 0.2, ntop, ktop, gauss, 2.0, 0,
                                     normalized, return_index=True)
    r_out, r_idx, r_num = ref_matrix_nms(b, sc, 0.3, 0.2, ntop, ktop, gauss, 2.0, 0, normalized)
    np.testing.assert_allclose(out.numpy(), r_out, rtol=1e-12)
    np.testing.assert_array_equal(index.numpy(), r_idx)
    np.testing.assert_array_equal(num.numpy(), r_num)
    assert index.dtype == oar.int32 and num.dtype == oar.int32
    out, num, index = ops.matrix_nms(t64(b), t64(sc), 2.0, 0.2, -1, -1, return_rois_num=False)
    assert out.shape == [0, 6] and num is None and index is None


def test_nms_bad_inputs():
    b = oar.rand([4, 4])
    with pytest.raises(ValueError, match=r"nms: boxes must have shape \[N, 4\]"):
        ops.nms(oar.rand([4, 5]))
    with pytest.raises(ValueError, match=r"nms: scores must have one score per box \(4\)"):
        ops.nms(b, 0.3, oar.rand([3]))
    with pytest.raises(ValueError, match="nms: categories is required"):
        ops.nms(b, 0.3, oar.rand([4]), oar.to_tensor([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="nms: top_k must be a non-negative int"):
        ops.nms(b, 0.3, oar.rand([4]), top_k=-2)
    with pytest.raises(ValueError, match=r"matrix_nms: scores must have shape \[N, C, M\]"):
        ops.matrix_nms(oar.rand([2, 5, 4]), oar.rand([2, 3, 4]), 0.1, 0.1, -1, -1)
    with pytest.raises(TypeError, match="matrix_nms: nms_top_k must be an int"):
        ops.matrix_nms(oar.rand([2, 5, 4]), oar.rand([2, 3, 5]), 0.1, 0.1, 1.5, -1)


# ---------------------------------------------------------------- distribute_fpn_proposals
def test_distribute_fpn_proposals_matches_reference():
    rng = np.random.default_rng(3)
    lo = rng.uniform(0, 100, (13, 2))
    rois = np.concatenate([lo, lo + rng.uniform(1, 600, (13, 2))], 1)
    num = np.array([4, 0, 9], np.int32)
    for offset in (False, True):
        multi, restore, per = ops.distribute_fpn_proposals(
            t64(rois), 2, 5, 4, 224, offset, oar.to_tensor(num))
        o = 1.0 if offset else 0.0
        lvl = [min(max(math.floor(math.log2(math.sqrt((r[2] - r[0] + o) * (r[3] - r[1] + o)) /
                                            224 + 1e-8) + 4), 2), 5) for r in rois]
        image = np.repeat(np.arange(3), num)
        for k, level in enumerate(range(2, 6)):
            sel = [i for i in range(13) if lvl[i] == level]
            np.testing.assert_array_equal(multi[k].numpy(), rois[sel].reshape(-1, 4))
            np.testing.assert_array_equal(per[k].numpy(), np.bincount(image[sel], minlength=3))
        cat = np.concatenate([m.numpy() for m in multi])
        assert restore.shape == [13, 1] and restore.dtype == oar.int32
        np.testing.assert_array_equal(cat[restore.numpy()[:, 0]], rois)
    multi, restore, per = ops.distribute_fpn_proposals(t64(rois), 3, 3, 4, 224)
    assert per is None and len(multi) == 1 and multi[0].shape == [13, 4]
    with pytest.raises(ValueError, match="distribute_fpn_proposals: need min_level <= max_level"):
        ops.distribute_fpn_proposals(t64(rois), 5, 2, 4, 224)
    with pytest.raises(ValueError, match=r"distribute_fpn_proposals: rois_num .*\[1, 2\]"):
        ops.distribute_fpn_proposals(t64(rois), 2, 5, 4, 224,
                                     rois_num=oar.to_tensor([1, 2], dtype="int32"))


# ---------------------------------------------------------------- yolo_box / yolo_loss
def sig(v):
    return 1.0 / (1.0 + math.exp(-v))


def ref_yolo_box(x, img, anchors, cls, thr, ds, clip, scale, iou_aware, f):
    n, _, h, w = x.shape
    a = len(anchors) // 2
    boxes = np.zeros((n, a * h * w, 4))
    scores = np.zeros((n, a * h * w, cls))
    for i in range(n):
        for j in range(a):
            base = a + j * (5 + cls) if iou_aware else j * (5 + cls)
            for k in range(h):
                for m in range(w):
                    conf = sig(x[i, base + 4, k, m])
                    if iou_aware:
                        conf = conf ** (1 - f) * sig(x[i, j, k, m]) ** f
                    if conf < thr:
                        continue
                    ih, iw = img[i]
                    bias = -0.5 * (scale - 1)
                    cx = (m + sig(x[i, base, k, m]) * scale + bias) * iw / w
                    cy = (k + sig(x[i, base + 1, k, m]) * scale + bias) * ih / h
                    bw = math.exp(x[i, base + 2, k, m]) * anchors[2 * j] * iw / (ds * w)
                    bh = math.exp(x[i, base + 3, k, m]) * anchors[2 * j + 1] * ih / (ds * h)
                    b = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
                    if clip:
                        b = [max(b[0], 0), max(b[1], 0), min(b[2], iw - 1), min(b[3], ih - 1)]
                    p = j * h * w + k * w + m
                    boxes[i, p] = b
                    scores[i, p] = [conf * sig(x[i, base + 5 + c, k, m]) for c in range(cls)]
    return boxes, scores


@pytest.mark.parametrize("iou_aware,clip,scale", [(False, True, 1.0), (True, False, 1.2)])
def test_yolo_box_matches_reference(iou_aware, clip, scale):
    rng = np.random.default_rng(4)
    anchors, cls = [10, 13, 16, 30, 33, 23], 3
    x = rng.normal(size=(2, 3 * ((6 if iou_aware else 5) + cls), 5, 7))
    img = np.array([[120, 90], [64, 200]], np.int32)
    boxes, scores = ops.yolo_box(t64(x), oar.to_tensor(img), anchors, cls, 0.4, 16, clip,
                                 scale_x_y=scale, iou_aware=iou_aware, iou_aware_factor=0.3)
    rb, rs = ref_yolo_box(x, img, anchors, cls, 0.4, 16, clip, scale, iou_aware, 0.3)
    np.testing.assert_allclose(boxes.numpy(), rb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores.numpy(), rs, rtol=1e-12, atol=1e-12)
    assert (rs == 0).any() and (rs != 0).any()


def sce(v, t):
    return max(v, 0.0) - v * t + math.log(1 + math.exp(-abs(v)))


def ref_yolo_loss(x, gt, label, score, anchors, mask, cls, thr, ds, smooth, scale):
    n, _, h, w = x.shape
    am = len(mask)
    x = x.reshape(n, am, 5 + cls, h, w)
    ins = ds * h
    bias = -0.5 * (scale - 1)
    loss = np.zeros(n)
    eps = min(1 / cls, 1 / 40) if smooth else 0.0
    pos, neg = 1 - eps, eps

    def ciou(a, b):
        return iou([a[0] - a[2] / 2, a[1] - a[3] / 2, a[0] + a[2] / 2, a[1] + a[3] / 2],
                   [b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2])

    for i in range(n):
        obj = np.zeros((am, h, w))
        for j in range(am):
            for k in range(h):
                for m in range(w):
                    p = [(m + sig(x[i, j, 0, k, m]) * scale + bias) / h,
                         (k + sig(x[i, j, 1, k, m]) * scale + bias) / h,
                         math.exp(x[i, j, 2, k, m]) * anchors[2 * mask[j]] / ins,
                         math.exp(x[i, j, 3, k, m]) * anchors[2 * mask[j] + 1] / ins]
                    best = max([ciou(p, g) for g in gt[i] if g[2] >= 1e-6 and g[3] >= 1e-6],
                               default=0.0)
                    if best > thr:
                        obj[j, k, m] = -1
        for t, g in enumerate(gt[i]):
            if g[2] < 1e-6 or g[3] < 1e-6:
                continue
            ious = [ciou([0, 0, g[2], g[3]], [0, 0, anchors[2 * a] / ins,
                                              anchors[2 * a + 1] / ins])
                    for a in range(len(anchors) // 2)]
            bn = int(np.argmax(ious))
            if bn not in mask:
                continue
            j = mask.index(bn)
            gi, gj = int(g[0] * w), int(g[1] * h)
            s = score[i, t]
            v = x[i, j, :, gj, gi]
            sc = (2 - g[2] * g[3]) * s
            loss[i] += (sce(v[0], g[0] * h - gi) + sce(v[1], g[1] * h - gj) +
                        abs(v[2] - math.log(g[2] * ins / anchors[2 * bn])) +
                        abs(v[3] - math.log(g[3] * ins / anchors[2 * bn + 1]))) * sc
            loss[i] += sum(sce(v[5 + c], pos if c == label[i, t] else neg) * s
                           for c in range(cls))
            obj[j, gj, gi] = s
        for j in range(am):
            for k in range(h):
                for m in range(w):
                    o = obj[j, k, m]
                    if o > 1e-5:
                        loss[i] += sce(x[i, j, 4, k, m], 1.0) * o
                    elif o > -0.5:
                        loss[i] += sce(x[i, j, 4, k, m], 0.0)
    return loss


def yolo_case(seed):
    rng = np.random.default_rng(seed)
    anchors, mask, cls = [4, 6, 10, 13, 16, 30, 33, 23], [1, 2], 3
    x = rng.normal(size=(2, len(mask) * (5 + cls), 4, 4))
    gt = np.concatenate([rng.uniform(0.05, 0.95, (2, 5, 2)), rng.uniform(0.05, 0.6, (2, 5, 2))],
                        -1)
    gt[1, 3:, 2] = 0.0  # padding boxes
    label = rng.integers(0, cls, (2, 5))
    score = rng.uniform(0.5, 1.0, (2, 5))
    return x, gt, label, score, anchors, mask, cls


@pytest.mark.parametrize("smooth,use_score,scale", [(True, False, 1.0), (False, True, 1.1)])
def test_yolo_loss_matches_reference_and_gradient(smooth, use_score, scale):
    x, gt, label, score, anchors, mask, cls = yolo_case(5)
    if not use_score:
        score = np.ones_like(score)
    lab = oar.to_tensor(label.astype(np.int32))
    gs = t64(score) if use_score else None
    out = ops.yolo_loss(t64(x), t64(gt), lab, anchors, mask, cls, 0.5, 8, gs, smooth,
                        scale_x_y=scale)
    ref = ref_yolo_loss(x, gt, label, score, anchors, mask, cls, 0.5, 8, smooth, scale)
    assert out.shape == [2]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    check_grad(lambda a: ops.yolo_loss(a, t64(gt), lab, anchors, mask, cls, 0.5, 8, gs, smooth,
                                       scale_x_y=scale), [x], [0], rtol=1e-4, atol=1e-6)


def test_yolo_bad_inputs():
    x = oar.rand([2, 14, 8, 8])
    img = oar.ones([2, 2], dtype="int32")
    with pytest.raises(ValueError, match="yolo_box: x must have 18 channels"):
        ops.yolo_box(x, img, [10, 13, 16, 30], 4, 0.01, 8)
    with pytest.raises(ValueError, match=r"yolo_box: anchors must be a non-empty list"):
        ops.yolo_box(x, img, [10, 13, 16], 2, 0.01, 8)
    with pytest.raises(ValueError, match=r"yolo_box: img_size must have shape \[2, 2\]"):
        ops.yolo_box(x, oar.ones([2, 3], dtype="int32"), [10, 13, 16, 30], 2, 0.01, 8)
    with pytest.raises(ValueError, match="yolo_box: downsample_ratio must be an int >= 1"):
        ops.yolo_box(x, img, [10, 13, 16, 30], 2, 0.01, 0)
    gt, lab = oar.rand([2, 3, 4]), oar.zeros([2, 3], dtype="int32")
    with pytest.raises(ValueError, match=r"yolo_loss: anchor_mask must be .* \[0, 2\)"):
        ops.yolo_loss(x, gt, lab, [10, 13, 16, 30], [0, 2], 2, 0.7, 8)
    with pytest.raises(ValueError, match=r"yolo_loss: gt_label must have shape \[2, 3\]"):
        ops.yolo_loss(x, gt, oar.zeros([2, 4], dtype="int32"), [10, 13, 16, 30], [0, 1], 2,
                      0.7, 8)
    with pytest.raises(ValueError, match=r"yolo_loss: gt_label must lie in \[0, class_num=2\)"):
        ops.yolo_loss(x, gt, lab + 5, [10, 13, 16, 30], [0, 1], 2, 0.7, 8)
    with pytest.raises(TypeError, match="yolo_loss: gt_label must have dtype"):
        ops.yolo_loss(x, gt, oar.zeros([2, 3]), [10, 13, 16, 30], [0, 1], 2, 0.7, 8)


# ---------------------------------------------------------------- generate_proposals
def ref_generate_proposals(scores, deltas, img, anchors, var, pre, post, thr, min_size, eta,
                           pixel_offset):
    n, a, h, w = scores.shape
    off = 1.0 if pixel_offset else 0.0
    rois, probs, nums = [], [], []
    for i in range(n):
        cand = []  # (score, anchor index (h, w, a), delta)
        for y in range(h):
            for x in range(w):
                for k in range(a):
                    cand.append((scores[i, k, y, x], (y, x, k), deltas[i, 4 * k:4 * k + 4, y, x]))
        cand.sort(key=lambda c: -c[0])
        if 0 < pre < len(cand):
            cand = cand[:pre]
        boxes = []
        for s, (y, x, k), d in cand:
            an, v = anchors[y, x, k], var[y, x, k]
            aw, ah = an[2] - an[0] + off, an[3] - an[1] + off
            cx, cy = v[0] * d[0] * aw + an[0] + aw / 2, v[1] * d[1] * ah + an[1] + ah / 2
            bw = math.exp(min(v[2] * d[2], math.log(1000 / 16))) * aw
            bh = math.exp(min(v[3] * d[3], math.log(1000 / 16))) * ah
            b = [cx - bw / 2, cy - bh / 2, cx + bw / 2 - off, cy + bh / 2 - off]
            ih, iw = img[i]
            b = [min(max(b[0], 0), iw - off), min(max(b[1], 0), ih - off),
                 min(max(b[2], 0), iw - off), min(max(b[3], 0), ih - off)]
            ws, hs = b[2] - b[0] + off, b[3] - b[1] + off
            ok = ws >= max(min_size, 1) and hs >= max(min_size, 1)
            if pixel_offset:
                ok = ok and b[0] + ws / 2 <= iw and b[1] + hs / 2 <= ih
            if ok:
                boxes.append((s, b))
        kept, t = [], thr
        for s, b in boxes:
            if all(iou(b, kb, off) <= t for _, kb in kept):
                kept.append((s, b))
                if eta < 1 and t > 0.5:
                    t *= eta
        if post > 0:
            kept = kept[:post]
        if not kept:
            kept = [(0.0, [0.0] * 4)]
        rois += [b for _, b in kept]
        probs += [s for s, _ in kept]
        nums.append(len(kept))
    return np.array(rois), np.array(probs).reshape(-1, 1), np.array(nums)


@pytest.mark.parametrize("kw", [dict(), dict(pre_nms_top_n=20, post_nms_top_n=6, min_size=4.0),
                                dict(pixel_offset=True, nms_thresh=0.7, eta=0.9),
                                dict(min_size=1000.0)])
def test_generate_proposals_matches_reference(kw):
    rng = np.random.default_rng(7)
    n, a, h, w = 2, 3, 4, 5
    scores = rng.uniform(size=(n, a, h, w))
    deltas = rng.normal(scale=0.3, size=(n, 4 * a, h, w))
    cx = (np.arange(w) * 16 + 8)[None, :, None]
    cy = (np.arange(h) * 16 + 8)[:, None, None]
    sz = np.array([16, 32, 64])[None, None, :]
    anchors = np.stack(np.broadcast_arrays(cx - sz / 2, cy - sz / 2, cx + sz / 2, cy + sz / 2),
                       -1).astype(np.float64)
    var = rng.uniform(0.5, 1.5, (h, w, a, 4))
    img = np.array([[64.0, 80.0], [50.0, 60.0]])
    rois, probs, num = ops.generate_proposals(t64(scores), t64(deltas), t64(img), t64(anchors),
                                              t64(var), return_rois_num=True, **kw)
    args = dict(pre=6000, post=1000, thr=0.5, min_size=0.1, eta=1.0, pixel_offset=False)
    args.update({dict(pre_nms_top_n="pre", post_nms_top_n="post", nms_thresh="thr").get(k, k): v
                 for k, v in kw.items()})
    r_rois, r_probs, r_num = ref_generate_proposals(scores, deltas, img, anchors, var, **args)
    np.testing.assert_array_equal(num.numpy(), r_num)
    np.testing.assert_allclose(rois.numpy(), r_rois, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(probs.numpy(), r_probs, rtol=1e-12)
    assert ops.generate_proposals(t64(scores), t64(deltas), t64(img), t64(anchors),
                                  t64(var))[2] is None


def test_generate_proposals_bad_inputs():
    s, d = oar.rand([1, 2, 3, 3]), oar.rand([1, 8, 3, 3])
    img, an, var = oar.ones([1, 2]), oar.rand([3, 3, 2, 4]), oar.rand([3, 3, 2, 4])
    with pytest.raises(ValueError, match=r"generate_proposals: bbox_deltas must have shape "
                                         r"\[1, 8, 3, 3\]"):
        ops.generate_proposals(s, oar.rand([1, 4, 3, 3]), img, an, var)
    with pytest.raises(ValueError, match=r"generate_proposals: anchors must have shape"):
        ops.generate_proposals(s, d, img, oar.rand([3, 3, 1, 4]), var)
    with pytest.raises(ValueError, match=r"generate_proposals: img_size must have shape \[1, 2\]"):
        ops.generate_proposals(s, d, oar.ones([2, 2]), an, var)


def test_box_ops_zero_size_inputs():
    r, p, n = ops.generate_proposals(oar.rand([0, 2, 3, 3]), oar.rand([0, 8, 3, 3]),
                                     oar.ones([0, 2]), oar.rand([3, 3, 2, 4]),
                                     oar.rand([3, 3, 2, 4]), return_rois_num=True)
    assert r.shape == [0, 4] and p.shape == [0, 1] and n.shape == [0]
    out, num, _ = ops.matrix_nms(oar.rand([2, 0, 4]), oar.rand([2, 3, 0]), 0.1, 0.1, -1, -1)
    assert out.shape == [0, 6] and num.numpy().tolist() == [0, 0]
    boxes, scores = ops.yolo_box(oar.rand([0, 14, 4, 4]), oar.ones([0, 2], dtype="int32"),
                                 [10, 13, 16, 30], 2, 0.1, 8)
    assert boxes.shape == [0, 32, 4] and scores.shape == [0, 32, 2]
    loss = ops.yolo_loss(oar.rand([2, 14, 4, 4]), oar.rand([2, 0, 4]),
                         oar.zeros([2, 0], dtype="int32"), [10, 13, 16, 30], [0, 1], 2, 0.7, 8)
    assert loss.shape == [2] and (loss.numpy() > 0).all()  # objectness terms only
    assert ops.box_coder(oar.rand([0, 4]), None, oar.rand([3, 4])).shape == [3, 0, 4]
    box, var = ops.prior_box(oar.rand([1, 3, 0, 4]), oar.rand([1, 3, 8, 8]), [2.0])
    assert box.shape == [0, 4, 1, 4] and var.shape == [0, 4, 1, 4]
