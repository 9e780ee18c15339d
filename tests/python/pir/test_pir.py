"""oar.pir from Python: build/inspect programs, shape inference that agrees with eager
execution, print/parse round trips, pass pipelines, serialization, errors."""
import numpy as np
import pytest

import oar
from oar import pir


def mlp_program():
    p = pir.Program()
    x = p.add_parameter("x", [4, 8], "float32")
    w = p.add_parameter("w", [8, 16], "float32")
    b = p.add_parameter("b", [16], "float32")
    mm = p.add_op("matmul", [x, w]).result(0)
    y = p.add_op("add", [mm, b]).result(0)
    r = p.add_op("relu", [y]).result(0)
    p.add_op("exp", [r])  # dead
    p.add_output(r, "out")
    return p


def test_build_and_inspect():
    p = mlp_program()
    ops = p.ops()
    assert [o.name for o in ops] == ["builtin.parameter"] * 3 + [
        "pd_op.matmul", "pd_op.add", "pd_op.relu", "pd_op.exp", "builtin.output"]
    assert ops[3].attrs() == {"transpose_x": False, "transpose_y": False}
    assert ops[0].attrs() == {"name": "x"}
    mm = ops[3].result(0)
    assert mm.shape == [4, 16] and mm.dtype == oar.float32 and mm.type == "tensor<4x16xf32>"
    assert mm.num_uses == 1 and mm.users()[0].name == "pd_op.add"
    assert mm.defining_op.name == "pd_op.matmul"
    assert ops[4].operands()[0] == mm
    assert len(p.values()) == 7 and p.num_ops == 8
    p.verify()


def test_print_parse_round_trip():
    p = mlp_program()
    text = str(p)
    q = pir.parse(text)
    assert str(q) == text
    assert str(pir.parse(str(q))) == text
    assert '"pd_op.matmul"(%0, %1)' in text


@pytest.mark.parametrize("shapes,op,attrs", [
    ([[2, 3], [3, 4]], "matmul", {}),
    ([[5, 3], [4, 3]], "matmul", {"transpose_y": True}),
    ([[2, 1, 3], [4, 1]], "add", {}),
    ([[0, 3], [1, 3]], "multiply", {}),
    ([[2, 3, 4]], "sum", {"axis": [1], "keepdim": True}),
    ([[2, 3, 4]], "mean", {"axis": [0, 2]}),
    ([[2, 3, 4]], "transpose", {"perm": [2, 0, 1]}),
    ([[2, 3, 4]], "reshape", {"shape": [6, -1]}),
    ([[2, 3]], "cast", {"dtype": "float64"}),
    ([[3, 4]], "softmax", {"axis": 0}),
])
def test_shape_inference_agrees_with_eager(shapes, op, attrs):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    eager = getattr(oar._C.ops, op)(*[oar.to_tensor(a) for a in arrays], **attrs)
    p = pir.Program()
    vals = [p.add_parameter(f"in{i}", s, "float32") for i, s in enumerate(shapes)]
    out = p.add_op(op, vals, attrs).result(0)
    assert out.shape == list(eager.shape)
    assert out.dtype == eager.dtype


def test_concat_takes_a_list():
    p = pir.Program()
    a = p.add_parameter("a", [2, 3])
    b = p.add_parameter("b", [2, 5])
    c = p.add_op("concat", [[a, b]], {"axis": 1}).result(0)
    assert c.shape == [2, 8]
    assert [o.name for o in p.ops()][-2:] == ["builtin.combine", "pd_op.concat"]


def test_pipeline_and_stale_views():
    p = mlp_program()
    old = p.ops()
    r = p.run_passes("canonicalize,cse,fuse,dce", timing=True)
    assert r["changed"] and set(r["timing"]) == {"canonicalize", "cse", "fuse", "dce"}
    names = [o.name for o in p.ops()]
    assert "pd_op.fused_linear_activation" in names and "pd_op.exp" not in names
    assert p.ops()[3].attrs()["activation"] == "relu"
    with pytest.raises(RuntimeError, match="taken before the program was transformed"):
        old[3].name  # noqa: B018  (reading the attribute is what must raise)
    pir.run_passes(p, "standard")
    assert all(o.name.startswith(("builtin.", "kernel.")) for o in p.ops())
    assert "#kernel_key<cpu, f32, NCHW>" in str(p)


