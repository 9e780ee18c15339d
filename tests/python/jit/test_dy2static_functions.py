"""Python control flow on tensors inside to_static (python/oar/jit/dy2static/): an if/while
whose condition is a traced tensor becomes cf.if / cf.while by converting the function's
source; with Python values the converted code behaves as written; what cannot be converted
is an error naming the file and line.

This suite: how functions convert: Python values keep Python semantics, closures,
globals, defaults and methods, caching and the off switch, and the calls that convert
(the user's functions and sublayers) or do not (libraries, not_to_static, ignore_module)."""
import os
import warnings

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from dy2static_helpers import rand
from oar.jit import dy2static

HERE = os.path.basename(__file__)


# ---- Python values keep Python semantics
def test_python_conditions_unchanged():
    @oar.jit.to_static
    def f(x, mode, n):
        if mode == "double":
            extra = 1.0  # defined in one branch only
            x = x * 2
        if mode == "double":
            x = x + extra
        k = 0
        while k < n:
            k += 1
        if x.shape[0] > 2:
            x = x * 10
        return x, k

    x = rand(3)
    y, k = f(x, "double", 4)
    np.testing.assert_allclose(y.numpy(), (x.numpy() * 2 + 1) * 10, rtol=1e-6)
    assert k == 4 and isinstance(k, int)
    y, k = f(x, "plain", 0)
    np.testing.assert_allclose(y.numpy(), x.numpy() * 10, rtol=1e-6)
    assert k == 0
    assert "cf.if" not in str(f.main_program)


def test_unbound_variable_stays_unbound():
    def f(x, flag):
        if flag:
            y = x
        return y

    g = dy2static.convert_function(f)
    assert g is not f
    assert g(1, True) == 1
    with pytest.raises(UnboundLocalError):
        g(1, False)

    def h(flag):
        if flag:
            z = 1
        else:
            del_me = 2  # noqa: F841
        return "z" in locals(), z if flag else None

    assert dy2static.convert_function(h)(True) == h(True)


def test_closures_globals_defaults_and_methods():
    scale = 3.0

    def f(x, bias=1.0, *, k=2):
        if x > 0:
            y = x * scale + bias
        else:
            y = np.sign(x) * k
        return y

    g = dy2static.convert_function(f)
    assert g is not f and g.__defaults__ == (1.0,) and g.__kwdefaults__ == {"k": 2}
    for v in (2.0, -2.0):
        assert g(v) == f(v)

    class Base:
        def val(self, x):
            return x + 1

    class Child(Base):
        def __init__(self):
            self.__secret = 5

        def val(self, x):
            if x > 0:
                r = super().val(x) + self.__secret
            else:
                r = -1
            return r

    c = Child()
    m = dy2static.convert_function(c.val)
    assert m.__func__ is not Child.val and m.__self__ is c
    assert m(1) == 7 and m(-1) == -1
    # nothing to convert, or no source: the function itself
    assert dy2static.convert_function(len) is len
    lam = lambda x: x  # noqa: E731
    assert dy2static.convert_function(lam) is lam


def test_conversion_is_cached_and_can_be_turned_off():
    @oar.jit.to_static(full_graph=False)
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(oar.jit.Dy2StaticError, match=HERE):
        f(rand(3))

    def g(x):
        if x > 0:
            x = x + 1
        return x
    assert dy2static.convert_function(g) is dy2static.convert_function(g)

    dy2static.enabled = False
    try:
        h = oar.jit.to_static(g)
        with pytest.raises(oar.jit.Dy2StaticError, match="if x > 0"):
            h(rand(1))
    finally:
        dy2static.enabled = True


# ---- calls: the user's functions and sublayers convert too
def _helper_with_an_early_return(x):
    s = x.sum()
    if s > 0:
        return x * 3
    return x * s


class _GatedBlock(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            return F.relu(h)
        return h * 0.1


class _TwoBlocks(nn.Layer):
    def __init__(self):
        super().__init__()
        self.b1, self.b2 = _GatedBlock(), _GatedBlock()

    def forward(self, x):
        return _helper_with_an_early_return(self.b2(self.b1(x)))


def test_called_functions_and_sublayers_convert():
    oar.seed(4)
    net = _TwoBlocks()
    static = oar.jit.to_static(_TwoBlocks())
    static.set_state_dict(net.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for scale in (-2.0, 0.5, 3.0):
            for m in (net, static):
                m.clear_gradients()
            x = rand(3, 4, seed=int(abs(scale) * 10)) * scale
            ref = net(x)
            out = static(x)
            np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
            ref.sum().backward()
            out.sum().backward()
            for (n1, p1), (_, p2) in zip(net.named_parameters(), static.named_parameters()):
                np.testing.assert_allclose(p2.grad.numpy(), p1.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n1)
    (prog,) = static.forward.concrete_programs
    assert str(prog.program).count("cf.if") == 3  # two blocks and the helper


def test_library_functions_are_not_converted():
    assert dy2static._user_function(_helper_with_an_early_return)
    assert not dy2static._user_function(F.relu)            # oar's own
    assert not dy2static._user_function(os.path.join)      # the standard library
    assert not dy2static._user_function(np.linalg.norm)    # an installed package
    assert dy2static.convert_call(len) is len


def test_not_to_static_and_ignore_module_keep_functions_as_written():
    def gate(x):
        if x.sum() > 0:
            return x * 2
        return x

    @oar.jit.to_static
    def f(x):
        return gate(x) + 1

    x = rand(3).abs()
    assert "cf.if" in str((f(x), f.main_program)[1])
    oar.jit.not_to_static(gate)

    @oar.jit.to_static
    def g(x):
        return gate(x) + 1

    with pytest.raises(oar.jit.Dy2StaticError, match="reads the value"):
        g(x)  # gate now runs as written: its if reads a traced tensor
    assert not dy2static._user_function(gate)
    oar.jit.ignore_module([__name__])
    try:
        assert not dy2static._user_function(_helper_with_an_early_return)
    finally:
        oar.jit.api._ignored_modules.discard(__name__)
