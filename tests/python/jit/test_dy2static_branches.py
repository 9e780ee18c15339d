"""Python control flow on tensors inside to_static (python/oar/jit/dy2static/): an if/while
whose condition is a traced tensor becomes cf.if / cf.while by converting the function's
source; with Python values the converted code behaves as written; what cannot be converted
is an error naming the file and line.

This suite: if/else, conditional expressions and and/or/not on traced tensors, and the
errors of branches that cannot convert."""
import os

import numpy as np
import pytest

import oar
import oar.nn as nn
from dy2static_helpers import one_program, pos_neg, rand
from oar.jit import dy2static

HERE = os.path.basename(__file__)


# ---- if / else
def test_if_else_assigning_in_both_branches():
    @oar.jit.to_static
    def f(x):
        y = x + 1
        if x.sum() > 0:
            y = y * 2
            z = x
        else:
            z = x - 1
        return y, z

    p, n = pos_neg(4)
    for x in (p, n, p):
        y, z = f(x)
        xn = x.numpy()
        big = xn.sum() > 0
        np.testing.assert_allclose(y.numpy(), (xn + 1) * 2 if big else xn + 1, rtol=1e-6)
        np.testing.assert_allclose(z.numpy(), xn if big else xn - 1, rtol=1e-6)
    one_program(f)


def test_nested_ifs_and_elif_chain():
    @oar.jit.to_static
    def f(x):
        s = x.mean()
        if s > 1.0:
            y = x * 3
        elif s > 0:
            if x.max() > 2.0:
                y = x * 0 + 2
            else:
                y = x * 2
        elif s > -1.0:
            y = x - 1
        else:
            y = -x
        return y

    def ref(x):
        s = x.mean()
        if s > 1.0:
            return x * 3
        if s > 0:
            return x * 0 + 2 if x.max() > 2.0 else x * 2
        return x - 1 if s > -1.0 else -x

    base = rand(6)
    inputs = [base * 0.1 + 2, base * 0.1 + 0.5, base * 0.1 + 0.5 + oar.to_tensor([3.0, 0, 0, 0, 0, 0]),
              base * 0.1 - 0.5, base * 0.1 - 3]
    for x in inputs:
        np.testing.assert_allclose(f(x).numpy(), ref(x.numpy()), rtol=1e-6)
    one_program(f)
    assert str(f.main_program).count("cf.if") >= 4


def test_early_return():
    @oar.jit.to_static
    def f(x):
        h = x * 2
        if h.sum() > 0:
            return h + 1
        h = h - 5
        return h

    @oar.jit.to_static
    def g(x):
        if x.sum() > 0:
            return x, x * 2
        else:
            return x * 3, x

    p, n = pos_neg(3)
    np.testing.assert_allclose(f(p).numpy(), p.numpy() * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(f(n).numpy(), n.numpy() * 2 - 5, rtol=1e-6)
    one_program(f)
    for x in (p, n):
        a, b = g(x)
        xn = x.numpy()
        exp = (xn, xn * 2) if xn.sum() > 0 else (xn * 3, xn)
        np.testing.assert_allclose(a.numpy(), exp[0], rtol=1e-6)
        np.testing.assert_allclose(b.numpy(), exp[1], rtol=1e-6)
    one_program(g)


def test_early_returns_in_sequence():
    @oar.jit.to_static
    def f(x):
        if x.sum() > 5:
            return x * 0
        if x.sum() > 0:
            y = x * 2
            return y
        return x * -1

    for x in (rand(4) * 0 + 3, rand(4).abs() * 0.1, -rand(4).abs()):
        xn = x.numpy()
        exp = xn * 0 if xn.sum() > 5 else xn * 2 if xn.sum() > 0 else -xn
        np.testing.assert_allclose(f(x).numpy(), exp, rtol=1e-6)
    one_program(f)


def test_if_expression_on_a_tensor():
    @oar.jit.to_static
    def f(x):
        return x * 2 if x.sum() > 0 else x - 1

    p, n = pos_neg(3)
    np.testing.assert_allclose(f(p).numpy(), p.numpy() * 2, rtol=1e-6)
    np.testing.assert_allclose(f(n).numpy(), n.numpy() - 1, rtol=1e-6)
    one_program(f)


# ---- and / or / not
def test_and_or_not_on_tensors():
    @oar.jit.to_static
    def f(x, y):
        if x.sum() > 0 and y.sum() > 0:
            z = x + y
        elif x.sum() > 0 or not y.sum() < 0:
            z = x - y
        else:
            z = x * y
        return z

    def ref(x, y):
        if x.sum() > 0 and y.sum() > 0:
            return x + y
        if x.sum() > 0 or not y.sum() < 0:
            return x - y
        return x * y

    p, n = pos_neg(3)
    # (distinct tensor objects: the tracer maps arguments by tensor)
    for a, b in ((p, p * 1), (p, n), (n, p), (n, n * 1), (n, p * 0)):
        np.testing.assert_allclose(f(a, b).numpy(), ref(a.numpy(), b.numpy()), rtol=1e-6)
    one_program(f)
    text = str(f.main_program)
    assert "logical_and" in text and "logical_or" in text and "logical_not" in text


def test_and_or_short_circuit_with_python_values():
    calls = []

    def side(v):
        calls.append(v)
        return v

    @oar.jit.to_static
    def f(x, flag):
        if flag and side(x.shape[0] > 2):
            x = x * 2
        if flag or side(False):
            x = x + 1
        if not flag:
            x = x - 100
        return x

    x = rand(3)
    np.testing.assert_allclose(f(x, True).numpy(), x.numpy() * 2 + 1, rtol=1e-6)
    assert calls == [True]
    np.testing.assert_allclose(f(x, False).numpy(), x.numpy() - 100, rtol=1e-6)
    assert calls == [True, False]


def test_variable_in_one_branch_with_traced_condition_names_the_line():
    @oar.jit.to_static
    def f(x):
        if x.sum() > 0:
            y = x * 2
        return y

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        f(rand(3))
    assert HERE in str(e.value) and "'y'" in str(e.value) and "if x.sum() > 0" in str(e.value)

    @oar.jit.to_static
    def g(x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = 1.0
        return y

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        g(rand(3))
    assert HERE in str(e.value) and "'y'" in str(e.value)


def test_temporaries_of_one_branch_need_not_exist_in_the_other():
    @oar.jit.to_static
    def f(x):
        if x.sum() > 0:
            t = x * 2
            y = t + 1
        else:
            y = x
        return y

    p, n = pos_neg(3)
    np.testing.assert_allclose(f(p).numpy(), p.numpy() * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(f(n).numpy(), n.numpy(), rtol=1e-6)


def test_writes_to_outside_objects_name_the_line():
    class Counter(nn.Layer):
        def forward(self, x):
            if x.sum() > 0:
                self.last = x
            return x * 2

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        oar.jit.to_static(Counter())(rand(3))
    assert HERE in str(e.value) and "self.last" in str(e.value)


def test_global_and_yield_are_left_alone():
    def gen(x):
        if x > 0:
            yield x

    assert dy2static.convert_function(gen) is gen

    @oar.jit.to_static
    def f(x):
        global _dy2static_test_global
        if x.sum() > 0:
            _dy2static_test_global = 1
        return x

    with pytest.raises(oar.jit.Dy2StaticError) as e:
        f(rand(3))
    assert HERE in str(e.value) and "global" in str(e.value)
