"""static.auc: bucketed AUC whose counts persist across runs."""
import numpy as np
import pytest

import oar
from oar import static


def _mann_whitney(p, y):
    """P(score of a positive > score of a negative) + half the ties, in float64."""
    pos, neg = p[y > 0], p[y <= 0]
    if not len(pos) or not len(neg):
        return 0.0
    d = pos[:, None] - neg[None, :]
    return float(((d > 0).sum() + 0.5 * (d == 0).sum()) / d.size)


def _bucketed(p, y, n):
    """The same on the bucket indices Paddle's auc uses (int(p * n))."""
    return _mann_whitney(np.floor(p * n), y)


def _program(num_thresholds=4095, curve="ROC"):
    prob = static.data("prob", [None, 2], "float32")
    label = static.data("label", [None], "int64")
    return static.auc(prob, label, curve=curve, num_thresholds=num_thresholds)


def _feed(rng, n):
    p1 = rng.random(n).astype("float32")
    return {"prob": np.stack([1 - p1, p1], 1), "label": rng.integers(0, 2, n)}


def test_accumulates_across_runs_and_matches_mann_whitney(progs):
    main, startup = progs
    auc, batch_auc, stats = _program()
    exe = static.Executor()
    exe.run(startup)
    rng = np.random.default_rng(0)
    seen_p, seen_y = [], []
    for n in (7, 1, 20, 0, 13):
        f = _feed(rng, n)
        seen_p.append(f["prob"][:, 1].astype(np.float64))
        seen_y.append(f["label"])
        a, b, sp, sn = exe.run(main, feed=f, fetch_list=[auc, batch_auc, stats[2], stats[3]])
        all_p, all_y = np.concatenate(seen_p), np.concatenate(seen_y)
        np.testing.assert_allclose(a, _bucketed(all_p, all_y, 4095), rtol=1e-12)
        np.testing.assert_allclose(b, _bucketed(seen_p[-1], seen_y[-1], 4095), rtol=1e-12)
        assert sp.sum() == (all_y > 0).sum() and sn.sum() == (all_y <= 0).sum()
    # with this many buckets no two predictions share one: exactly the rank statistic
    np.testing.assert_allclose(a, _mann_whitney(all_p, all_y), rtol=1e-12)

    # the startup program zeroes the statistics again
    exe.run(startup)
    f = _feed(rng, 9)
    a, = exe.run(main, feed=f, fetch_list=[auc])
    np.testing.assert_allclose(a, _bucketed(f["prob"][:, 1].astype(np.float64), f["label"], 4095), rtol=1e-12)


def test_documented_first_run_and_ties_in_few_buckets(progs):
    main, startup = progs
    auc, batch_auc, _ = _program(num_thresholds=4)
    exe = static.Executor()
    exe.run(startup)
    p1 = np.array([0.1, 0.15, 0.9, 0.6, 0.62, 0.3], "float32")
    y = np.array([0, 1, 1, 0, 1, 0])
    a, = exe.run(main, feed={"prob": np.stack([1 - p1, p1], 1), "label": y}, fetch_list=[auc])
    np.testing.assert_allclose(a, _bucketed(p1.astype(np.float64), y, 4), rtol=1e-12)
    # one class only: 0, as Paddle
    a, b = exe.run(main, feed={"prob": np.stack([1 - p1, p1], 1), "label": np.ones(6, "int64")},
                   fetch_list=[auc, batch_auc])
    assert b == 0.0 and 0 < a < 1


def test_pr_curve_of_a_perfect_ranking_is_one(progs):
    main, startup = progs
    auc, _, _ = _program(curve="PR")
    exe = static.Executor()
    exe.run(startup)
    p1 = np.array([0.05, 0.2, 0.7, 0.95], "float32")
    a, = exe.run(main, feed={"prob": np.stack([1 - p1, p1], 1), "label": np.array([0, 0, 1, 1])},
                 fetch_list=[auc])
    np.testing.assert_allclose(a, 1.0)


def test_fake_batches_update_nothing(progs):
    main, startup = progs
    prob = static.data("prob", [None, 2], "float32")
    label = static.data("label", [None], "int64")
    tag = static.data("tag", [None], "float64")
    auc, _, stats = static.auc(prob, label, ins_tag_weight=tag)
    exe = static.Executor()
    exe.run(startup)
    f = _feed(np.random.default_rng(1), 8)
    sp, = exe.run(main, feed=dict(f, tag=np.zeros(8)), fetch_list=[stats[2]])
    assert sp.sum() == 0
    sp, = exe.run(main, feed=dict(f, tag=np.ones(8)), fetch_list=[stats[2]])
    assert sp.sum() == (f["label"] > 0).sum()


def test_eager_call_is_the_batch_auc():
    rng = np.random.default_rng(2)
    p1 = rng.random(30)
    y = rng.integers(0, 2, 30)
    a, b, _ = static.auc(oar.to_tensor(np.stack([1 - p1, p1], 1).astype("float32")), oar.to_tensor(y))
    ref = _bucketed(p1.astype("float32").astype(np.float64), y, 4095)
    np.testing.assert_allclose(float(a), ref, rtol=1e-12)
    np.testing.assert_allclose(float(b), ref, rtol=1e-12)


@pytest.mark.parametrize("kw, err, match", [
    (dict(input=oar.ones([3, 3])), ValueError, "auc: input must be a \\[batch, 2\\] tensor"),
    (dict(label=oar.ones([3])), TypeError, "auc: label must be an int32/int64/bool tensor, got .*float32"),
    (dict(curve="AP"), ValueError, "auc: curve must be 'ROC' or 'PR', got 'AP'"),
    (dict(num_thresholds=0), ValueError, "auc: num_thresholds must be an int >= 1, got 0"),
    (dict(slide_steps=-1), ValueError, "auc: slide_steps must be an int >= 0, got -1"),
    (dict(ins_tag_weight=[1.0]), TypeError, "auc: ins_tag_weight must be a tensor or None, got list"),
])
def test_bad_arguments_raise_naming_them(kw, err, match):
    args = dict(input=oar.ones([3, 2]), label=oar.to_tensor(np.array([0, 1, 1])))
    args.update(kw)
    with pytest.raises(err, match=match):
        static.auc(**args)
