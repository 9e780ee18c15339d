"""paddle.incubate.passes.ir.RegisterPass: Python pattern/replace pairs as an IR pass."""
import numpy as np
import pytest

import oar
from oar import pir
from oar.incubate.passes import ir
from oar.incubate.passes.ir import RegisterPass
from oar.static import InputSpec


def _count(program, name):
    return sum(op.name == name for op in program.ops())


def _run(program, feeds):
    ex = oar._C.pir.Executor(program.run_pipeline("jit-infer", lower_copy=True))
    return ex.run([oar.to_tensor(f) for f in feeds], {})


def _trace_program(fn, arrays):
    inputs = [(f"in{i}", oar.to_tensor(a), [-1] * a.ndim) for i, a in enumerate(arrays)]
    tracer, outs = ir._trace_program(fn, inputs)
    return tracer.finish(outs)


def test_documented_pass_registers_and_keeps_values():
    @RegisterPass
    def c34_multi_add_to_addn():
        def pattern(x, y, z):
            return oar.add(oar.add(x, y), z)

        def replace(x, y, z):
            return oar.add_n([x, y, z])
        return pattern, replace

    assert "c34_multi_add_to_addn" in pir.registered_passes()
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((3, 5)).astype("float32") for _ in range(3))
    prog = _trace_program(lambda x, y, z: oar.exp(oar.add(oar.add(x, y), z)), [a, b, c])
    before = str(prog)
    prog.run_passes("c34_multi_add_to_addn")
    assert str(prog) == before  # Oar's add_n is that chain of adds: nothing to rewrite
    np.testing.assert_allclose(_run(prog, [a, b, c])[0].numpy(), np.exp(a.astype(np.float64) + b + c), rtol=1e-5)


def test_reassociation_rewrites_and_keeps_values():
    @RegisterPass
    def c34_reassociate():
        return (lambda x, y, z: oar.add(oar.add(x, y), z)), (lambda x, y, z: oar.add(x, oar.add(y, z)))

    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal((3, 5)).astype("float32") for _ in range(3))
    prog = _trace_program(lambda x, y, z: oar.exp(oar.add(oar.add(x, y), z)), [a, b, c])
    ins = {op.result(0): op.attrs()["name"] for op in prog.ops() if op.name == "builtin.input"}
    first = [op for op in prog.ops() if op.name == "pd_op.add"][0]
    assert [ins.get(v) for v in first.operands()] == ["in0", "in1"]
    prog.run_passes("c34_reassociate")
    ins = {op.result(0): op.attrs()["name"] for op in prog.ops() if op.name == "builtin.input"}
    first = [op for op in prog.ops() if op.name == "pd_op.add"][0]
    assert [ins.get(v) for v in first.operands()] == ["in1", "in2"]
    np.testing.assert_allclose(_run(prog, [a, b, c])[0].numpy(), np.exp(a.astype(np.float64) + b + c), rtol=1e-5)


def test_pattern_attributes_must_match_and_lists_of_pairs():
    @RegisterPass(input_specs={"x": InputSpec([-1, -1], "float32")})
    def c34_scale_pairs():
        def p1(x):
            return oar.scale(x, 2.0)

        def r1(x):
            return oar.add(x, x)

        def p2(x):
            return oar.transpose(oar.transpose(x, [1, 0]), [1, 0])

        def r2(x):
            return oar.multiply(x, oar.ones_like(x))
        return [(p1, r1), (p2, r2)]

    x = np.arange(6, dtype="float32").reshape(2, 3)
    prog = _trace_program(lambda t: [oar.scale(t, 2.0), oar.scale(t, 3.0),
                                     oar.transpose(oar.transpose(t, [1, 0]), [1, 0])], [x])
    prog.run_passes("c34_scale_pairs")
    names = [op.name for op in prog.ops()]
    # scale(2) became add; scale(3) has another attribute value and stays; the double transpose went
    assert names.count("pd_op.transpose") == 0
    got = _run(prog, [x])
    np.testing.assert_array_equal(got[0].numpy(), x * 2)
    np.testing.assert_array_equal(got[1].numpy(), x * 3)
    np.testing.assert_array_equal(got[2].numpy(), x)
    scales = [op for op in prog.ops() if op.name == "pd_op.scale"]
    assert [op.attrs()["scale"] for op in scales] == [3.0] and "pd_op.multiply" in names


def test_intermediate_used_elsewhere_is_not_rewritten():
    @RegisterPass
    def c34_add_twice():
        return (lambda x, y, z: oar.add(oar.add(x, y), z)), (lambda x, y, z: oar.add_n([x, y, z]))

    a = np.ones((2, 2), "float32")
    prog = _trace_program(lambda x, y, z: [oar.add(oar.add(x, y), z), oar.add(x, y)], [a, a, a])
    prog.run_passes("c34_add_twice")
    assert _count(prog, "pd_op.add_n") == 0  # x + y is also an output


_OUTSIDE = oar.to_tensor(np.ones(2, "float32"))


@pytest.mark.parametrize("make, err, match", [
    (lambda: (lambda x: x, lambda x: oar.exp(x)), ValueError, "computes nothing"),
    (lambda: (lambda x: oar.exp(x), lambda x: x), ValueError, "replace's output 0 must be a value it computes"),
    (lambda: (lambda x: oar.exp(x), lambda x: [oar.exp(x), oar.exp(x)]), ValueError, "returns 1 tensors and the replace 2"),
    (lambda: 3, ValueError, "must return a \\(pattern, replace\\) pair"),
    (lambda: (lambda x: oar.exp(x) + _OUTSIDE, lambda x: oar.exp(x)), ValueError, "none of its arguments"),
])
def test_bad_pass_functions_raise_naming_the_pass(make, err, match):
    def c34_bad():
        return make()
    with pytest.raises(err, match="RegisterPass\\('c34_bad'\\): .*" + match):
        RegisterPass(c34_bad)
    assert "c34_bad" not in pir.registered_passes()


def test_duplicate_name_and_parameters_are_refused():
    def c34_dup():
        return (lambda x: oar.exp(x)), (lambda x: oar.sqrt(x))
    RegisterPass(c34_dup)
    with pytest.raises(ValueError, match="'c34_dup' is already registered"):
        RegisterPass(c34_dup)

    def c34_params(a):
        return None
    with pytest.raises(NotImplementedError, match="must take no parameters"):
        RegisterPass(c34_params)
    with pytest.raises(TypeError, match="input_specs\\['x'\\] must be an InputSpec"):
        RegisterPass(input_specs={"x": [2]})(lambda: (lambda x: oar.exp(x), lambda x: oar.exp(x)))
