"""What the op definition files' keys produce (docs/notes/ops.md): multi-gradient
backward rules (one fused grad call per backward, gradients only where needed, second
derivatives through them), the `amp:` table behind oar.amp's default lists. (The IR's
decomp/spmd_rule fields and the decompositions themselves: tests/cpp.)"""
import glob
import importlib.util
import os

import numpy as np
import pytest
import yaml

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar import pir

OPS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "paddle_core", "ops")


def _entries():
    for path in sorted(glob.glob(os.path.join(OPS_DIR, "*.yaml"))):
        yield from yaml.safe_load(open(path)) or []


def rand(*shape, seed=0, grad=False):
    t = oar.to_tensor(np.random.default_rng(seed).standard_normal(shape))
    t.stop_gradient = not grad
    return t


# ---------------------------------------------------------------- multi-gradient backward
NORMS = {
    "layer_norm": (lambda: nn.LayerNorm([6]), (4, 6)),
    "group_norm": (lambda: nn.GroupNorm(2, 4), (3, 4, 5)),
    "batch_norm": (lambda: nn.BatchNorm2D(4), (3, 4, 2, 2)),
}


@pytest.mark.parametrize("op", sorted(NORMS))
def test_the_fused_grad_op_runs_once_per_backward(op):
    make, shape = NORMS[op]
    net = oar.jit.to_static(make())
    net.train()
    x = oar.to_tensor(np.random.default_rng(0).standard_normal(shape).astype("float32"))
    x.stop_gradient = False
    net(x).sum().backward()
    text = str(net.forward.concrete_programs[0].backward_program)
    # x, scale and bias all need gradients: one call yields the three of them
    assert text.count(f"pd_op.{op}_grad") == 1, text
    assert x.grad is not None
    assert all(p.grad is not None for p in net.parameters() if not p.stop_gradient)


def _layer_norm_loss(x, w, b):
    return (F.layer_norm(x, [6], w, b) * rand(4, 6, seed=9)).sum()


def _numeric_grad(f, t, eps=1e-6):
    base = t.numpy().copy()
    g = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        for sign in (1, -1):
            v = base.copy()
            v[i] += sign * eps
            g[i] += sign * f(oar.to_tensor(v)).numpy() / (2 * eps)
    return g


@pytest.mark.parametrize("needs", [("x",), ("w",), ("b",), ("w", "b"), ("x", "b")])
def test_only_the_inputs_that_need_it_get_a_gradient(needs):
    x, w, b = rand(4, 6, seed=1, grad="x" in needs), rand(6, seed=2, grad="w" in needs), \
        rand(6, seed=3, grad="b" in needs)
    _layer_norm_loss(x, w, b).backward()
    args = {"x": x, "w": w, "b": b}
    for name, t in args.items():
        if name not in needs:
            assert t.grad is None, name
            continue

        def f(v, name=name):
            return _layer_norm_loss(*[v if n == name else args[n] for n in ("x", "w", "b")])
        np.testing.assert_allclose(t.grad.numpy(), _numeric_grad(f, t), rtol=1e-6, atol=1e-7)


def test_second_derivatives_through_a_multi_gradient_rule():
    x, w, b = rand(4, 6, seed=1, grad=True), rand(6, seed=2, grad=True), rand(6, seed=3, grad=True)
    (gx,) = oar.grad(_layer_norm_loss(x, w, b), [x], create_graph=True)
    (gw,) = oar.grad((gx * gx).sum(), [w])

    def f(v):
        xx = rand(4, 6, seed=1, grad=True)
        (g,) = oar.grad(_layer_norm_loss(xx, v, b), [xx], create_graph=True)
        return (g * g).sum()
    np.testing.assert_allclose(gw.numpy(), _numeric_grad(f, w), rtol=1e-5, atol=1e-6)


def test_the_ir_keeps_the_rule_as_written():
    bw = pir.op_info("pd_op.group_norm")["backward"]
    assert bw.startswith("x, scale, bias: group_norm_grad(") and ";" not in bw


