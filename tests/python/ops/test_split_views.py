"""split, split_with_num (chunk) and unbind return views of x, as PyTorch's split and
unbind do and Paddle's stride kernels: each part shares x's memory at its offset, a write
through a part reaches x, and autograd treats an in-place op on a part as on any other
view (Note [Views and in-place ops]). unstack copies, as Paddle's does. Values and bad
inputs are also in the op table (test_manipulation.py)."""
import numpy as np
import pytest

import oar

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "complex64"]


def _array(shape, dtype, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype == "bfloat16":
        return rng.standard_normal(shape).astype("float32")
    return (rng.standard_normal(shape) * 10).astype(dtype)


def _tensor(a, dtype):
    t = oar.to_tensor(a)
    return t.astype("bfloat16") if dtype == "bfloat16" else t


def _values(t):
    return (t.astype("float32") if t.dtype == oar.bfloat16 else t).numpy()


# (name, oar call, NumPy's parts of the same array)
SPLITS = [
    ("split_sections", lambda x, a: oar.split(x, [1, -1, 2], axis=a),
     lambda n, a: np.split(n, [1, n.shape[a] - 2], axis=a)),
    ("split_num", lambda x, a: oar.split(x, 2, axis=a), lambda n, a: np.split(n, 2, axis=a)),
    ("chunk", lambda x, a: oar.chunk(x, 2, axis=a), lambda n, a: np.split(n, 2, axis=a)),
    ("tensor_method", lambda x, a: x.split([3, -1], axis=a),
     lambda n, a: np.split(n, [3], axis=a)),
    ("unbind", lambda x, a: oar.unbind(x, axis=a),
     lambda n, a: [np.take(n, i, axis=a) for i in range(n.shape[a])]),
    ("tensor_unbind", lambda x, a: x.unbind(axis=a),
     lambda n, a: [np.take(n, i, axis=a) for i in range(n.shape[a])]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,fn,ref", SPLITS, ids=[s[0] for s in SPLITS])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_parts_are_views_at_their_offsets(name, fn, ref, axis, dtype):
    rng = np.random.default_rng(3)
    n = _array((4, 6, 4), dtype, rng)
    x = _tensor(n, dtype)
    parts = fn(x, axis)
    want = ref(_values(x), axis)  # bfloat16: x's rounded values
    assert len(parts) == len(want)
    item = x.element_size()
    a = axis % 3
    start = 0
    strides = [24, 4, 1]
    for p, w in zip(parts, want):
        assert p.shape == list(w.shape) and p.dtype == x.dtype
        got = _values(p)
        np.testing.assert_array_equal(got, w.astype(got.dtype))
        # the part starts `start` rows along the axis into x's own memory
        assert p.data_ptr() == x.data_ptr() + start * strides[a] * item
        start += 1 if w.ndim < 3 else w.shape[a]


def test_writes_through_a_part_reach_x_and_back():
    x = oar.to_tensor(np.arange(24.0).reshape(2, 3, 4))
    q, k = x.split(2, axis=-1)
    q.fill_(-1.0)
    assert not q.is_contiguous()
    np.testing.assert_array_equal(x.numpy()[..., :2], -1.0)
    np.testing.assert_array_equal(x.numpy()[..., 2:], np.arange(24.0).reshape(2, 3, 4)[..., 2:])
    x.add_(oar.ones([2, 3, 4]))  # and a write into x shows in the parts
    np.testing.assert_array_equal(q.numpy(), 0.0)
    r0, r1 = oar.unbind(x, axis=0)
    r1[1] = 100.0
    assert x.numpy()[1, 1].tolist() == [100.0] * 4


def test_parts_of_strided_and_offset_tensors():
    base = oar.to_tensor(np.arange(60.0).reshape(3, 4, 5) / 30.0)
    xt = base.transpose([2, 0, 1])[1:]  # [4, 3, 4]: no unit stride along the split axis
    want = base.numpy().transpose(2, 0, 1)[1:]
    for axis in range(3):
        parts = oar.split(xt, 2, axis=axis) if xt.shape[axis] % 2 == 0 else oar.split(xt, [1, -1], axis=axis)
        got = np.concatenate([p.numpy() for p in parts], axis=axis)
        np.testing.assert_array_equal(got, want)
    for i, p in enumerate(oar.unbind(xt, axis=1)):
        np.testing.assert_array_equal(p.numpy(), want[:, i])
    # ops read the strided parts correctly
    q, k = oar.split(xt, 2, axis=2)
    np.testing.assert_allclose(oar.matmul(q, k, transpose_y=True).numpy(),
                               want[..., :2] @ want[..., 2:].transpose(0, 2, 1))
    np.testing.assert_allclose((q * k + 1.0).exp().sum(axis=1).numpy(),
                               np.exp(want[..., :2] * want[..., 2:] + 1.0).sum(axis=1), rtol=1e-12)


def test_unstack_copies_as_paddles_does():
    x = oar.to_tensor(np.arange(6.0).reshape(2, 3))
    parts = oar.unstack(x, axis=1)
    np.testing.assert_array_equal(np.stack([p.numpy() for p in parts], 1), x.numpy())
    parts[0].fill_(-1.0)
    assert x.numpy()[:, 0].tolist() == [0.0, 3.0]
    assert all(p.is_contiguous() for p in parts)


def test_zero_size_parts():
    x = oar.to_tensor(np.zeros((0, 5), "float32"))
    parts = oar.split(x, [2, 3], axis=1)
    assert [p.shape for p in parts] == [[0, 2], [0, 3]]
    y = oar.to_tensor(np.arange(10.0).reshape(2, 5))
    a, b, c = oar.split(y, [0, 5, 0], axis=1)
    assert a.shape == [2, 0] and c.shape == [2, 0]
    np.testing.assert_array_equal(b.numpy(), y.numpy())
    assert oar.unbind(oar.zeros([0, 3]), axis=0) == []


def test_bad_inputs_name_the_op():
    x = oar.to_tensor(np.arange(10.0).reshape(2, 5))
    with pytest.raises(ValueError, match=r"split.*sum to 4 but axis 1 has size 5"):
        oar.split(x, [2, 2], axis=1)
    with pytest.raises(ValueError, match="cannot be split into 3 equal sections"):
        oar.split(x, 3, axis=1)
    with pytest.raises(ValueError, match=r"section sizes must be >= 0"):
        oar.split(x, [-2, 7], axis=1)
    with pytest.raises(IndexError, match="split"):
        oar.split(x, 2, axis=2)
    with pytest.raises(ValueError, match=r"unstack: num \(3\) must equal the size of axis 0 \(2\)"):
        oar.unstack(x, axis=0, num=3)
    with pytest.raises(IndexError, match="unbind"):
        oar.unbind(x, axis=-3)
    with pytest.raises(ValueError, match="unbind: x must have rank >= 1"):
        oar._C.ops._unbind(oar.to_tensor(1.0), 0)
    with pytest.raises(ValueError, match="rank >= 1"):
        oar.split(oar.to_tensor(1.0), 1)


def test_in_place_on_a_part_of_a_leaf_is_refused():
    x = oar.ones([2, 4])
    x.stop_gradient = False
    a, b = x.split(2, axis=1)
    with pytest.raises(RuntimeError, match="view of a leaf tensor"):
        a.add_(oar.ones([2, 2]))
    with oar.no_grad():
        a.add_(oar.ones([2, 2]))  # an update outside autograd is allowed, and reaches x
    np.testing.assert_array_equal(x.numpy(), [[2, 2, 1, 1]] * 2)


def _fd(f, x0, eps=1e-6):
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(oar.to_tensor(xp)).item() - f(oar.to_tensor(xm)).item()) / (2 * eps)
    return g


@pytest.mark.parametrize("case", ["split_write", "unbind_write", "parts_read_after_base_write", "chunk_gates"])
def test_gradients_through_written_parts_match_finite_differences(case):
    def f(x):
        y = x * 1.3 + 0.1
        if case == "split_write":
            a, b = y.split([1, 3], axis=1)
            a.exp_()
            b.multiply_(a)  # b reads a after a's write
            return (y * y).sum() + b.sin().sum()
        if case == "unbind_write":
            r0, r1, r2 = oar.unbind(y, axis=0)
            r1.tanh_()
            r2.add_(r0.tanh() * 2.0)  # tanh saves its output: the write leaves it valid
            return (y.exp() * y).sum()
        if case == "parts_read_after_base_write":
            a, b = oar.chunk(y, 2, axis=1)
            y.multiply_(x)  # the parts are remade from the written base
            return (a * b).sum() + (a * a).sum()
        i, f_, g, o = oar.chunk(y, 4, axis=-1)  # an LSTM cell's gates
        c = oar.nn.functional.sigmoid(f_) * 0.5 + oar.nn.functional.sigmoid(i) * oar.tanh(g)
        return (oar.nn.functional.sigmoid(o) * oar.tanh(c)).sum()

    x0 = np.random.default_rng(5).uniform(0.2, 0.8, (3, 4))
    x = oar.to_tensor(x0, stop_gradient=False)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), _fd(f, x0), rtol=1e-5, atol=1e-6)


