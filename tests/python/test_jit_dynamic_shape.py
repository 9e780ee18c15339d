"""Sizes read from dynamic dims in converted code (jit/_dynamic_shape.py): x.shape[0]
under an InputSpec's None becomes a run-time size (shape64 + dyn_reshape / dyn_expand),
as Paddle's dy2static does, through jit.save, the predictors and ONNX export; and the
ops behind it (oar.shape, oar.numel, dyn_reshape, dyn_expand) on their own."""
import os
import subprocess

import numpy as np
import pytest

import oar
from oar import _C
from oar.static import InputSpec


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def check_saved_model(net, prefix, spec, inputs):
    """jit.save + onnx.export `net` (eval mode), then every input through jit.load, the
    Python predictor and onnxruntime equals eager; returns the loaded layer and predictor."""
    ort = pytest.importorskip("onnxruntime")
    oar.jit.save(net, prefix, input_spec=spec)
    oar.onnx.export(net, prefix, input_spec=spec)
    loaded = oar.jit.load(prefix)
    predictor = oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
    sess = ort.InferenceSession(prefix + ".onnx", providers=["CPUExecutionProvider"])
    for x in inputs + inputs[:1]:   # the first again: nothing a run wrote in place leaks into the next
        ref = net(x).numpy()
        np.testing.assert_allclose(loaded(x).numpy(), ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(predictor.run([x])[0].numpy(), ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0], ref,
                                   rtol=1e-4, atol=1e-5)
    return loaded, predictor


# ------------------------------------------------------------------ the ops, eagerly
@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (), (0, 3)])
def test_shape_and_numel(shape):
    x = oar.zeros(list(shape))
    s = oar.shape(x)
    assert s.dtype == oar.int64 and list(s.shape) == [len(shape)]
    assert s.numpy().tolist() == list(shape)
    n = oar.numel(x)
    assert n.dtype == oar.int64 and n.shape == [] and n.item() == int(np.prod(shape))
    with pytest.raises(TypeError, match="numel"):
        oar.numel(np.ones(3))


@pytest.mark.parametrize("xs, target, dtype", [
    ((2, 3, 4), [4, -1], "int64"),
    ((2, 3, 4), [0, 12], "int32"),       # 0 copies the input's dim (Paddle)
    ((6,), [1, 2, 3], "int64"),
    ((0, 3), [3, 0, -1], "int64"),       # 0-size
    ((2, 3), [6], "int32"),
])
def test_dyn_reshape_matches_numpy(xs, target, dtype):
    x = rand(*xs, seed=len(xs)).astype("float64")
    x.stop_gradient = False
    got = _C.ops._dyn_reshape(x, oar.to_tensor(target, dtype=dtype), [])
    want = [xs[i] if t == 0 and i < len(xs) else t for i, t in enumerate(target)]
    np.testing.assert_array_equal(got.numpy(), x.numpy().reshape(want))
    if got.size:
        w = rand(*got.shape, seed=7).astype("float64")
        (got * w).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), w.numpy().reshape(xs))


@pytest.mark.parametrize("xs, target", [((3, 1), [2, -1, 5]), ((1,), [4]), ((), [2, 3]), ((2, 1), [0, 2, 3])])
def test_dyn_expand_matches_numpy_with_gradient(xs, target):
    x = rand(*xs, seed=3).astype("float64")
    x.stop_gradient = False
    got = _C.ops._dyn_expand(x, oar.to_tensor(target), [])
    want = [d if d != -1 else xs[i - (len(target) - len(xs))] for i, d in enumerate(target)]
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to(x.numpy(), want))
    if got.size:
        # the gradient against central differences
        w = rand(*want, seed=5).astype("float64")
        (got * w).sum().backward()
        eps, base = 1e-6, x.numpy().copy()
        fd = np.zeros_like(base).reshape(-1)
        for i in range(base.size):
            for sgn in (1, -1):
                p = base.copy().reshape(-1)
                p[i] += sgn * eps
                y = np.broadcast_to(p.reshape(base.shape), want)
                fd[i] += sgn * (y * w.numpy()).sum() / (2 * eps)
        np.testing.assert_allclose(x.grad.numpy().reshape(-1), fd, rtol=1e-6, atol=1e-6)