# ---------------------------------------------------------------- amp: table
def test_amp_default_lists_are_the_definitions_amp_keys():
    declared = {c: {e["op"] for e in _entries() if e.get("amp") == c} for c in ("white", "black")}
    assert "matmul" in declared["white"] and "softmax" in declared["black"]
    for dtype in ("float16", "bfloat16"):
        for level in ("OD", "O1", "O2"):
            assert oar.amp.white_list()[dtype][level] == declared["white"]
            assert oar.amp.black_list()[dtype][level] == declared["black"]
    # the lists are copies: changing one changes nothing
    oar.amp.white_list()["float16"]["O1"].add("exp")
    assert "exp" not in oar.amp.white_list()["float16"]["O1"]


def test_custom_lists_accept_paddle_names_that_are_not_oar_ops():
    x = oar.to_tensor(np.ones([2, 2], np.float32))
    with oar.amp.auto_cast(custom_white_list=["depthwise_conv2d", "exp"],
                           custom_black_list=["reduce_sum", "matmul"], dtype="bfloat16"):
        assert oar.exp(x).dtype.name == "bfloat16"      # black by default, custom white
        assert oar.matmul(x, x).dtype.name == "float32"  # white by default, custom black
        assert oar.tanh(x).dtype.name == "float32"       # gray, float32 inputs: unchanged
    with pytest.raises(ValueError, match="both custom_white_list and custom_black_list"):
        with oar.amp.auto_cast(custom_white_list=["nll_loss"], custom_black_list=["nll_loss"]):
            pass
    with pytest.raises(ValueError, match="category must be 'white' or 'black', got 'gray'"):
        oar._C._amp_default_ops("gray")


# ---------------------------------------------------------------- schema checks
def _load(tmp_path, text):
    spec = importlib.util.spec_from_file_location(
        "op_schema", os.path.join(OPS_DIR, "generator", "op_schema.py"))
    op_schema = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(op_schema)
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return op_schema.load_ops([str(p)])


@pytest.mark.parametrize("entry, message", [
    ("spmd: elementwse", "my_op: spmd: 'elementwse' is not one of: elementwise"),
    ("amp: grey", "my_op: amp: 'grey' is not one of: white, black, gray"),
    ("sdpm: unary", "my_op: unknown key(s) sdpm"),
    ('backward: {"x, z": "f(x)"}', "my_op: backward names 'z', which is not a tensor argument"),
    ('backward: {"x, y": "f(x)", y: "g(y)"}', "my_op: backward gives the gradient of 'y' twice"),
    ("host_inputs: [z]", "my_op: host_inputs names 'z', which is not a Tensor or Tensor. argument "
                         "(arguments: Tensor x, Tensor y, int z)"),
    ("host_inputs: [w]", "my_op: host_inputs names 'w', which is not a Tensor"),
    ("host_inputs: [y, y]", "my_op: host_inputs names an argument twice: .'y', 'y'.$"),
])
def test_the_schema_names_the_op_in_its_errors(tmp_path, entry, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _load(tmp_path, f"- op: my_op\n  args: (Tensor x, Tensor y, int z = 1)\n  {entry}\n")


def test_the_schema_keeps_multi_gradient_rules_as_written(tmp_path):
    (op,) = _load(tmp_path, '- op: my_op\n  args: (Tensor x, Tensor y, Tensor w)\n'
                            '  backward: {"x, w": "f(x, w)", y: "g(y)"}\n  spmd: elementwise\n')
    assert [(r.inputs, r.expr) for r in op.backward_rules] == [(["x", "w"], "f(x, w)"), (["y"], "g(y)")]
    assert op.backward == {"x": "f(x, w)", "w": "f(x, w)", "y": "g(y)"}
    assert op.spmd == "elementwise" and op.amp == "gray" and op.decomp is None


def test_host_inputs_are_declared_in_the_definitions():
    """Note [Host inputs]: the target shapes of dyn_reshape/dyn_expand and of the random ops
    sized at run time (Note [Run-time random shapes]) are read on the host."""
    spec = importlib.util.spec_from_file_location(
        "op_schema", os.path.join(OPS_DIR, "generator", "op_schema.py"))
    op_schema = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(op_schema)
    ops = op_schema.load_ops(sorted(glob.glob(os.path.join(OPS_DIR, "*.yaml"))))
    declared = {op.name: op.host_inputs for op in ops if op.host_inputs}
    assert declared == {name: ["shape"] for name in
                        ("dyn_reshape", "dyn_expand", "dyn_uniform", "dyn_gaussian", "dyn_randint")}
    (op,) = [o for o in ops if o.name == "dyn_reshape"]
    assert [a.name for a in op.device_tensor_args] == ["x"]
