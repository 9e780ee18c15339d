"""shuffle_batch in a static program: a fresh permutation of the fed rows each run
(Note [Run-time random shapes] in docs/notes/static.md)."""
import itertools

import numpy as np
import pytest

import oar
from oar import static
from oar.incubate.layers import shuffle_batch


def _is_row_permutation(out, x):
    assert out.shape == x.shape
    assert sorted(map(tuple, out.reshape(len(x), -1).tolist())) == sorted(map(tuple, x.reshape(len(x), -1).tolist()))


def test_each_run_permutes_the_fed_rows(progs):
    main, _ = progs
    x = static.data("x", [None, 3], "float32")
    out = shuffle_batch(x)
    exe = static.Executor()
    oar.seed(11)
    for rows in (1, 2, 9, 5000):  # one program, any batch
        xs = np.arange(rows * 3, dtype="float32").reshape(rows, 3)
        got, = exe.run(main, feed={"x": xs}, fetch_list=[out])
        _is_row_permutation(got, xs)
    orders = {exe.run(main, feed={"x": xs[:50]}, fetch_list=[out])[0][:, 0].tobytes() for _ in range(5)}
    assert len(orders) == 5  # a new order every run


def test_permutations_are_uniform(progs):
    main, _ = progs
    x = static.data("x", [None], "int64")
    out = shuffle_batch(x)
    exe = static.Executor()
    oar.seed(3)
    perms = {p: 0 for p in itertools.permutations(range(4))}
    runs = 2400
    for _ in range(runs):
        got, = exe.run(main, feed={"x": np.arange(4)}, fetch_list=[out])
        perms[tuple(got.tolist())] += 1
    expected = runs / 24
    chi2 = sum((c - expected) ** 2 / expected for c in perms.values())
    assert chi2 < 60, perms  # 23 degrees of freedom: p < 1e-4 beyond 60
    # and each row lands in each position about equally often, on a larger batch
    pos = np.zeros((16, 16))
    for _ in range(400):
        got, = exe.run(main, feed={"x": np.arange(16)}, fetch_list=[out])
        pos[got, np.arange(16)] += 1
    assert np.abs(pos / 400 - 1 / 16).max() < 0.07


def test_seed_gives_one_order(progs):
    main, _ = progs
    x = static.data("x", [None, 2], "float32")
    out = shuffle_batch(x, seed=7)
    exe = static.Executor()
    xs = np.arange(40, dtype="float32").reshape(20, 2)
    a, = exe.run(main, feed={"x": xs}, fetch_list=[out])
    b, = exe.run(main, feed={"x": xs}, fetch_list=[out])
    np.testing.assert_array_equal(a, b)
    _is_row_permutation(a, xs)
    assert not np.array_equal(a, xs)


def test_rank_above_two_is_refused_naming_the_dims(progs):
    x = static.data("x", [None, 3, 2], "float32")
    with pytest.raises(NotImplementedError, match="shuffle_batch: in a static program x must have rank 1 or 2.*-1, 3, 2"):
        shuffle_batch(x)