def test_dyn_ops_reject_bad_shapes():
    x = rand(2, 3)
    with pytest.raises(ValueError, match="reshape: argument 'shape' must be 1-D"):
        _C.ops._dyn_reshape(x, oar.to_tensor([[2, 3]]), [])
    with pytest.raises(TypeError, match="reshape: argument 'shape' must be an int32 or int64 tensor, got float32"):
        _C.ops._dyn_reshape(x, oar.to_tensor([2.0, 3.0]), [])
    with pytest.raises(ValueError, match="only one dimension can be -1"):
        _C.ops._dyn_reshape(x, oar.to_tensor([-1, -1]), [])
    with pytest.raises(ValueError, match=r"cannot reshape tensor of shape \[2, 3\]"):
        _C.ops._dyn_reshape(x, oar.to_tensor([4, 2]), [])
    with pytest.raises(ValueError, match="reshape: invalid size -3"):
        _C.ops._dyn_reshape(x, oar.to_tensor([-3, -2]), [])
    with pytest.raises(ValueError, match=r"expand: cannot expand input of shape \[2, 3\]"):
        _C.ops._dyn_expand(x, oar.to_tensor([2, 4]), [])
    with pytest.raises(ValueError, match="expand: -1 is only allowed for existing dims"):
        _C.ops._dyn_expand(x, oar.to_tensor([-1, 2, 3]), [])
    with pytest.raises(ValueError, match="expand: negative size"):
        _C.ops._dyn_expand(x, oar.to_tensor([-4, 3]), [])


# ------------------------------------------------------------------ converted code
SPEC = [InputSpec([None, 3, 4], "float32", "x")]


def reshape_batch(x):
    return x.reshape([x.shape[0], -1])


def unpack_sizes(x):
    b, c, d = x.shape
    return x.reshape([b, c * d]) * 2


def size_arithmetic(x):
    return x.reshape([(x.shape[0] + 1) * 2 - 2, -1, 2])


def zeros_of_batch(x):
    return x + oar.zeros([x.shape[0], 3, 4])


def full_and_ones(x):
    return oar.full([x.shape[0], 2], 1.5) + oar.ones([x.shape[0], 1], "float32")


def expand_batch(x):
    return x[:, :1, :].expand([x.shape[0], 3, 4]) + oar.broadcast_to(x[:, :, :1], [x.shape[0], 3, 4])


def paddle_shape_api(x):
    n = oar.shape(x)[0]
    return x.reshape([n, 12]) / oar.numel(x).astype("float32")


def paddle_shape_static_entry(x):
    return x.reshape([oar.shape(x)[1], -1]).sum(0)   # 3 rows: the IR knows dim 1 is 3


def zeros_like_by_shape(x):
    return oar.zeros(oar.shape(x)) + x


def divide_by_batch(x):
    return x.sum() / x.shape[0]


def branch_on_batch(x):
    if x.shape[0] > 3:
        return x * 2
    return x - 1


@pytest.mark.parametrize("fn, ir", [
    (reshape_batch, "?x12xf32"), (unpack_sizes, "?x12xf32"), (size_arithmetic, "?x3x2xf32"),
    (zeros_of_batch, "?x3x4xf32"), (full_and_ones, "?x2xf32"), (expand_batch, "?x3x4xf32"),
    (paddle_shape_api, "?x12xf32"), (paddle_shape_static_entry, "-> (tensor<3x?xf32>)"),
    (zeros_like_by_shape, "(tensor<f32>, tensor<3xi64>) -> (tensor<?x3x4xf32>)"),
    (divide_by_batch, "pd_op.shape64"), (branch_on_batch, "cf.if"),
])
def test_dynamic_sizes_in_converted_code(fn, ir):
    static = oar.jit.to_static(fn, input_spec=SPEC)
    for b in (2, 5, 1):
        x = rand(b, 3, 4, seed=b)
        np.testing.assert_allclose(static(x).numpy(), fn(x).numpy(), rtol=1e-6, atol=1e-6)
    assert len(static.concrete_programs) == 1   # one program serves every batch size
    program = str(static.main_program)
    assert ir in program, program