def test_constant_folding_matches_numpy():
    text = '''module {
  %0 = "builtin.constant"() {value = #dense<tensor<2xf32>, "0x0000803f00000040">} : () -> (tensor<2xf32>)
  %1 = "pd_op.exp"(%0) : (tensor<2xf32>) -> (tensor<2xf32>)
  %2 = "pd_op.multiply"(%1, %0) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)
  "builtin.output"(%2) {name = "y"} : (tensor<2xf32>) -> ()
}
'''
    p = pir.parse(text)
    p.run_passes("constant_fold,dce")
    ops = p.ops()
    assert [o.name for o in ops] == ["builtin.constant", "builtin.output"]
    hexdata = str(ops[0]).split('"0x')[1].split('"')[0]
    got = np.frombuffer(bytes.fromhex(hexdata), dtype=np.float32)
    x = np.array([1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(got, np.exp(x) * x, rtol=1e-6)


def test_serialization_round_trip_and_corruption():
    p = mlp_program()
    data = p.serialize()
    assert data[:8] == b"\x89OARPIR\n"
    q = pir.deserialize(data)
    assert str(q) == str(p)
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="checksum mismatch"):
        pir.deserialize(bytes(bad))
    with pytest.raises(ValueError, match="truncated"):
        pir.deserialize(data[:-3])
    future = bytearray(data)
    future[8] = 9
    with pytest.raises(ValueError, match="unsupported format version 9"):
        pir.deserialize(bytes(future))


def test_errors_name_the_op_and_argument():
    p = pir.Program()
    x = p.add_parameter("x", [2, 3])
    y = p.add_parameter("y", [4, 5])
    with pytest.raises(ValueError, match="pd_op.add"):
        p.add_op("add", [x, y])
    with pytest.raises(ValueError, match="pd_op.matmul"):
        p.add_op("matmul", [x, x])
    with pytest.raises(RuntimeError, match="'pd_op.no_such_op' is not registered"):
        p.add_op("no_such_op", [x])
    with pytest.raises(ValueError, match="unknown attribute 'alpha'"):
        p.add_op("relu", [x], {"alpha": 1.0})
    with pytest.raises(TypeError, match="axis"):
        p.add_op("sum", [x], {"axis": "rows"})
    with pytest.raises(RuntimeError, match="unknown pass 'nope'"):
        p.run_passes("cse,nope")
    with pytest.raises(ValueError, match="parse error at 1:1"):
        pir.parse("modul {}")
    with pytest.raises(ValueError, match="shape inference gives"):
        pir.parse('''module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<2xf32>)
  %1 = "pd_op.exp"(%0) : (tensor<2xf32>) -> (tensor<3xf32>)
}''')


def test_every_defined_op_is_in_the_dialect():
    names = set(pir.op_names())
    assert {"builtin.module", "builtin.combine", "builtin.split", "cf.if", "cf.while", "cf.yield",
            "kernel.phi_kernel"} <= names
    info = pir.op_info("pd_op.add")
    assert info["inputs"] == [("x", "Tensor"), ("y", "Tensor")]
    assert info["pure"] and info["kernel"] == "add" and info["inplace"] == "pd_op.add_"
    assert "sum_to(grad, x)" in info["backward"]
    sm = pir.op_info("pd_op.softmax")
    assert sm["attrs"] == [("axis", "int", "-1")]
    pd_ops = [n for n in names if n.startswith("pd_op.")]
    assert len(pd_ops) >= len(oar._C._generated_op_names())
    assert "standard" != pir.standard_pipeline() and "lower_to_kernel" in pir.registered_passes()


def _fold(build, pipeline):
    p = pir.Program()
    out = build(p)
    p.add_output(out, "y")
    p.run_passes(pipeline)
    outputs = [o for o in p.ops() if o.name == "builtin.output"]
    return outputs[0].operands()[0].constant().numpy()


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("m,k,n", [(4, 8, 16), (0, 3, 5), (3, 0, 2), (1, 1, 1)])
def test_fused_linear_kernels_match_numpy(m, k, n, act):
    """The fusion rules' result ops run the fused kernels; folding the program with
    and without the fuse pass (eager kernels both times) must agree with NumPy."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k))
    w = rng.standard_normal((k, n))
    b = rng.standard_normal((n,))
    ref = x @ w + b
    if act == "relu":
        ref = np.maximum(ref, 0)
    elif act == "gelu":
        from math import erf, sqrt
        ref = 0.5 * ref * (1 + np.vectorize(erf, otypes=[float])(ref / sqrt(2)))
    elif act == "gelu_tanh":
        ref = 0.5 * ref * (1 + np.tanh(0.7978845608028654 * (ref + 0.044715 * ref ** 3)))
    for dtype, tol in (("float64", 1e-10), ("float32", 1e-4)):
        def build(p):
            y = p.add_op("matmul", [p.add_constant(x, dtype), p.add_constant(w, dtype)]).result(0)
            y = p.add_op("add", [y, p.add_constant(b, dtype)]).result(0)
            if act == "relu":
                y = p.add_op("relu", [y]).result(0)
            elif act is not None:
                y = p.add_op("gelu", [y], {"approximate": act == "gelu_tanh"}).result(0)
            return y
        fused = _fold(build, "fuse,constant_fold,dce")
        plain = _fold(build, "constant_fold,dce")
        np.testing.assert_allclose(fused, ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(plain, ref, rtol=tol, atol=tol)


def test_fused_linear_eager_errors():
    x = oar.ones([2, 3])
    w = oar.ones([3, 4])
    with pytest.raises(ValueError, match="fused_linear: bias must have 4 elements"):
        oar._C.ops.fused_linear(x, w, oar.ones([5]))
    with pytest.raises(ValueError, match="activation must be relu, gelu or gelu_tanh, got 'tanh'"):
        oar._C.ops.fused_linear_activation(x, w, oar.ones([4]), activation="tanh")
    with pytest.raises(ValueError, match="fused_linear: inner dimensions do not match"):
        oar._C.ops.fused_linear(x, x, oar.ones([3]))
