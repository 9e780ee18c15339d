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
from op_test_utils import OpCase, case_id, check_bad_inputs, check_forward, check_grad


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


def _reshape_np(x, target):
    return x.reshape([x.shape[i] if t == 0 else t for i, t in enumerate(target)])


def _expand_np(x, target):
    lead = len(target) - x.ndim
    return np.broadcast_to(x, [x.shape[i - lead] if t == -1 else t for i, t in enumerate(target)])


def _append_row_np(buf, x):
    return np.concatenate([buf, x[None]]) if buf.shape[0] else x[None]


def _dyn(op, dtype="int64"):
    """op(x, shape tensor) with the shape given as a list (or a tensor, as is)."""
    def call(x, target):
        t = target if isinstance(target, oar.Tensor) else oar.to_tensor(target, dtype=dtype)
        return getattr(_C.ops, op)(x, t, [])
    return call


_REFUSED = [  # (target, exception, message) of dyn_reshape on [2, 3]
    ([[2, 3]], ValueError, "argument 'shape' must be 1-D"), ([-1, -1], ValueError, "only one dimension can be -1"),
    ([4, 2], ValueError, "cannot reshape tensor of shape [2, 3]"), ([-3, -2], ValueError, "invalid size -3"),
]

# The ops behind run-time sizes, on the op harness (op_test_utils): float64 NumPy
# references, central differences, bad inputs naming the op.
CASES = [
    OpCase("dyn_reshape", _dyn("_dyn_reshape"), _reshape_np, inputs=[(2, 3, 4)], attrs={"target": [4, -1]},
           op="reshape",
           bad_inputs=[((lambda: (rand(2, 3),)), e, m, {"target": t}) for t, e, m in _REFUSED]
           + [((lambda: (rand(2, 3),)), TypeError, "must be an int32 or int64 tensor, got float32",
               {"target": oar.to_tensor([2.0, 3.0])})]),
    OpCase("dyn_reshape[copy dim, int32]", _dyn("_dyn_reshape", "int32"), _reshape_np, inputs=[(2, 3, 4)],
           attrs={"target": [0, 12]}, op="reshape"),
    OpCase("dyn_reshape[0-size]", _dyn("_dyn_reshape"), _reshape_np, inputs=[(0, 3)], attrs={"target": [3, 0, -1]},
           op="reshape"),
    OpCase("dyn_expand", _dyn("_dyn_expand"), _expand_np, inputs=[(3, 1)], attrs={"target": [2, -1, 5]}, op="expand",
           bad_inputs=[((lambda: (rand(2, 3),)), ValueError, "cannot expand input of shape [2, 3]", {"target": [2, 4]}),
                       ((lambda: (rand(2, 3),)), ValueError, "-1 is only allowed for existing dims",
                        {"target": [-1, 2, 3]}),
                       ((lambda: (rand(2, 3),)), ValueError, "negative size", {"target": [-4, 3]})]),
    OpCase("dyn_expand[0-D]", _dyn("_dyn_expand"), _expand_np, inputs=[()], attrs={"target": [2, 3]}, op="expand"),
    OpCase("append_row", _C.ops._append_row, _append_row_np, inputs=[(2, 3), (3,)],
           bad_inputs=[((lambda: (rand(2, 3), rand(2, 3))), ValueError, "buf must have one more dim than x"),
                       ((lambda: (rand(2, 3), rand(4))), ValueError, "rows of buf [2, 3] and x [4] differ")]),
    OpCase("append_row[empty buffer of other sizes]", _C.ops._append_row, _append_row_np, inputs=[(0, 1, 1), (2, 4)],
           op="append_row"),
    OpCase("append_row[0-D rows]", _C.ops._append_row, _append_row_np, inputs=[(3,), ()], op="append_row"),
    OpCase("print_tensor", lambda x: _C.ops._print_tensor(x, "", 0), lambda x: x, inputs=[(2, 3)]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


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
    assert "-> ()" in program and ir in program.splitlines()[-2], program   # the output keeps static sizes


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
