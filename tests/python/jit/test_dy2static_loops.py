"""Python control flow on tensors inside to_static (python/oar/jit/dy2static/): an if/while
whose condition is a traced tensor becomes cf.if / cf.while by converting the function's
source; with Python values the converted code behaves as written; what cannot be converted
is an error naming the file and line.

This suite: while loops, for over ranges and rows, break/continue and list appends on
traced tensors, and the errors of loops that cannot convert."""
import os

import numpy as np
import pytest

import oar
from dy2static_helpers import one_program, rand

HERE = os.path.basename(__file__)


# ---- while
def test_while_counter_and_accumulator():
    @oar.jit.to_static
    def f(x, n):
        i = 0
        acc = oar.zeros_like(x)
        while i < n:
            acc += x * i
            i += 1
        return acc, i

    x = rand(3)
    for k in (0, 1, 4, 7):
        acc, i = f(x, oar.to_tensor([k]))
        np.testing.assert_allclose(acc.numpy(), x.numpy() * sum(range(k)), rtol=1e-5)
        assert int(i) == k
    one_program(f, "cf.while")


def test_while_on_a_traced_value_with_an_if_inside():
    @oar.jit.to_static
    def f(x):
        steps = oar.zeros([], "int64")
        while x.abs().max() > 1.0:
            if x.sum() > 0:
                x = x * 0.5
            else:
                x = x * 0.25
            steps = steps + 1
        return x, steps

    for scale in (10.0, -10.0, 0.5, 100.0):
        x = rand(4) * scale
        xn = x.numpy().copy()
        k = 0
        while np.abs(xn).max() > 1.0:
            xn = xn * 0.5 if xn.sum() > 0 else xn * 0.25
            k += 1
        y, steps = f(x)
        np.testing.assert_allclose(y.numpy(), xn, rtol=1e-6)
        assert int(steps) == k
    one_program(f, "cf.while")
    assert "cf.if" in str(f.main_program)


def test_while_with_python_condition_is_unrolled():
    @oar.jit.to_static
    def f(x):
        i = 0
        while i < 3:
            x = x * 2
            i += 1
        return x

    x = rand(3)
    np.testing.assert_allclose(f(x).numpy(), x.numpy() * 8, rtol=1e-6)
    assert "cf.while" not in str(f.main_program)


# ---- what cannot be converted names the file and line
def test_break_inside_a_with_block_in_a_tensor_while_names_the_line():
    # break/continue reached through if statements become flags; one inside a with (or
    # try) block stays a Python jump, which cannot be converted
    import contextlib

    @oar.jit.to_static
    def f(x):
        while x.sum() < 100:
            x = x * 2
            with contextlib.nullcontext():
                break
        return x

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        f(rand(3).abs() + 1)
    msg = str(e.value)
    assert HERE in msg and "while x.sum() < 100" in msg and "break" in msg

    # the same construct with a Python condition runs as written
    @oar.jit.to_static
    def g(x, n):
        while n > 0:
            n -= 1
            if n == 2:
                break
            x = x * 2
        return x

    x = rand(3)
    np.testing.assert_allclose(g(x, 5).numpy(), x.numpy() * 4, rtol=1e-6)


def _same_as_eager(f, cases, n_programs=1, op="cf.while"):
    sf = oar.jit.to_static(f)
    for args in cases:
        np.testing.assert_allclose(sf(*args).numpy(), f(*args).numpy(), rtol=1e-6, atol=1e-6)
    assert len(sf.concrete_programs) == n_programs
    assert op in str(sf.main_program)
    return sf


def test_break_and_continue_in_a_tensor_while():
    def f(x, n):
        i = oar.zeros([], dtype="int64")
        s = x * 0
        while i < n:
            i = i + 1
            if i % 3 == 0:
                continue
            s = s + x * i
            if s.sum() > 40:
                break
            s = s * 1.5
        return s + i

    x = rand(4).abs()
    _same_as_eager(f, [(x, oar.to_tensor(k)) for k in (0, 1, 4, 7, 30)] + [(x * 5, oar.to_tensor(30))])


