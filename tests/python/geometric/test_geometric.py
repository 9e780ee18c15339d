"""paddle.geometric against float64 NumPy references: segment reductions, message passing
(values, finite-difference gradients, 0-size and broadcast edge features), reindexing,
neighbour sampling, and bad inputs naming the function and argument."""
import numpy as np
import pytest

import oar

G = oar.geometric
RNG = np.random.default_rng(18)


def np_reduce(values, index, rows, op):
    out = np.zeros((rows,) + values.shape[1:])
    for r in range(rows):
        sel = values[index == r]
        if len(sel):
            out[r] = {"sum": sel.sum, "mean": sel.mean, "max": sel.max, "min": sel.min}[op](0)
    return out


def np_message(a, b, op):
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]


def t(a, dtype=None, grad=False):
    x = oar.to_tensor(a, dtype=dtype)
    x.stop_gradient = not grad
    return x


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


SEG = ["segment_sum", "segment_mean", "segment_min", "segment_max"]


@pytest.mark.parametrize("name", SEG)
@pytest.mark.parametrize("shape", [(7, 3), (5,), (6, 2, 2)])
def test_segment_matches_numpy(name, shape):
    data = RNG.standard_normal(shape)
    ids = np.sort(RNG.integers(0, 4, shape[0]))
    ids[-1] = 4  # a gap: segments with no rows are 0
    ids = np.where(ids == 2, 3, ids)
    out = getattr(G, name)(t(data), t(ids, "int64"))
    want = np_reduce(data, ids, ids.max() + 1, name.split("_")[1])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    out32 = getattr(G, name)(t(data, "float32"), t(ids, "int32"))
    assert out32.dtype == oar.float32
    np.testing.assert_allclose(out32.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", SEG)
def test_segment_zero_rows_and_gradient(name):
    empty = getattr(G, name)(t(np.zeros((0, 3))), t(np.zeros(0, np.int64)))
    assert list(empty.shape) == [0, 3]
    data = RNG.standard_normal((6, 3))
    ids = np.array([0, 0, 1, 1, 1, 3])
    cot = RNG.standard_normal((4, 3))
    x = t(data, grad=True)
    (getattr(G, name)(x, t(ids)) * t(cot)).sum().backward()
    op = name.split("_")[1]
    num = numeric_grad(lambda d: (np_reduce(d, ids, 4, op) * cot).sum(), data)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduce_op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("out_size", [None, 0, 6, "tensor"])
def test_send_u_recv(reduce_op, out_size):
    x = RNG.standard_normal((5, 3))
    src, dst = RNG.integers(0, 5, 9), RNG.integers(0, 4, 9)
    rows = 6 if out_size == 6 else 5
    size = oar.to_tensor([6], dtype="int64") if out_size == "tensor" else out_size
    rows = 6 if out_size == "tensor" else rows
    xt = t(x, grad=True)
    out = G.send_u_recv(xt, t(src, "int32"), t(dst, "int64"), reduce_op, out_size=size)
    want = np_reduce(x[src], dst, rows, reduce_op)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    cot = RNG.standard_normal(want.shape)
    (out * t(cot)).sum().backward()
    num = numeric_grad(lambda v: (np_reduce(v[src], dst, rows, reduce_op) * cot).sum(), x)
    np.testing.assert_allclose(xt.grad.numpy(), num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("message_op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("reduce_op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("yshape", [(8, 3), (8,), (8, 1)])
def test_send_ue_recv(message_op, reduce_op, yshape):
    x = RNG.standard_normal((4, 3))
    y = RNG.uniform(0.5, 2.0, yshape)
    src, dst = RNG.integers(0, 4, 8), RNG.integers(0, 4, 8)
    xt, yt = t(x, grad=True), t(y, grad=True)
    out = G.send_ue_recv(xt, yt, t(src), t(dst), message_op, reduce_op)
    y2 = y.reshape(8, -1)

    def ref(xv, yv):
        return np_reduce(np_message(xv[src], yv.reshape(8, -1), message_op), dst, 4, reduce_op)
    np.testing.assert_allclose(out.numpy(), ref(x, y2), rtol=1e-12, atol=1e-12)
    cot = RNG.standard_normal(out.shape)
    (out * t(cot)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: (ref(v, y) * cot).sum(), x),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(yt.grad.numpy(), numeric_grad(lambda v: (ref(x, v) * cot).sum(), y),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("message_op", ["add", "sub", "mul", "div"])
def test_send_uv(message_op):
    x, y = RNG.standard_normal((4, 3)), RNG.uniform(0.5, 2.0, (5, 3))
    src, dst = RNG.integers(0, 4, 7), RNG.integers(0, 5, 7)
    xt, yt = t(x, grad=True), t(y, grad=True)
    out = G.send_uv(xt, yt, t(src), t(dst), message_op)
    np.testing.assert_allclose(out.numpy(), np_message(x[src], y[dst], message_op), rtol=1e-12)
    cot = RNG.standard_normal(out.shape)
    (out * t(cot)).sum().backward()
    num = numeric_grad(lambda v: (np_message(v[src], y[dst], message_op) * cot).sum(), x)
    np.testing.assert_allclose(xt.grad.numpy(), num, rtol=1e-5, atol=1e-6)
    empty = G.send_uv(xt, yt, t(np.zeros(0, np.int64)), t(np.zeros(0, np.int64)), message_op)
    assert list(empty.shape) == [0, 3]


def test_send_u_recv_no_edges():
    out = G.send_u_recv(t(np.ones((3, 2))), t(np.zeros(0, np.int64)), t(np.zeros(0, np.int64)))
    np.testing.assert_array_equal(out.numpy(), np.zeros((3, 2)))


def test_reindex_graph_and_heter():
    x = t([0, 1, 2], "int64")
    nb = t([8, 9, 0, 4, 7, 6, 7], "int64")
    cnt = t([2, 3, 2], "int32")
    src, dst, nodes = G.reindex_graph(x, nb, cnt)
    nodes_np = nodes.numpy()
    np.testing.assert_array_equal(nodes_np[src.numpy()], nb.numpy())  # src indexes out_nodes
    np.testing.assert_array_equal(dst.numpy(), [0, 0, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(nodes_np, [0, 1, 2, 8, 9, 4, 7, 6])
    nb2, cnt2 = t([0, 2, 3, 5, 1], "int64"), t([1, 3, 1], "int32")
    src, dst, nodes = G.reindex_heter_graph(x, [nb, nb2], [cnt, cnt2])
    np.testing.assert_array_equal(nodes.numpy(), [0, 1, 2, 8, 9, 4, 7, 6, 3, 5])
    np.testing.assert_array_equal(nodes.numpy()[src.numpy()], np.r_[nb.numpy(), nb2.numpy()])
    np.testing.assert_array_equal(dst.numpy(), [0, 0, 1, 1, 1, 2, 2, 0, 1, 1, 1, 2])


def _csc(n_nodes=6, n_edges=20):
    dst = np.sort(RNG.integers(0, n_nodes, n_edges))
    row = RNG.integers(0, n_nodes, n_edges)
    colptr = np.r_[0, np.cumsum(np.bincount(dst, minlength=n_nodes))]
    return row, colptr


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("size", [-1, 1, 3])
def test_sample_neighbors_are_neighbors(weighted, size):
    row, colptr = _csc()
    nodes = np.array([0, 3, 5, 2])
    eids = np.arange(len(row)) + 100
    args = (t(row), t(colptr))
    if weighted:
        w = RNG.uniform(0.1, 1.0, len(row))
        res = G.weighted_sample_neighbors(*args, t(w), t(nodes), sample_size=size, eids=t(eids),
                                          return_eids=True)
    else:
        res = G.sample_neighbors(*args, t(nodes), sample_size=size, eids=t(eids), return_eids=True)
    nbrs, cnt, out_eids = (r.numpy() for r in res)
    deg = np.diff(colptr)[nodes]
    want = deg if size == -1 else np.minimum(deg, size)
    np.testing.assert_array_equal(cnt, want)
    off = 0
    for n, c in zip(nodes, cnt):
        e = out_eids[off:off + c] - 100
        assert len(set(e)) == c and all(colptr[n] <= k < colptr[n + 1] for k in e)
        np.testing.assert_array_equal(nbrs[off:off + c], row[e])
        off += c


def test_sample_neighbors_follow_the_seed():
    row, colptr = _csc()
    nodes = t(np.arange(6))
    oar.seed(3)
    a = G.sample_neighbors(t(row), t(colptr), nodes, sample_size=2)[0].numpy()
    oar.seed(3)
    b = G.sample_neighbors(t(row), t(colptr), nodes, sample_size=2)[0].numpy()
    np.testing.assert_array_equal(a, b)


def test_weighted_sampling_prefers_heavy_edges():
    row = np.arange(4)
    colptr = np.array([0, 4])
    w = np.array([1e-6, 1e-6, 1.0, 1.0])
    oar.seed(0)
    out = G.weighted_sample_neighbors(t(row), t(colptr), t(w, "float32"), t([0]), sample_size=2)
    assert sorted(out[0].numpy().tolist()) == [2, 3]


BAD = [
    (lambda: G.segment_sum(t(np.ones((3, 2))), t([0, 1], "int64")), ValueError, "segment_sum"),
    (lambda: G.segment_max(t(np.ones((2, 2))), t([0.0, 1.0])), TypeError, "segment_ids"),
    (lambda: G.segment_mean(t(np.ones((2, 2))), t([-1, 0])), ValueError, "non-negative"),
    (lambda: G.send_u_recv(t(np.ones((3, 2))), t([0, 3]), t([0, 1])), ValueError, "src_index"),
    (lambda: G.send_u_recv(t(np.ones((3, 2))), t([0, 1]), t([0, 5])), ValueError, "dst_index"),
    (lambda: G.send_u_recv(t(np.ones((3, 2))), t([0]), t([0]), "prod"), ValueError, "reduce_op"),
    (lambda: G.send_u_recv(t(np.ones((3, 2))), t([0]), t([0, 1])), ValueError, "same length"),
    (lambda: G.send_u_recv(t(np.ones((3, 2))), t([0]), t([0]), out_size=1.5), TypeError,
     "out_size"),
    (lambda: G.send_ue_recv(t(np.ones((3, 2))), t(np.ones(3)), t([0]), t([0])), ValueError, "'y'"),
    (lambda: G.send_uv(t(np.ones((3, 2))), t(np.ones((3, 2))), t([0]), t([0]), "pow"),
     ValueError, "message_op"),
    (lambda: G.reindex_graph(t([0, 1], "int64"), t([5], "int64"), t([1, 1], "int32")),
     ValueError, "count"),
    (lambda: G.reindex_graph(t([0, 0], "int64"), t([5], "int64"), t([1, 0], "int32")),
     ValueError, "unique"),
    (lambda: G.sample_neighbors(t([0, 1]), t([0, 2]), t([1])), ValueError, "input_nodes"),
    (lambda: G.sample_neighbors(t([0, 1]), t([0, 3]), t([0])), ValueError, "colptr"),
    (lambda: G.sample_neighbors(t([0, 1]), t([0, 2]), t([0]), sample_size=0), ValueError,
     "sample_size"),
    (lambda: G.sample_neighbors(t([0, 1]), t([0, 2]), t([0]), return_eids=True), ValueError,
     "eids"),
    (lambda: G.weighted_sample_neighbors(t([0, 1]), t([0, 2]), t([1.0, -1.0]), t([0])),
     ValueError, "non-negative"),
]


@pytest.mark.parametrize("call,exc,needle", BAD)
def test_bad_inputs_name_the_argument(call, exc, needle):
    with pytest.raises(exc, match=needle):
        call()