def test_gradients_into_leaves_are_dense_and_separate():
    """The gradient of a concat reaches each input as a part of one buffer: each .grad is
    its own contiguous tensor, so an optimizer's in-place update of one never moves another."""
    ra, rb = np.random.default_rng(0).standard_normal((2, 3, 4))
    a = oar.to_tensor(ra, stop_gradient=False)
    b = oar.to_tensor(rb, stop_gradient=False)
    w = oar.to_tensor(np.arange(24.0).reshape(8, 3))
    (oar.concat([a, b], axis=1) @ w).sum().backward()
    gw = np.arange(24.0).reshape(8, 3).sum(1)
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(gw[:4], (3, 4)))
    np.testing.assert_allclose(b.grad.numpy(), np.broadcast_to(gw[4:], (3, 4)))
    assert a.grad.is_contiguous() and b.grad.is_contiguous()
    opt = oar.optimizer.SGD(learning_rate=0.5, parameters=[a, b])
    opt.step()
    opt.clear_grad()
    np.testing.assert_allclose(a.numpy(), ra - 0.5 * gw[:4])
    np.testing.assert_allclose(b.numpy(), rb - 0.5 * gw[4:])
    # b needs no gradient: a's part is then the only holder of the concat's gradient
    # buffer, and still becomes a dense .grad of its own size
    a.clear_gradient(set_to_zero=False)
    b.stop_gradient = True
    (oar.concat([a, b], axis=1) @ w).sum().backward()
    assert a.grad.is_contiguous() and a.grad.strides == [4, 1]
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(gw[:4], (3, 4)))


def test_split_in_to_static_and_the_predictor(tmp_path):
    class Attn(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.qkv = oar.nn.Linear(8, 24)

        def forward(self, x):
            q, k, v = self.qkv(x).split(3, axis=-1)
            s = oar.nn.functional.softmax(oar.matmul(q, k, transpose_y=True), axis=-1)
            h0, h1 = oar.unbind(oar.matmul(s, v), axis=0)
            return h0 - h1

    oar.seed(1)
    m = Attn()
    x = oar.to_tensor(np.random.default_rng(2).standard_normal((2, 5, 8)).astype("float32"))
    eager = m(x).numpy()
    static = oar.jit.to_static(m, input_spec=[oar.static.InputSpec([2, 5, 8], "float32")])
    np.testing.assert_allclose(static(x).numpy(), eager, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "attn")
    oar.jit.save(static, path)
    loaded = oar.jit.load(path)
    np.testing.assert_allclose(loaded(x).numpy(), eager, rtol=1e-5, atol=1e-6)
