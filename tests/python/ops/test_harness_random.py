"""Random ops of issue 3 in the harness (RandomCase: moments / frequencies under a seed, the
same draws after reseeding, dtypes, bad inputs), the random nn functionals (dropout,
dropout2d, alpha_dropout, gumbel_softmax) by their frequencies, and oar.Generator: seed,
initial_seed, get_state / set_state make runs reproducible."""
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (FLOAT_DTYPES, NARROW_DTYPES, RandomCase, case_id, check_bad_inputs,
                           check_random, tensor)

N = 20000  # draws per check: 4.5 standard errors of the mean stay well inside the bounds


def near(value, expected, sd, what, n=N):
    """|value - expected| within 4.5 standard errors (sd / sqrt(n)) of a mean over n draws."""
    assert abs(value - expected) <= 4.5 * sd / math.sqrt(n) + 1e-12, \
        f"{what}: {value} vs {expected} (sd {sd})"


def _moments(mean, sd, lo=None, hi=None):
    def check(v, dtype):
        if lo is not None:
            assert v.min() >= lo and v.max() <= hi, (v.min(), v.max())
        tol = 1.0 if dtype in NARROW_DTYPES else 0.0  # rounding of 16-bit samples
        near(v.mean(), mean, sd + tol * 0.01 * (abs(mean) + sd), "mean")
        assert abs(v.std() - sd) <= 0.03 * sd + tol * 0.01 * sd, ("sd", v.std(), sd)
    return check


def _frequencies(probs, rows=None):
    probs = np.asarray(probs, dtype=np.float64)

    def check(v, dtype):
        counts = np.bincount(v.astype(np.int64).reshape(-1), minlength=len(probs))
        assert len(counts) == len(probs), counts
        freq = counts / counts.sum()
        for p, f in zip(probs, freq):
            near(f, p, math.sqrt(p * (1 - p)), f"frequency of p={p}", n=counts.sum())
    return check


def _randint_check(v, dtype):
    assert set(np.unique(v)) <= set(range(-3, 4))
    _frequencies(np.full(7, 1 / 7))(v + 3, dtype)


def _randperm_check(v, dtype):
    # each draw is a permutation; over many draws position 0 is uniform
    perms = v.reshape(-1, 6)
    assert all(sorted(p) == list(range(6)) for p in perms)
    _frequencies(np.full(6, 1 / 6))(perms[:, 0], dtype)


def _bernoulli_check(probs):
    def check(v, dtype):
        v = v.reshape(-1, len(probs))
        assert set(np.unique(v)) <= {0.0, 1.0}
        for j, p in enumerate(probs):
            near(v[:, j].mean(), p, math.sqrt(p * (1 - p)) * math.sqrt(len(probs)), f"p={p}")
    return check


def _poisson_check(v, dtype):
    v = v.reshape(-1, 2)
    for j, lam in enumerate((0.7, 12.0)):
        assert (v[:, j] == np.round(v[:, j])).all() and v[:, j].min() >= 0
        near(v[:, j].mean(), lam, math.sqrt(2 * lam), f"poisson mean lam={lam}")
        assert abs(v[:, j].var() - lam) < 0.1 * lam, ("variance", v[:, j].var(), lam)


PROBS = [0.1, 0.5, 0.4]


def _multinomial_rows(v, dtype):
    _frequencies(PROBS)(v, dtype)


def _multinomial_no_replacement(v, dtype):
    v = v.reshape(-1, 3)
    assert all(len(set(r)) == 3 for r in v)  # without replacement: distinct categories
    # the first pick follows the normalized weights
    _frequencies(PROBS)(v[:, 0], dtype)


def _dropout_check(p, scale):
    def check(v, dtype):
        kept = v != 0
        near(1 - kept.mean(), p, math.sqrt(p * (1 - p)), "dropped fraction")
        np.testing.assert_allclose(v[kept], scale, rtol=1e-2 if dtype in NARROW_DTYPES else 1e-6)
    return check


def _dropout2d_check(v, dtype):
    ch = v.reshape(-1, 4)  # whole channels dropped together: [N * C, H * W]
    assert ((ch == 0).all(1) | (ch != 0).all(1)).all()
    near((ch[:, 0] == 0).mean(), 0.3, math.sqrt(0.21) * math.sqrt(4), "dropped channels")


