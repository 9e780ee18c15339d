"""paddle.decomposition: registered rules applied to IR programs by decompose."""
import numpy as np
import pytest

import oar
from oar import _C
from oar.decomposition import decompose, register
from oar.incubate.passes import ir


def _trace_program(fn, arrays, dynamic=True):
    inputs = [(f"in{i}", oar.to_tensor(a), [-1] * a.ndim if dynamic else list(a.shape)) for i, a in enumerate(arrays)]
    tracer, outs = ir._trace_program(fn, inputs)
    return tracer.finish(outs)


def _run(program, feeds):
    ex = _C.pir.Executor(program.run_pipeline("jit-infer", lower_copy=True))
    return [o.numpy() for o in ex.run([oar.to_tensor(f) for f in feeds], {})]


def _names(program):
    return [op.name for op in program.ops()]


@pytest.fixture
def clean_registry():
    saved = dict(register._decomposition_ops.rules)
    yield
    register._decomposition_ops.rules.clear()
    register._decomposition_ops.rules.update(saved)


def test_softmax_rule_as_documented(clean_registry):
    @register.register_decomp("softmax")
    def softmax(x, axis):
        molecular = oar.exp(x)
        return oar.divide(molecular, oar.sum(molecular, axis=axis, keepdim=True))

    assert register.get_decomp_rule("softmax") is softmax
    assert register.get_decomp_rule("pd_op.softmax") is softmax
    x = np.random.default_rng(0).standard_normal((3, 5)).astype("float32")
    prog = _trace_program(lambda t: [oar.nn.functional.softmax(t, axis=-1), oar.nn.functional.softmax(t, axis=0)],
                          [x], dynamic=False)
    want = _run(prog.clone(), [x])
    assert _names(prog).count("pd_op.softmax") == 2
    outs = decompose(prog)
    assert len(outs) == 2
    names = _names(prog)
    assert "pd_op.softmax" not in names and names.count("pd_op.exp") == 2
    got = _run(prog, [x])
    for g, w, axis in zip(got, want, (-1, 0)):
        ref = np.exp(x.astype(np.float64)) / np.exp(x.astype(np.float64)).sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(g, ref, rtol=1e-5)
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_white_and_black_lists(clean_registry):
    @register.register_decomp("pd_op.relu")
    def relu(x):
        return oar.maximum(x, oar.zeros_like(x))

    @register.register_decomp("exp")
    def exp(x):
        return oar.pow(oar.full_like(x, np.e), x)

    x = np.linspace(-2, 2, 8, dtype="float32").reshape(2, 4)
    fn = lambda t: oar.exp(oar.nn.functional.relu(t))  # noqa: E731
    p1 = _trace_program(fn, [x], dynamic=False)
    decompose(p1, whitelist={"relu"})
    assert "pd_op.relu" not in _names(p1) and "pd_op.exp" in _names(p1)
    p2 = _trace_program(fn, [x], dynamic=False)
    decompose(p2, blacklist={"pd_op.relu"})
    assert "pd_op.relu" in _names(p2) and "pd_op.exp" not in _names(p2)
    for p in (p1, p2):
        np.testing.assert_allclose(_run(p, [x])[0], np.exp(np.maximum(x, 0)), rtol=1e-5)


def test_rule_that_changes_the_type_is_not_applied(clean_registry):
    @register.register_decomp("exp")
    def exp(x):
        return oar.sum(oar.exp(x))  # a scalar: not what exp returns

    x = np.ones((2, 3), "float32")
    prog = _trace_program(lambda t: oar.exp(t), [x], dynamic=False)
    decompose(prog)
    assert "pd_op.exp" in _names(prog) and "pd_op.sum" not in _names(prog)


def test_static_program_is_decomposed_as_its_pir_copy(clean_registry, progs):
    @register.register_decomp("exp")
    def exp(x):
        return oar.pow(oar.full_like(x, np.e), x)

    x = oar.static.data("x", [4], "float32")
    oar.exp(x)
    main, _ = progs
    outs = decompose(main)
    assert outs == []  # the copy has no outputs; the static program itself is unchanged
    assert "pd_op.exp" in str(main)


def test_registry_and_decompose_errors(clean_registry):
    with pytest.raises(TypeError, match="register_decomp: op_type must be a str, got int"):
        register.register_decomp(3)
    with pytest.raises(TypeError, match="the rule for 'tanh' must be a function"):
        register.register_decomp("tanh")(42)
    register.register_decomp("tanh")(lambda x: x)
    with pytest.raises(ValueError, match="a rule for 'pd_op.tanh' is already registered"):
        register.register_decomp("pd_op.tanh")(lambda x: x)
    with pytest.raises(TypeError, match="decompose: program must be an oar.pir.Program"):
        decompose(3)
    with pytest.raises(TypeError, match="decompose: whitelist must be a set of op names"):
        decompose(_C.pir.Program(), whitelist="exp")

    @register.register_decomp("softmax")
    def softmax(x, temperature):
        return x
    x = np.ones((2, 3), "float32")
    prog = _trace_program(lambda t: oar.nn.functional.softmax(t), [x], dynamic=False)
    with pytest.raises(TypeError, match="rule for 'softmax': its parameter 'temperature' is no attribute"):
        decompose(prog)
    register._decomposition_ops.rules.pop("pd_op.softmax")

    @register.register_decomp("softmax")
    def softmax2(x, axis):
        return x
    with pytest.raises(ValueError, match="rule for 'softmax' returns one of its arguments"):
        decompose(prog)