def test_for_range_over_tensors():
    def f(x, n):
        s = x * 0
        for i in range(n):
            s = s + x * i
        for j in range(1, n, 2):
            if j == 3:
                continue
            s = s - x * j
        for k in range(n, 0, -1):
            s = s * 0.5 + k
        return s

    x = rand(3)
    sf = _same_as_eager(f, [(x, oar.to_tensor(k)) for k in (0, 1, 5, 8)])
    assert str(sf.main_program).count("cf.while") == 3

    # gradients through the converted loop
    def g(x, n):
        h = x
        for _ in range(n):
            h = oar.sin(h) * x
        return h.sum()

    sg = oar.jit.to_static(g)
    for k in (3, 0, 2):
        got, ref = [], []
        for fn, acc in ((g, ref), (sg, got)):
            xt = rand(4)
            xt.stop_gradient = False
            out = fn(xt, oar.to_tensor(k))
            out.backward()
            acc += [out.numpy(), xt.grad.numpy()]
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(sg.concrete_programs) == 1


def test_break_under_a_tensor_condition_in_a_python_range_loop():
    # the range is Python, the break depends on the data: the loop becomes a cf.while
    # from the first traced test on
    def f(x):
        for _ in range(10):
            x = x * 2
            if x.sum() > 50:
                break
        return x

    _same_as_eager(f, [(rand(3).abs() * s,) for s in (0.1, 1.0, 30.0)])


def test_for_range_errors_name_the_problem():
    @oar.jit.to_static
    def f(x, n):
        for i in range(n):
            x = x + i
        return x, i

    with pytest.raises(oar.jit.Dy2StaticError, match="'i'.*first assigned inside this while loop"):
        f(rand(3), oar.to_tensor(3))

    @oar.jit.to_static
    def g(x, n):
        for _ in range(n):
            x = x + 1
        return x

    with pytest.raises(TypeError, match="range: a tensor argument must hold one integer"):
        g(rand(3), oar.to_tensor(2.0))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        g(rand(3), 2.5)


def test_list_append_in_a_tensor_while_names_the_line():
    # A local list appended to in a tensor while is carried as a buffer of rows (a
    # TensorList, test_jit_dynamic_shape.py); an append to another object's list cannot
    # follow the run-time iterations: an error naming the line (once a silently wrong program)
    @oar.jit.to_static
    def f(x, n):
        outs = []
        i = oar.zeros([], dtype="int64")
        while i < n:
            x = x * 2
            outs.append(x)
            i = i + 1
        return oar.stack(outs).sum()

    for n in (3, 5):
        got = f(rand(2, seed=n), oar.to_tensor(np.int64(n)))
        np.testing.assert_allclose(got.numpy(), f.dygraph_function(rand(2, seed=n), oar.to_tensor(np.int64(n))).numpy(),
                                   rtol=1e-6)
    assert len(f.concrete_programs) == 1

    @oar.jit.to_static
    def h(x, n):
        box = {"outs": []}
        i = oar.zeros([], dtype="int64")
        while i < n:
            x = x * 2
            box["outs"].append(x)
            i = i + 1
        return x

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        h(rand(2), oar.to_tensor(np.int64(3)))
    assert HERE in str(e.value) and "while i < n" in str(e.value) and "append" in str(e.value)

    # a list made inside the body, and a Python-range loop, are fine
    @oar.jit.to_static
    def g(x, n):
        outs = []
        for _ in range(3):
            x = x * 2
            outs.append(x)
        i = oar.zeros([], dtype="int64")
        while i < n:
            parts = []
            parts.append(x)
            x = oar.stack(parts).sum(0) + 1
            i = i + 1
        return oar.stack(outs).sum() + x.sum()

    x = rand(2)
    np.testing.assert_allclose(float(g(x, oar.to_tensor(np.int64(2)))),
                               float(g.dygraph_function(x, oar.to_tensor(np.int64(2)))), rtol=1e-6)


def test_return_inside_a_loop_names_the_line():
    @oar.jit.to_static
    def f(x):
        for _ in range(2):
            if x.sum() > 0:
                return x
            x = x + 1
        return x

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        f(rand(3))
    assert HERE in str(e.value) and "if x.sum() > 0" in str(e.value) and "return" in str(e.value)