def _alpha_dropout_check(v, dtype):
    # SELU-preserving: standard normal in -> mean 0, sd 1 out
    near(v.mean(), 0.0, 1.0, "alpha_dropout mean")
    assert abs(v.std() - 1.0) < 0.05, v.std()


LOGITS = np.log(np.array([0.2, 0.5, 0.3]))


def _gumbel_check(v, dtype):
    v = v.reshape(-1, 3)
    assert ((v == 0) | (v == 1)).all() and (v.sum(1) == 1).all()  # hard one-hot samples
    _frequencies(np.exp(LOGITS))(v.argmax(1), dtype)


FLOATS = FLOAT_DTYPES + NARROW_DTYPES
NT = ([0.5],), TypeError, "must be a Tensor"

CASES = [
    RandomCase("uniform", oar.uniform, lambda d: oar.uniform([N], d, min=-2.0, max=3.0),
               _moments(0.5, 5 / math.sqrt(12), -2.0, 3.0), dtypes=FLOATS,
               bad_inputs=[(([2, 3],), ValueError, "min", {"min": 1.0, "max": 0.0}),
                           (([2, -3],), ValueError, "negative", {})]),
    RandomCase("normal", oar.normal, lambda d: oar.normal(1.5, 2.0, [N]).astype(d),
               _moments(1.5, 2.0), dtypes=FLOAT_DTYPES,
               bad_inputs=[((0.0, -1.0, [2]), ValueError, "std")]),
    RandomCase("normal[tensor]", oar.normal,
               lambda d: oar.normal(oar.to_tensor(np.tile([-1.0, 4.0], (N // 2, 1))).astype(d),
                                    oar.to_tensor(np.array([0.5, 3.0])).astype(d)),
               lambda v, d: [_moments(m, sd)(v.reshape(-1, 2)[:, j], d)
                             for j, (m, sd) in enumerate(((-1.0, 0.5), (4.0, 3.0)))],
               dtypes=FLOAT_DTYPES, op="normal",
               bad_inputs=[((tensor([0.0]), tensor([-1.0])), ValueError, "std"),
                           ((tensor([0.0, 1.0]), tensor([1.0, 1.0, 1.0])), ValueError,
                            "broadcast")]),
    RandomCase("standard_normal", oar.standard_normal, lambda d: oar.standard_normal([N], d),
               _moments(0.0, 1.0), dtypes=FLOATS,
               bad_inputs=[(([-2],), ValueError, "negative")]),
    RandomCase("randint", oar.randint, lambda d: oar.randint(-3, 4, [N], d), _randint_check,
               dtypes=["int32", "int64"],
               bad_inputs=[((5, 2, [3]), ValueError, "high"),
                           ((0, 2, [3], "float32"), TypeError, "dtype")]),
    RandomCase("randperm", oar.randperm,
               lambda d: oar.concat([oar.randperm(6, d) for _ in range(3000)]),
               _randperm_check, dtypes=["int32", "int64"],
               bad_inputs=[((-1,), ValueError, "non-negative")]),
    RandomCase("bernoulli", oar.bernoulli,
               lambda d: oar.bernoulli(oar.to_tensor(np.tile([0.1, 0.5, 0.9, 0.0], N // 4))
                                       .astype(d)),
               _bernoulli_check([0.1, 0.5, 0.9, 0.0]), dtypes=FLOATS,
               bad_inputs=[NT, ((tensor([1.5]),), ValueError, "[0, 1]")]),
    RandomCase("poisson", oar.poisson,
               lambda d: oar.poisson(oar.to_tensor(np.tile([0.7, 12.0], N // 2)).astype(d)),
               _poisson_check, dtypes=FLOAT_DTYPES,
               bad_inputs=[NT, ((tensor([-1.0]),), ValueError, "non-negative")]),
    RandomCase("multinomial", oar.multinomial,
               lambda d: oar.multinomial(oar.to_tensor(np.array(PROBS) * 3).astype(d), N, True),
               _multinomial_rows, dtypes=FLOATS, out_dtype="int64",
               bad_inputs=[NT, ((tensor([0.5, 0.5]), 3), ValueError, "num_samples"),
                           ((tensor([[[0.5]]]),), ValueError, "1-D or 2-D")]),
    RandomCase("multinomial[no_replacement]", oar.multinomial,
               lambda d: oar.multinomial(oar.to_tensor(np.tile(PROBS, (N // 4, 1))).astype(d),
                                         3, False),
               _multinomial_no_replacement, dtypes=FLOAT_DTYPES, out_dtype="int64",
               op="multinomial"),
    RandomCase("dropout", F.dropout, lambda d: F.dropout(oar.ones([N], d), 0.3),
               _dropout_check(0.3, 1 / 0.7), dtypes=FLOATS),
    RandomCase("dropout[downscale]", F.dropout,
               lambda d: F.dropout(oar.ones([N], d), 0.6, mode="downscale_in_infer"),
               _dropout_check(0.6, 1.0), dtypes=FLOAT_DTYPES, op="dropout"),
    RandomCase("dropout2d", F.dropout2d,
               lambda d: F.dropout2d(oar.ones([N // 40, 10, 2, 2], d), 0.3) * 0.7,
               _dropout2d_check, dtypes=FLOAT_DTYPES),
    RandomCase("alpha_dropout", F.alpha_dropout,
               lambda d: F.alpha_dropout(oar.to_tensor(
                   np.random.default_rng(1).standard_normal(N)).astype(d), 0.2),
               _alpha_dropout_check, dtypes=FLOAT_DTYPES),
    RandomCase("gumbel_softmax", F.gumbel_softmax,
               lambda d: F.gumbel_softmax(oar.to_tensor(np.tile(LOGITS, (N, 1))).astype(d),
                                          hard=True),
               _gumbel_check, dtypes=FLOAT_DTYPES),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_random(case):
    check_random(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


# ---------------------------------------------------------------- Generator
def _draws():
    return np.concatenate([oar.rand([5]).numpy().astype(np.float64),
                           oar.randn([3]).numpy().astype(np.float64),
                           oar.randint(0, 100, [4]).numpy().astype(np.float64),
                           oar.randperm(7).numpy().astype(np.float64),
                           F.dropout(oar.ones([8]), 0.5).numpy().astype(np.float64)])


def test_seed_returns_the_generator_and_reproduces():
    g = oar.seed(123)
    assert isinstance(g, oar.Generator) and g is oar.default_generator() and g is oar.Generator()
    assert g.initial_seed() == 123
    a = _draws()
    oar.seed(123)
    np.testing.assert_array_equal(_draws(), a)
    g.manual_seed(124)
    assert not np.array_equal(_draws(), a)
    assert g.manual_seed(123) is g  # chains, as PyTorch's
    np.testing.assert_array_equal(_draws(), a)


def test_state_round_trip():
    g = oar.seed(7)
    _draws()
    state = g.get_state()
    after = _draws()
    more = _draws()
    g.set_state(state)
    np.testing.assert_array_equal(_draws(), after)
    np.testing.assert_array_equal(_draws(), more)
    # the snapshot is a value: drawing does not change it, and it works across reseeding
    oar.seed(99)
    g.set_state(state)
    np.testing.assert_array_equal(_draws(), after)
    assert g.get_state() != state
    assert oar.get_rng_state() == g.get_state()  # the module-level functions see the same
    oar.set_rng_state(state)
    np.testing.assert_array_equal(_draws(), after)


def test_nondeterministic_seed():
    g = oar.default_generator()
    s1 = g.seed()
    assert g.initial_seed() == s1 and s1 >= 0
    a = _draws()
    s2 = g.seed()
    assert s2 != s1
    g.manual_seed(s1)
    np.testing.assert_array_equal(_draws(), a)


def test_generator_bad_inputs():
    g = oar.default_generator()
    with pytest.raises(TypeError, match="manual_seed"):
        g.manual_seed("1")
    with pytest.raises(ValueError, match="64 bits"):
        g.manual_seed(2 ** 70)
    with pytest.raises((TypeError, ValueError), match="set_rng_state"):
        g.set_state([1])
