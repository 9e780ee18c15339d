"""oar.metric against NumPy references."""

import numpy as np
import pytest

import oar
from oar.metric import Accuracy, Auc, Precision, Recall


def test_accuracy_topk_streaming():
    rng = np.random.default_rng(0)
    m = Accuracy(topk=(1, 3))
    assert m.name() == ["acc_top1", "acc_top3"]
    tot1 = tot3 = n = 0
    for _ in range(3):
        pred = rng.normal(size=(20, 5)).astype(np.float32)
        label = rng.integers(0, 5, size=(20, 1))
        order = np.argsort(-pred, axis=1)
        c1 = (order[:, :1] == label).any(1).sum()
        c3 = (order[:, :3] == label).any(1).sum()
        batch = m.update(m.compute(oar.to_tensor(pred), oar.to_tensor(label)))
        assert batch == pytest.approx([c1 / 20, c3 / 20])
        tot1, tot3, n = tot1 + c1, tot3 + c3, n + 20
    assert m.accumulate() == pytest.approx([tot1 / n, tot3 / n])
    m.reset()
    assert m.accumulate() == [0.0, 0.0]


def test_accuracy_label_forms_and_errors():
    pred = oar.to_tensor(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], np.float32))
    m = Accuracy()
    assert m.name() == ["acc"]
    for lab in (np.array([1, 0, 0]), np.array([[1], [0], [0]]), np.eye(2)[[1, 0, 0]]):
        m.reset()
        assert m.update(m.compute(pred, oar.to_tensor(lab))) == pytest.approx(2 / 3)
    hits = m.compute(pred, oar.to_tensor(np.array([1, 0, 0])))
    assert isinstance(hits, oar.Tensor) and hits.dtype == oar.float32 and hits.shape == [3, 1]  # as Paddle's
    np.testing.assert_array_equal(hits.numpy(), [[1.0], [1.0], [0.0]])
    with pytest.raises(ValueError, match="topk"):
        Accuracy(topk=(0,))
    with pytest.raises(ValueError, match="exceeds"):
        Accuracy(topk=(3,)).compute(pred, oar.to_tensor(np.array([1, 0, 0])))
    correct, total = oar.zeros([1], "int64"), oar.zeros([1], "int64")
    acc = oar.metric.accuracy(
        pred, oar.to_tensor(np.array([[1], [0], [0]])), correct=correct, total=total
    )
    assert acc.shape == [] and acc.dtype == oar.float32 and float(acc) == pytest.approx(2 / 3)
    assert int(correct) == 2 and int(total) == 3
    acc64 = oar.metric.accuracy(pred.astype("float64"), oar.to_tensor(np.array([1, 1, 1])), k=2)
    assert acc64.dtype == oar.float64 and float(acc64) == 1.0


def test_precision_recall():
    rng = np.random.default_rng(1)
    p, r = Precision(), Recall()
    tp = fp = fn = 0
    for _ in range(3):
        probs = rng.random(50)
        labels = rng.integers(0, 2, 50)
        pred = (probs >= 0.5).astype(int)
        tp += ((pred == 1) & (labels == 1)).sum()
        fp += ((pred == 1) & (labels == 0)).sum()
        fn += ((pred == 0) & (labels == 1)).sum()
        p.update(oar.to_tensor(probs.astype(np.float32)), oar.to_tensor(labels))
        r.update(probs, labels)
    assert p.accumulate() == pytest.approx(tp / (tp + fp))
    assert r.accumulate() == pytest.approx(tp / (tp + fn))
    assert Precision().accumulate() == 0.0 and p.name() == "precision" and r.name() == "recall"
    with pytest.raises(ValueError, match="Precision"):
        Precision().update(np.ones(3), np.ones(4))


def test_auc_matches_rank_statistic():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 400)
    score = np.clip(labels * 0.3 + rng.random(400) * 0.7, 0, 1)
    m = Auc(num_thresholds=100000)
    preds = np.stack([1 - score, score], 1)
    m.update(preds[:200], labels[:200])
    m.update(oar.to_tensor(preds[200:]), oar.to_tensor(labels[200:].reshape(-1, 1)))
    pos, neg = score[labels == 1], score[labels == 0]
    exact = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (
        len(pos) * len(neg)
    )
    assert m.accumulate() == pytest.approx(exact, abs=1e-3)
    assert Auc().accumulate() == 0.0
    with pytest.raises(ValueError, match="probabilities"):
        Auc().update(np.array([[0.5, 1.5]]), np.array([1]))