def test_static_sizes_stay_python_ints():
    seen = []

    @oar.jit.to_static(input_spec=SPEC)
    def f(x):
        seen.append(x.shape)
        return x.reshape([x.shape[0], x.shape[1] * x.shape[2]])

    f(rand(2, 3, 4))
    assert all(isinstance(s[1], int) and isinstance(s[2], int) for s in seen)
    assert not isinstance(seen[0][0], int)       # the dynamic one is a run-time size
    assert "dyn_reshape" in str(f.main_program)

    @oar.jit.to_static
    def g(x):                                    # no InputSpec: every size is static
        return x.reshape([x.shape[0], -1])

    g(rand(2, 3, 4))
    assert "dyn_" not in str(g.main_program) and "shape64" not in str(g.main_program)


def test_reading_a_dynamic_size_as_a_number_is_an_error():
    @oar.jit.to_static(input_spec=SPEC)
    def f(x):
        return x.reshape([int(x.shape[0]), 12])

    with pytest.raises(oar.jit.Dy2StaticError, match="reads the value of a tensor"):
        f(rand(2, 3, 4))


class FlattenNet(oar.nn.Layer):
    """Paddle-style code that sizes its reshape and a buffer from the batch."""

    def __init__(self):
        super().__init__()
        self.conv = oar.nn.Conv2D(1, 4, 3, padding=1)
        self.fc = oar.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        b = x.shape[0]
        h = oar.nn.functional.relu(self.conv(x)).reshape([b, -1])
        bias = oar.zeros([b, 5]) + 0.5
        return self.fc(h) + bias


