"""oar.compat.nn / nn.functional against NumPy in float64 (finite-difference gradients through
the op harness) and the torch proxy behind oar.enable_compat."""
import math
import subprocess
import sys

import numpy as np
import pytest

import oar
import oar.compat.nn as cnn
import oar.compat.nn.functional as CF
from op_test_utils import OpCase, case_id, check_case, tensor

F64 = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731


def np_softmax(x, dim):
    e = np.exp(x - (x.max(axis=dim, keepdims=True) if x.size else 0))
    return e / e.sum(axis=dim, keepdims=True)


def np_pad(x, pad, mode):
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    return np.pad(x, widths, mode=np_mode)


def np_sdpa(q, k, v, causal=False):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    return np_softmax(s, -1) @ v


CASES = [
    OpCase("compat.nn.functional.linear", CF.linear, lambda x, w, b: x @ w.T + b,
           inputs=[(3, 4), (5, 4), (5,)], shapes=[[(3, 4), (5, 4), (5,)], [(0, 4), (2, 4), (2,)],
                                                  [(2, 3, 4), (5, 4), (5,)]],
           bad_inputs=[((F64(np.ones((2, 3))), F64(np.ones((4, 2))), None), ValueError,
                        "in_features")]),
    OpCase("compat.nn.functional.softmax", lambda x, **kw: CF.softmax(x, **kw), lambda x: np_softmax(x, 0),
           inputs=[(3, 4, 2)], shapes=[[(3, 4, 2)], [(5,)], [(2, 0, 3)]],
           bad_inputs=[((F64([1.0]),), TypeError, "paddle.nn.functional.softmax", {"axis": 0})]),
    OpCase("compat.nn.functional.softmax_2d", lambda x: CF.softmax(x), lambda x: np_softmax(x, 1),
           inputs=[(3, 4)], op="compat.nn.functional.softmax"),
    OpCase("compat.nn.functional.pad", lambda x, **kw: CF.pad(x, [1, 2, 0, 1], **kw),
           lambda x: np_pad(x, [1, 2, 0, 1], "constant"), inputs=[(2, 3, 4)],
           shapes=[[(2, 3, 4)], [(2, 0, 3)]],
           bad_inputs=[((F64(np.ones((2, 3))),), ValueError, "mode", {"mode": "wrap"})]),
    OpCase("compat.nn.functional.pad_reflect", lambda x: CF.pad(x, [2, 1], mode="reflect"),
           lambda x: np_pad(x, [2, 1], "reflect"), inputs=[(2, 5)],
           op="compat.nn.functional.pad",
           bad_inputs=[((F64(np.ones(4)),), ValueError, "at most 0")]),
    OpCase("compat.nn.functional.pad_replicate", lambda x: CF.pad(x, [1, 2, 2, 0], mode="replicate"),
           lambda x: np_pad(x, [1, 2, 2, 0], "replicate"), inputs=[(2, 3, 4, 3)],
           op="compat.nn.functional.pad"),
    OpCase("compat.nn.functional.pad_circular", lambda x: CF.pad(x, [1, 2], mode="circular"),
           lambda x: np_pad(x, [1, 2], "circular"), inputs=[(2, 3, 4)],
           op="compat.nn.functional.pad"),
    OpCase("compat.nn.functional.scaled_dot_product_attention",
           lambda q, k, v: CF.scaled_dot_product_attention(q, k, v), np_sdpa,
           inputs=[(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)],
           bad_inputs=[((F64(np.ones((1, 3, 4))), F64(np.ones((1, 3, 2))), F64(np.ones((1, 3, 4)))),
                        ValueError, "do not match")]),
    OpCase("compat.nn.functional.sdpa_causal",
           lambda q, k, v: CF.scaled_dot_product_attention(q, k, v, is_causal=True),
           lambda q, k, v: np_sdpa(q, k, v, True), inputs=[(1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3)],
           op="compat.nn.functional.scaled_dot_product_attention"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


def test_linear_layer_layout_and_init():
    oar.seed(100)
    lin = cnn.Linear(2, 4)
    assert lin.weight.shape == [4, 2] and lin.bias.shape == [4]
    # The numbers Paddle 3.3.1 prints for this seed (its docstring example).
    np.testing.assert_allclose(lin.weight.numpy()[0], [-0.49191639, 0.28120756], atol=1e-6)
    np.testing.assert_allclose(lin.bias.numpy(), [0.49166456, -0.06108528, -0.14973064,
                                                  0.31168410], atol=1e-6)
    x = oar.arange(6, dtype="float32").reshape([3, 2])
    np.testing.assert_allclose(lin(x).numpy(), x.numpy() @ lin.weight.numpy().T + lin.bias.numpy(),
                               rtol=1e-6)
    assert cnn.Linear(3, 2, bias=False).bias is None
    b = 1 / math.sqrt(300)
    big = cnn.Linear(300, 50)
    assert np.abs(big.bias.numpy()).max() <= b
    with pytest.raises(TypeError, match="paddle.nn.Linear"):
        cnn.Linear(2, 3, bias_attr=False)
    with pytest.raises(ValueError, match="compat.nn.Linear: in_features must be"):
        cnn.Linear(-1, 3)


def test_pool_unfold_softmax_layers():
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6))
    out = cnn.AvgPool2D(2, padding=1)(F64(x)).numpy()
    ref = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])[:, :, :6, :8]
    ref = ref.reshape(1, 2, 3, 2, 4, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(out, ref, rtol=1e-12)  # count_include_pad=True: zeros count
    out = cnn.AvgPool1D(2, padding=1, count_include_pad=False)(F64(x[0])).numpy()
    assert out.shape == (2, 5, 4) and np.isclose(out[0, 0, 0], x[0, 0, 0, 0])
    assert cnn.AvgPool3D(2)(oar.rand([1, 2, 3, 4, 4])).shape == [1, 2, 1, 2, 2]
    assert cnn.AvgPool2d is cnn.AvgPool2D
    with pytest.raises(TypeError, match="paddle.nn.AvgPool2D"):
        cnn.AvgPool2D(2, exclusive=False)
    u = cnn.Unfold(kernel_size=[2, 2])(F64(x))
    assert u.shape == [1, 8, 20]
    np.testing.assert_allclose(u.numpy()[0, :, 0], x[0, :, :2, :2].reshape(-1), rtol=1e-12)
    s = cnn.Softmax()(F64(x[0]))
    np.testing.assert_allclose(s.numpy(), np_softmax(x[0], 0), rtol=1e-12)
    assert CF.softmax(F64(x), -1, dtype="float32").dtype.name == "float32"


def test_multihead_attention_matches_numpy():
    rng = np.random.default_rng(1)
    e, h = 8, 2
    mha = cnn.MultiheadAttention(e, h, batch_first=True)
    mha.eval()
    q, k = rng.standard_normal((2, 3, e)), rng.standard_normal((2, 5, e))
    w, b = mha.in_proj_weight.numpy().astype(np.float64), mha.in_proj_bias.numpy()
    out, weights = mha(oar.to_tensor(q, "float32"), oar.to_tensor(k, "float32"),
                       oar.to_tensor(k, "float32"))
    qp, kp, vp = q @ w[:e].T + b[:e], k @ w[e:2 * e].T + b[e:2 * e], k @ w[2 * e:].T + b[2 * e:]

    def heads(t):
        return t.reshape(t.shape[0], t.shape[1], h, e // h).transpose(0, 2, 1, 3)
    att = np_softmax(heads(qp) @ heads(kp).transpose(0, 1, 3, 2) / math.sqrt(e // h), -1)
    ctx = (att @ heads(vp)).transpose(0, 2, 1, 3).reshape(2, 3, e)
    ref = ctx @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy()
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(weights.numpy(), att.mean(axis=1), rtol=1e-4, atol=1e-6)
    # sequence-first layout, a key padding mask that hides the last key
    mha2 = cnn.MultiheadAttention(e, h)
    kpm = oar.to_tensor(np.array([[False] * 4 + [True]] * 2))
    o2, w2 = mha2(oar.to_tensor(q.transpose(1, 0, 2), "float32"),
                  oar.to_tensor(k.transpose(1, 0, 2), "float32"),
                  oar.to_tensor(k.transpose(1, 0, 2), "float32"), key_padding_mask=kpm)
    assert o2.shape == [3, 2, e] and np.all(w2.numpy()[..., -1] == 0)
    with pytest.raises(ValueError, match="embed_dim 8 is not divisible by num_heads 3"):
        cnn.MultiheadAttention(8, 3)


PROXY = r"""
import sys, oar
oar.enable_compat()
import torch, torch.nn.functional
assert torch.sin is oar.sin and torch.max is oar.compat.max
assert torch.nn.Linear is oar.compat.nn.Linear and torch.nn.ReLU is oar.nn.ReLU
assert torch.nn.functional.pad is oar.compat.nn.functional.pad
oar.disable_compat()
try:
    import torch
    raise SystemExit("torch still imports")
except ModuleNotFoundError:
    pass
with oar.compat.use_torch_proxy_guard():
    import torch
    with oar.compat.use_torch_proxy_guard(enable=False):
        try:
            import torch
            raise SystemExit("guard(enable=False) left torch importable")
        except ModuleNotFoundError:
            pass
    import torch
    assert torch.sin is oar.sin
try:
    import torch
    raise SystemExit("torch importable after the guard")
except ModuleNotFoundError:
    pass
# scoped: only the module 'scoped_mod' sees the proxy
import os, tempfile
d = tempfile.mkdtemp()
open(os.path.join(d, "scoped_mod.py"), "w").write("import torch\nT = torch\n")
sys.path.insert(0, d)
oar.enable_compat(scope={"scoped_mod"})
import scoped_mod
assert scoped_mod.T.sin is oar.sin
try:
    import torch
    raise SystemExit("scope leaked to the main module")
except ModuleNotFoundError:
    pass
oar.disable_compat()
try:
    oar.enable_compat(scope=3)
except TypeError as e:
    assert "enable_torch_proxy: scope" in str(e)
print("ok")
"""


def test_torch_proxy():
    r = subprocess.run([sys.executable, "-c", PROXY], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
