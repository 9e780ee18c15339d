"""ctc_loss / CTCLoss against a brute-force NumPy sum over every alignment (float64), varying
input and label lengths, repeated labels, gradients by central differences, bad inputs."""
import itertools

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import OpCase, case_id, check_case, tensor

I64 = lambda a: oar.to_tensor(np.asarray(a, np.int64))  # noqa: E731


def collapse(path, blank):
    out, prev = [], None
    for p in path:
        if p != prev and p != blank:
            out.append(p)
        prev = p
    return out


def np_ctc(logits, labels, in_len, lab_len, blank=0, reduction="mean"):
    t, b, c = logits.shape
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    losses = []
    for k in range(b):
        target = list(labels[k][:lab_len[k]])
        total = 0.0
        for path in itertools.product(range(c), repeat=in_len[k]):
            if collapse(path, blank) == target:
                total += np.exp(sum(lp[s, k, path[s]] for s in range(in_len[k])))
        losses.append(-np.log(total) if total > 0 else np.inf)
    losses = np.array(losses)
    if reduction == "mean":
        return (losses / np.maximum(lab_len, 1)).mean()
    return losses.sum() if reduction == "sum" else losses


LABELS = np.array([[1, 2, 2], [2, 1, 0], [1, 1, 0]])
LABELS_B2 = np.where(LABELS == 2, 0, LABELS)  # class 2 is the blank there
IN_LEN, LAB_LEN = [5, 4, 5], [3, 2, 2]


def fn(x, *rest, **kw):
    if rest:
        return F.ctc_loss(x, *rest, **kw)
    return F.ctc_loss(x, I64(LABELS), I64(IN_LEN), I64(LAB_LEN), **kw)


CASES = [
    OpCase("ctc_loss", fn, lambda x: np_ctc(x, LABELS, IN_LEN, LAB_LEN), inputs=[(5, 3, 3)],
           bad_inputs=[((tensor(np.ones((5, 3))), I64(LABELS), I64(IN_LEN), I64(LAB_LEN)),
                        ValueError, "[T, B, C]"),
                       ((tensor(np.ones((5, 3, 3))), I64(LABELS + 3), I64(IN_LEN), I64(LAB_LEN)),
                        ValueError, "class indices"),
                       ((tensor(np.ones((5, 3, 3))), I64(LABELS), I64([6, 1, 1]), I64(LAB_LEN)),
                        ValueError, "lengths out of range"),
                       ((tensor(np.ones((5, 3, 3))), I64(LABELS), I64(IN_LEN), I64(LAB_LEN)),
                        ValueError, "blank", {"blank": 3})]),
    OpCase("ctc_loss_none", lambda x: fn(x, reduction="none"),
           lambda x: np_ctc(x, LABELS, IN_LEN, LAB_LEN, reduction="none"), inputs=[(5, 3, 3)],
           op="ctc_loss"),
    OpCase("ctc_loss_blank2",
           lambda x: F.ctc_loss(x, I64(LABELS_B2), I64(IN_LEN), I64(LAB_LEN), blank=2,
                                reduction="sum"),
           lambda x: np_ctc(x, LABELS_B2, IN_LEN, LAB_LEN, 2, "sum"), inputs=[(5, 3, 3)],
           op="ctc_loss"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


def test_impossible_alignment_zero_infinity_and_layer():
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 1, 3)))
    lab = I64([[1, 1]])  # needs 3 steps (1, blank, 1); only 2 given
    assert np.isinf(F.ctc_loss(x, lab, I64([2]), I64([2]), reduction="none").numpy()[0])
    assert F.ctc_loss(x, lab, I64([2]), I64([2]), reduction="none", zero_infinity=True).numpy()[0] == 0
    logits = np.random.default_rng(1).standard_normal((5, 3, 3))
    layer = oar.nn.CTCLoss(blank=0, reduction="sum")
    np.testing.assert_allclose(layer(oar.to_tensor(logits), I64(LABELS), I64(IN_LEN), I64(LAB_LEN)).numpy(),
                               np_ctc(logits, LABELS, IN_LEN, LAB_LEN, reduction="sum"), rtol=1e-10)
    empty = F.ctc_loss(oar.to_tensor(logits), I64(LABELS), I64(IN_LEN), I64([0, 0, 0]), reduction="none")
    want = [-sum(np.log(np.exp(logits[s, k, 0]) / np.exp(logits[s, k]).sum()) for s in range(IN_LEN[k]))
            for k in range(3)]
    np.testing.assert_allclose(empty.numpy(), want, rtol=1e-10)


def test_norm_by_times_scales_only_the_gradient():
    logits = oar.to_tensor(np.random.default_rng(2).standard_normal((5, 3, 3)), stop_gradient=False)
    a = F.ctc_loss(logits, I64(LABELS), I64(IN_LEN), I64(LAB_LEN), reduction="sum")
    ga = oar.grad([a], [logits])[0].numpy()
    b = F.ctc_loss(logits, I64(LABELS), I64(IN_LEN), I64(LAB_LEN), reduction="sum", norm_by_times=True)
    gb = oar.grad([b], [logits])[0].numpy()
    np.testing.assert_allclose(a.numpy(), b.numpy())
    np.testing.assert_allclose(gb, ga / np.array(IN_LEN)[None, :, None], rtol=1e-10, atol=1e-14)
