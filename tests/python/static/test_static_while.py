"""Paddle's legacy static.nn.control_flow.While (Note [Static While] in
docs/notes/static.md): the tensors the block writes in place are the loop variables of a
cf.while; each program is checked against the same loop run eagerly in NumPy."""
import numpy as np
import pytest

import oar
from oar import static
from oar.static.nn.control_flow import While


def _run(main, feed, fetch):
    exe = static.Executor(oar.CPUPlace())
    return exe.run(main, feed=feed, fetch_list=fetch)


def test_counter_loop(progs):
    main, _ = progs
    i = oar.full([1], 0, "int64")
    n = oar.full([1], 10, "int64")
    cond = oar.less_than(i, n)
    loop = While(cond=cond)
    with loop.block():
        i = oar.increment(i, 1)
        oar.assign(oar.less_than(i, n), output=cond)
    assert "cf.while" in [op.name() for op in main.global_block().ops]
    got_i, got_c = _run(main, {}, [i, cond])
    assert got_i.tolist() == [10] and got_c.tolist() == [False]


def test_rebound_names_are_not_loop_variables(progs):
    # Paddle's second example: data rebound in the block is read afresh from outside
    # each iteration, so sums ends as 2 * data
    main, _ = progs
    i = oar.full([1], 0, "int64")
    n = oar.full([1], 10, "int64")
    one = oar.full([1], 1, "float32")
    data = static.data("data", [1], "float32")
    sums = oar.full([1], 0, "float32")
    cond = oar.less_than(i, n)
    with While(cond=cond).block():
        oar.assign(oar.add(data, data), sums)
        i = oar.increment(i, 1)
        data = oar.add(data, one)
        oar.assign(oar.less_than(i, n), output=cond)
    got, = _run(main, {"data": np.ones(1, "float32")}, [sums])
    assert got.tolist() == [2.0]


def _eager(xs, n):
    acc = np.zeros_like(xs)
    k, total = 0, np.zeros(1, "float32")
    while k < n:
        acc = acc * 0.5 + xs * k
        total = total + acc.sum()
        k += 1
    return acc, total, k


def test_loop_variables_follow_the_fed_sizes_and_count(progs):
    main, _ = progs
    x = static.data("x", [None, 3], "float32")
    n = static.data("n", [1], "int64")
    acc = oar.zeros_like(x)
    total = oar.zeros([1], "float32")
    k = oar.zeros([1], "int64")
    cond = oar.less_than(k, n)
    with While(cond).block():
        # reads of acc and total before their writes see the previous iteration's values
        oar.assign(acc * 0.5 + x * k.astype("float32"), output=acc)
        oar.assign(total + acc.sum(), output=total)
        oar.increment(k)
        oar.assign(oar.less_than(k, n), output=cond)
    rng = np.random.default_rng(0)
    for b, steps in ((2, 3), (5, 0), (1, 7), (64, 4)):
        xs = rng.standard_normal((b, 3)).astype("float32")
        got_acc, got_total, got_k = _run(main, {"x": xs, "n": np.array([steps], "int64")}, [acc, total, k])
        want_acc, want_total, want_k = _eager(xs, steps)
        assert got_k.tolist() == [want_k]
        np.testing.assert_allclose(got_acc, want_acc, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got_total, want_total, rtol=1e-5, atol=1e-4)


def test_the_block_must_write_cond(progs):
    main, _ = progs
    i = oar.full([1], 0, "int64")
    cond = oar.less_than(i, oar.full([1], 3, "int64"))
    with pytest.raises(ValueError, match="While: the block never writes the condition"):
        with While(cond).block():
            oar.increment(i)
    # the program stays usable after the refused block
    j = i + 1
    got, = _run(main, {}, [j])
    assert got.tolist() == [1]


def test_errors_in_the_block_propagate(progs):
    cond = oar.less_than(oar.full([1], 0, "int64"), oar.full([1], 3, "int64"))
    with pytest.raises(ZeroDivisionError):
        with While(cond).block():
            raise ZeroDivisionError("in the block")


def test_bad_arguments():
    with pytest.raises(TypeError, match="While: cond must be a one-element bool tensor"):
        While(oar.ones([1]))
    with pytest.raises(TypeError, match="While: cond must be a one-element bool tensor"):
        While(oar.ones([2]) > 0)
    with pytest.raises(RuntimeError, match="While: a loop of a static program"):
        with While(oar.ones([1]) > 0).block():
            pass
