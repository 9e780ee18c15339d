"""to_static over indexing writes (x[...] = v becomes slice_scatter_ / index_put_, which the
tracer records) and ops whose output size comes from the data (nonzero, masked_select,
unique, bincount: dynamic dims in the IR)."""
import numpy as np
import pytest

import oar
from oar.static import InputSpec


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def check(f, args, spec=None, n_programs=1):
    sf = oar.jit.to_static(f, input_spec=spec)
    for a in args:
        got, ref = sf(*a), f(*a)
        got = got if isinstance(got, (list, tuple)) else [got]
        ref = ref if isinstance(ref, (list, tuple)) else [ref]
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g.numpy(), r.numpy())
    assert len(sf.concrete_programs) == n_programs
    return sf


def test_basic_setitem_forms():
    def f(x, v):
        y = x.clone()
        y[:, 1:4:2] = v            # strided slice, tensor value
        y[0] = y[0] + 1            # int index, value read from y itself
        y[-1, ::-1] = 0.5          # negative step, Python scalar
        y[None, 1, 2:] = v[:1, :1]  # None and broadcast value
        return y

    sf = check(f, [(rand(3, 5, seed=s), rand(3, 2, seed=s + 10)) for s in range(2)])
    assert "slice_scatter" in str(sf.main_program)


def test_setitem_with_a_dynamic_batch():
    def f(x):
        y = x * 2
        y[:, -1] = 0.5
        y[:, :2] = y[:, 2:4] - 1
        return y

    sf = check(f, [(rand(b, 5, seed=b),) for b in (3, 1, 7)], spec=[InputSpec([-1, 5], "float32")])
    assert "?x5" in str(sf.main_program)


def test_setitem_gradients_under_to_static():
    def f(x, w):
        y = x * w
        y[:, 0] = y[:, 1] * 3
        return (y * y).sum()

    sf = oar.jit.to_static(f)
    res = []
    for fn in (f, sf):
        x, w = rand(4, 3), rand(4, 3, seed=1)
        x.stop_gradient = w.stop_gradient = False
        out = fn(x, w)
        out.backward()
        res.append([out.numpy(), x.grad.numpy(), w.grad.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-6)


def test_bad_setitem_values_still_raise():
    @oar.jit.to_static
    def f(x):
        y = x.clone()
        y[:, 1:3] = oar.ones([3])
        return y

    with pytest.raises(ValueError, match=r"setitem: value of shape \[3\] cannot be broadcast to the indexed "
                                         r"shape \[4, 2\]"):
        f(rand(4, 5))


def test_data_dependent_sizes_are_dynamic():
    def f(x):
        m = x > 0.3
        return oar.nonzero(m), oar.masked_select(x, m), x[m], oar.unique((x * 2).round())

    sf = check(f, [(rand(3, 4, seed=s),) for s in range(4)])
    text = str(sf.main_program)
    assert "tensor<?x2xi64>" in text and "tensor<?xf32>" in text

    def g(x):
        return oar.bincount(x)

    check(g, [(oar.to_tensor(np.array(v, dtype="int64")),) for v in ([0, 1, 1, 4], [2, 7, 7, 9])])


def test_bernoulli_converts():
    # its [0, 1] check reads values, which a traced input does not have yet: skipped there
    sf = oar.jit.to_static(lambda p: oar.bernoulli(p))
    oar.seed(0)
    draws = np.stack([sf(oar.full([4000], 0.25)).numpy() for _ in range(3)])
    assert set(np.unique(draws)) <= {0.0, 1.0}
    assert abs(draws.mean() - 0.25) < 0.02
    assert not np.array_equal(draws[0], draws[1])  # a new draw per run
    assert "uniform" in str(sf.main_program)
    with pytest.raises(ValueError, match="probabilities in"):
        oar.bernoulli(oar.full([3], 1.5))  # eager still checks


def test_input_spec_helpers():
    a = np.zeros((3, 4), "float32")
    spec = InputSpec.from_numpy(a, "x")
    assert spec.shape == [3, 4] and str(spec.dtype) == "float32" and spec.name == "x"
    assert InputSpec.from_tensor(oar.to_tensor(a)).shape == [3, 4]
    # batch/unbatch change the spec in place and return it (Paddle's InputSpec.batch doc)
    assert spec.batch(None).shape == [-1, 3, 4] and spec.unbatch().shape == [3, 4]
    assert spec.batch([8]) is spec and spec.shape == [8, 3, 4]
    assert spec.unbatch() is spec and spec.shape == [3, 4]
    with pytest.raises(ValueError, match="InputSpec.unbatch"):
        InputSpec([]).unbatch()
    with pytest.raises(ValueError, match="InputSpec.batch"):
        spec.batch(-3)
