"""incubate.asp n:m masks: masks follow their pattern, keep what each algorithm promises
(brute force over all valid 2-D patterns for get_mask_2d_best), shapes 1-D to 4-D round-trip,
and bad arguments name the function."""
import itertools

import numpy as np
import pytest

import oar

S = oar.incubate.asp
RNG = np.random.default_rng(11)


def test_density_and_1d_mask_keeps_largest():
    x = RNG.standard_normal((5, 10))
    mask = S.get_mask_1d(x, 2, 4)
    assert mask.shape == x.shape and S.check_mask_1d(mask, 2, 4)
    padded = np.pad(np.abs(x), [(0, 0), (0, 2)]).reshape(-1, 4)
    kept = np.pad(mask, [(0, 0), (0, 2)]).reshape(-1, 4)
    for vals, k in zip(padded, kept):  # the kept entries are the 2 largest of each group
        assert set(np.flatnonzero(k)) <= set(np.argsort(vals)[2:]) | set(np.flatnonzero(vals == 0))
    assert S.calculate_density(mask) == pytest.approx(np.count_nonzero(mask) / mask.size)
    assert not S.check_mask_1d(np.ones((2, 8)), 2, 4)
    assert S.check_mask_1d(np.array([1.0, 0, 0, 1, 0, 1, 0, 0, 5]), 2, 4)


def brute_best(block, n, m):
    rows = [r for r in itertools.product([0, 1], repeat=m) if sum(r) == n]
    best = -1
    for cand in itertools.product(rows, repeat=m):
        c = np.array(cand)
        if (c.sum(axis=0) <= n).all():
            best = max(best, (np.abs(block) * c).sum())
    return best


@pytest.mark.parametrize("shape", [(4, 4), (6, 9), (8, 8)])
def test_2d_masks(shape):
    x = RNG.standard_normal(shape)
    for fn in (S.get_mask_2d_greedy, S.get_mask_2d_best):
        mask = fn(x, 2, 4)
        assert mask.shape == x.shape
        padded = np.pad(mask, [(0, -shape[0] % 4), (0, -shape[1] % 4)])
        for i in range(0, padded.shape[0], 4):
            for j in range(0, padded.shape[1], 4):
                b = padded[i:i + 4, j:j + 4]
                assert (b.sum(axis=0) <= 2).all() and (b.sum(axis=1) <= 2).all()
        assert S.check_mask_2d(mask, 2, 4)
    best = S.get_mask_2d_best(x[:4, :4], 2, 4)
    assert (np.abs(x[:4, :4]) * best).sum() == pytest.approx(brute_best(x[:4, :4], 2, 4))
    greedy = S.get_mask_2d_greedy(x[:4, :4], 2, 4)
    assert (np.abs(x[:4, :4]) * greedy).sum() <= (np.abs(x[:4, :4]) * best).sum() + 1e-12


def test_check_mask_2d_rule():
    ok = np.array([[0, 8, 0, 9], [9, 0, 0, 10], [0, 5, 0, 6], [0, 4, 6, 0]])
    assert S.check_mask_2d(ok, 2, 4)  # only a column exceeds: valid, as Paddle documents
    assert not S.check_mask_2d(np.ones((4, 4)), 2, 4)


@pytest.mark.parametrize("shape", [(8,), (4, 8), (2, 4, 8), (3, 2, 8, 3)])
@pytest.mark.parametrize("algo", list(S.MaskAlgo))
def test_create_mask_and_check_sparsity(shape, algo):
    x = RNG.standard_normal(shape).astype(np.float32)
    mask = S.create_mask(x, algo, 2, 4)
    assert mask.shape == x.shape and mask.dtype == np.float32
    method = S.CheckMethod.get_checking_method(algo)
    assert S.check_sparsity(mask, method, 2, 4)
    assert S.check_sparsity(x * mask, method, 2, 4)
    assert not S.check_sparsity(np.ones(shape), S.CheckMethod.CHECK_1D, 2, 4)


BAD = [
    (lambda: S.get_mask_1d(np.ones((2, 4)), 5, 4), ValueError, "n must not exceed m"),
    (lambda: S.get_mask_1d(np.ones((2, 4)), 0, 4), ValueError, "get_mask_1d: n"),
    (lambda: S.check_mask_1d(np.ones((2, 2, 4)), 2, 4), ValueError, "check_mask_1d"),
    (lambda: S.get_mask_2d_best(np.ones((4, 4)), 5, 10), ValueError, "too many"),
    (lambda: S.create_mask(np.ones((2, 2, 2, 2, 2))), ValueError, "create_mask"),
    (lambda: S.create_mask(np.ones(4), "get_mask_1d"), TypeError, "MaskAlgo"),
    (lambda: S.check_sparsity(np.ones(4), S.MaskAlgo.MASK_1D), TypeError, "CheckMethod"),
    (lambda: S.CheckMethod.get_checking_method("x"), TypeError, "mask_algo"),
    (lambda: S.calculate_density(np.ones(0)), ValueError, "empty"),
]


@pytest.mark.parametrize("call,exc,needle", BAD)
def test_bad_arguments(call, exc, needle):
    with pytest.raises(exc, match=needle):
        call()