def test_saved_model_with_batch_sized_reshape(tmp_path):
    oar.seed(1)
    net = FlattenNet()
    net.eval()
    prefix = str(tmp_path / "flat")
    loaded, _ = check_saved_model(net, prefix, [InputSpec([None, 1, 6, 6], "float32", "x")],
                                  [rand(b, 1, 6, 6, seed=b) for b in (1, 3, 6)])
    assert "?x144xf32" in str(loaded.program)

    # the C++ example program, with no Python in the process
    from test_jit_save_predictor import run_model_binary
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    for b in (2, 4):
        x = rand(b, 1, 6, 6, seed=10 + b).numpy()
        (tmp_path / "in.bin").write_bytes(x.tobytes())
        r = subprocess.run([run_model_binary(), prefix, str(tmp_path / "in.bin"), f"{b},1,6,6",
                            str(tmp_path / "out.bin")], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        out = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype="float32").reshape(b, 5)
        np.testing.assert_allclose(out, net(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_training_the_same_code_equals_eager():
    # training signatures are converted per concrete shape: x.shape[0] is an int there
    oar.seed(4)
    net = FlattenNet()
    static = oar.jit.to_static(net)
    x = rand(3, 1, 6, 6, seed=2)
    static(x).sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    net.clear_gradients()
    FlattenNet.forward(net, x).sum().backward()
    for g, p in zip(grads, net.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ len() and loops over rows
def len_of_batch(x):
    return x * len(x)


def sum_rows(x):
    s = x[0] * 0
    for row in x:
        s = s + row
    return s


def weighted_rows_until_big(x):
    s = x[0] * 0
    for i, row in enumerate(x):
        if row.sum() > 100:
            break
        s = s + row * i
    return s


@pytest.mark.parametrize("fn", [len_of_batch, sum_rows, weighted_rows_until_big])
def test_len_and_loops_over_a_dynamic_first_dim(fn):
    static = oar.jit.to_static(fn, input_spec=SPEC)
    xs = [rand(b, 3, 4, seed=b) for b in (1, 2, 5)]
    big = rand(4, 3, 4, seed=9)
    big[2] = big[2] + 50.0                      # the break fires at row 2
    for x in xs + [big]:
        np.testing.assert_allclose(static(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-5)
    assert len(static.concrete_programs) == 1
    if fn is not len_of_batch:
        assert "cf.while" in str(static.main_program)


def test_loops_over_python_values_and_static_rows_run_as_written():
    @oar.jit.to_static
    def f(x):
        d = {"a": 1, "b": 2}
        s = x * 0
        for k in d:
            s = s + d[k]
        for a, b in [(1, 2), (3, 4)]:
            s = s + a * b
        for v in (i * 2 for i in range(3)):
            s = s + v
        for i, row in enumerate(x):             # a static first dim: unrolled
            s = s + row.sum() * i
            if i == 1:
                break
        assert len(x) == 3
        return s

    x = rand(3, 2)
    np.testing.assert_allclose(f(x).numpy(), f.dygraph_function(x).numpy(), rtol=1e-6)
    assert "cf.while" not in str(f.main_program)


# ------------------------------------------------------------------ lists appended to in converted loops
SEQ = [InputSpec([None, None, 4], "float32", "x")]


def decode_steps(x):
    outs = []
    h = x[:, 0] * 0
    for t in range(x.shape[1]):
        h = oar.tanh(h + x[:, t])
        outs.append(h)
    return oar.stack(outs, axis=1)


def concat_steps(x):
    outs = []
    for t in range(x.shape[1]):
        outs.append(x[:, t] * 2)
    return oar.concat(outs, axis=1) + oar.concat(outs, axis=-1)


def running_sums(x):
    outs = [x[:, 0]]                     # a list with items before the loop
    i = 1
    while i < x.shape[1]:
        outs.append(outs[-1] + x[:, i])  # reads its last item
        i += 1
    return outs[-1] * len(outs) + oar.stack(outs).sum(0)


@pytest.mark.parametrize("fn, ir", [(decode_steps, "?x?x4xf32"), (concat_steps, "?x?xf32"),
                                    (running_sums, "?x4xf32")])
def test_lists_appended_to_in_converted_loops(fn, ir):
    static = oar.jit.to_static(fn, input_spec=SEQ)
    for b, t in ((2, 3), (1, 5), (3, 1)):
        x = rand(b, t, 4, seed=b * 7 + t)
        np.testing.assert_allclose(static(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-6)
    assert len(static.concrete_programs) == 1
    program = str(static.main_program)
    assert "cf.while" in program and "pd_op.append_row" in program
    assert f"-> ()" in program and ir in program.splitlines()[-2], program   # the output keeps static sizes


class Decoder(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.cell = oar.nn.Linear(8, 4)
        self.head = oar.nn.Linear(4, 3)

    def forward(self, x):
        h = x[:, 0] * 0
        outs = []
        for t in range(x.shape[1]):
            h = oar.tanh(self.cell(oar.concat([h, x[:, t]], axis=-1)))
            outs.append(h)
        return self.head(oar.stack(outs, axis=1))


def test_saved_decoder_with_a_list_runs_in_the_predictors_and_onnx(tmp_path):
    oar.seed(3)
    net = Decoder()
    net.eval()
    check_saved_model(net, str(tmp_path / "dec"), SEQ, [rand(b, t, 4, seed=t) for b, t in ((2, 4), (1, 1), (3, 6))])


def test_training_through_a_list_loop_runs_eagerly_or_unrolls():
    # training signatures convert per concrete shape: the range loop over a static size is
    # a Python loop (the list stays a list) and gradients equal eager
    oar.seed(4)
    net = Decoder()
    static = oar.jit.to_static(net)
    x = rand(2, 3, 4, seed=1)
    static(x).sum().backward()
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    net.clear_gradients()
    Decoder.forward(net, x).sum().backward()
    for g, p in zip(grads, net.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_list_misuse_in_a_converted_loop_is_an_error():
    def reassigns(x):
        outs = []
        for t in range(x.shape[1]):
            outs.append(x[:, t])
            outs = [x[:, 0]]
        return outs[0]

    with pytest.raises(oar.jit.Dy2StaticError, match="appended to in this converted loop and also reassigned"):
        oar.jit.to_static(reassigns, input_spec=SEQ)(rand(2, 3, 4))

    def never_appends_first(x):
        outs = []
        for t in range(x.shape[1]):
            if t > 100:
                outs.append(x[:, t])
        return oar.stack(outs)

    with pytest.raises(oar.jit.Dy2StaticError):
        oar.jit.to_static(never_appends_first, input_spec=SEQ)(rand(2, 3, 4))

    def returns_the_list(x):
        outs = []
        for t in range(x.shape[1]):
            outs.append(x[:, t])
        return outs

    with pytest.raises((oar.jit.Dy2StaticError, TypeError)):
        oar.jit.to_static(returns_the_list, input_spec=SEQ)(rand(2, 3, 4))


def _central_difference(f, x, eps=1e-6):
    base = x.copy()
    g = np.zeros(base.size)
    for i in range(base.size):
        for sgn in (1, -1):
            p = base.copy().reshape(-1)
            p[i] += sgn * eps
            g[i] += sgn * f(p.reshape(base.shape)) / (2 * eps)
    return g.reshape(base.shape)


@pytest.mark.parametrize("bs, xs", [((2, 3), (3,)), ((0, 1, 1), (2, 4)), ((0, 3), (3,)), ((1, 0), (0,)), ((3,), ())])
def test_append_row_matches_numpy_with_gradients(bs, xs):
    rng = np.random.default_rng(len(bs) + len(xs))
    b_np, x_np = rng.standard_normal(bs), rng.standard_normal(xs)
    b, x = oar.to_tensor(b_np), oar.to_tensor(x_np)
    b.stop_gradient = x.stop_gradient = False
    out = _C.ops._append_row(b, x)
    want = np.concatenate([b_np, x_np[None]]) if bs[0] else x_np[None]
    np.testing.assert_array_equal(out.numpy(), want)
    w = rng.standard_normal(want.shape)
    (out * oar.to_tensor(w)).sum().backward()
    if x_np.size:
        stacked = lambda v: np.concatenate([b_np, v[None]]) if bs[0] else v[None]  # noqa: E731
        np.testing.assert_allclose(x.grad.numpy(), _central_difference(lambda v: (stacked(v) * w).sum(), x_np),
                                   rtol=1e-6, atol=1e-6)
    if b_np.size:
        np.testing.assert_allclose(b.grad.numpy(), _central_difference(
            lambda v: (np.concatenate([v, x_np[None]]) * w).sum(), b_np), rtol=1e-6, atol=1e-6)
    assert list(b.grad.shape) == list(bs)


def test_append_row_rejects_bad_inputs():
    with pytest.raises(ValueError, match="append_row: buf must have one more dim than x"):
        _C.ops._append_row(oar.zeros([2, 3]), oar.zeros([2, 3]))
    with pytest.raises(ValueError, match=r"append_row: rows of buf \[2, 3\] and x \[4\] differ"):
        _C.ops._append_row(oar.zeros([2, 3]), oar.zeros([4]))


def test_print_tensor_gradient_passes_through():
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((2, 3)))
    x.stop_gradient = False
    w = np.random.default_rng(1).standard_normal((2, 3))
    (_C.ops._print_tensor(x, "", 0) * oar.to_tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w)


class HandWrittenAttention(oar.nn.Layer):
    """Attention as users write it: sizes unpacked from x.shape, a branch on one."""

    def __init__(self, d=16, h=4):
        super().__init__()
        self.h = h
        self.qkv = oar.nn.Linear(d, 3 * d)
        self.o = oar.nn.Linear(d, d)

    def forward(self, x):
        B, L, D = x.shape
        qkv = self.qkv(x).reshape([B, L, 3, self.h, D // self.h]).transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = oar.nn.functional.softmax(q @ k.transpose([0, 1, 3, 2]) / (D // self.h) ** 0.5, axis=-1)
        y = (att @ v).transpose([0, 2, 1, 3]).reshape([B, L, D])
        if L > 1:
            y = y + x
        return self.o(y)


def test_hand_written_attention_with_dynamic_batch_and_length(tmp_path):
    oar.seed(0)
    net = HandWrittenAttention()
    net.eval()
    _, predictor = check_saved_model(net, str(tmp_path / "att"), [InputSpec([None, None, 16], "float32", "x")],
                                     [rand(b, t, 16, seed=b + t) for b, t in ((1, 1), (2, 7), (3, 4))])  # L=1: else
    assert "-> (tensor<?x?x16xf32>)" in str(predictor.program)
