"""Python compositions on a device tensor while the current device is the CPU: the
constants and random draws they make must land on the operand's place. Each of these
raised a mixed-place error on sample:0 ("argument 'y' is on cpu but the op runs on
sample:0") before its constants and draws took the operand's place."""
import numpy as np
import pytest

import oar
from oar import nn

DEV = "sample:0"


def pair(a):
    return oar.to_tensor(a), oar.to_tensor(a, place=DEV)


DETERMINISTIC = {
    "median": lambda t: oar.median(t),
    "median axis": lambda t: oar.median(t, axis=1),
    "median min": lambda t: oar.median(t, axis=1, mode="min")[0],
    "nanmedian": lambda t: oar.nanmedian(t, axis=-1),
    "quantile": lambda t: oar.quantile(t, [0.25, 0.5], axis=0),
    "nanquantile": lambda t: oar.nanquantile(t, 0.3, axis=1),
    "lerp, float weight": lambda t: oar.lerp(t, t * 2.0, 0.25),
    "cov": lambda t: oar.linalg.cov(t),
    "fft padded": lambda t: oar.fft.fft(t, n=8).abs(),
    "pdist": lambda t: oar.pdist(t),
    "vander": lambda t: oar.vander(t[0], 4),
    "one_hot": lambda t: nn.functional.one_hot((t.abs() * 2).astype("int64"), 8),
    "sequence_mask": lambda t: nn.functional.sequence_mask((t.abs() * 3).astype("int64"), 7),
    "multiplex": lambda t: oar.multiplex([t, t * 2.0], (t[:, :1] > 0).astype("int32")),
    "rrelu, eval": lambda t: nn.functional.rrelu(t, training=False),
    # compositions whose index tensors and constants were made on the current device
    "hinge_embedding_loss": lambda t: nn.functional.hinge_embedding_loss(t, t.sign()),
    "affine_grid": lambda t: nn.functional.affine_grid(t[:2].reshape([2, 2, 3]), [2, 1, 3, 4]),
    "temporal_shift": lambda t: nn.functional.temporal_shift(t.reshape([4, 6, 1, 1]), 2),
    "fractional_max_pool2d": lambda t: nn.functional.fractional_max_pool2d(
        t.reshape([1, 1, 4, 6]), 2, random_u=0.3, return_mask=True)[1],
    "max_unpool2d": lambda t: nn.functional.max_unpool2d(
        *nn.functional.max_pool2d(t.reshape([1, 1, 4, 6]), 2, 2, return_mask=True), 2, 2),
    "nll_loss, weight": lambda t: nn.functional.nll_loss(
        nn.functional.log_softmax(t), _ints(t[:, 0], 2).clip(0, 5), weight=t[0].abs()),
    "ctc_loss": lambda t: nn.functional.ctc_loss(
        t.reshape([4, 2, 3]), _on(t, [[1, 2], [2, 0]], "int32"), _on(t, [4, 3]), _on(t, [2, 1])),
    "rnnt_loss": lambda t: nn.functional.rnnt_loss(
        t.reshape([1, 2, 3, 4]), _on(t, [[1, 3]], "int32"), _on(t, [2], "int32"),
        _on(t, [2], "int32")),
    "class_center_sample": lambda t: nn.functional.class_center_sample(_on(t, [1, 3, 3, 5]), 8, 3)[0],
    "edit_distance": lambda t: nn.functional.loss.edit_distance(_ints(t, 3), _ints(t.flip([1]), 3))[1],
    "embedding, padding_idx": lambda t: nn.functional.embedding(_ints(t, 2).clip(0, 3), t, padding_idx=0),
    "cummax": lambda t: oar.cummax(t, axis=1)[1],
    "cummin": lambda t: oar.cummin(t)[0],
    "histogramdd": lambda t: oar.histogramdd(t[:, :2], bins=3, density=True)[0],
    "nextafter": lambda t: oar.nextafter(t, t * 2.0),
    "repeat_interleave": lambda t: oar.repeat_interleave(t, 2, axis=1),
    "scatter_nd": lambda t: oar.scatter_nd(_on(t, [[1], [3]]), t[:2], [5, 6]),
    "put_along_axis, number": lambda t: oar.put_along_axis(t, _on(t, [[0], [1], [2], [3]]), 2.0, 1),
    "diagonal_scatter": lambda t: oar.diagonal_scatter(t, t[0, :4]),
    "fill_diagonal_": lambda t: t.clone().fill_diagonal_(2.0),
    "diag, padding_value": lambda t: oar.diag(t[0], padding_value=7.0),
    "masked_fill": lambda t: oar.masked_fill(t, t > 0, 1.5),
    "index_fill": lambda t: oar.index_fill(t, _on(t, [0, 2]), 1, 3.0),
    "take, wrap": lambda t: oar.take(t, _on(t, [[-1, 30]]), mode="wrap"),
    "block_diag": lambda t: oar.block_diag([t[:2, :2], t[2:, 3:]]),
    "combinations": lambda t: oar.combinations(t[0], 2),
    "ldexp": lambda t: oar.ldexp(t, _ints(t, 3)),
    "bitwise_and": lambda t: oar.bitwise_and(_ints(t, 10), _ints(t, 10) * 3 + 1),
    "bitwise_not": lambda t: oar.bitwise_not(_ints(t, 10)),
    "bitwise_left_shift": lambda t: oar.bitwise_left_shift(_ints(t, 10), _ints(t, 2)),
    "bitwise_right_shift, logical": lambda t: oar.bitwise_right_shift(_ints(t, 10), _ints(t, 2),
                                                                      is_arithmetic=False),
    "isin, assume_unique": lambda t: oar.isin(t, t.flatten()[:20], assume_unique=True),
    "equal_all, other shape": lambda t: oar.equal_all(t, t[:2]),
    "vander, no column": lambda t: oar.vander(t[0], 0),
    "lu_unpack": lambda t: (lambda p, lo, up: p @ lo @ up)(
        *oar.linalg.lu_unpack(*oar.linalg.lu(t[:, :4]))),
    "lu infos": lambda t: oar.linalg.lu(t[:, :4], get_infos=True)[2],
    "matrix_exp": lambda t: oar.linalg.matrix_exp(t[:, :4] * 0.3),
    "householder_product": lambda t: oar.linalg.householder_product(t.T, t[0, :2]),
    "einsum, empty": lambda t: oar.einsum("ij,jk->ik", t[:, :0], t[:0, :]),
    "pinv, empty": lambda t: oar.linalg.pinv(t[:, :0]),
    "lstsq residuals": lambda t: oar.linalg.lstsq(t, t[:, :2])[1],
    "lstsq, empty": lambda t: oar.linalg.lstsq(t[:, :0], t[:, :2])[0],
    "matrix_power 0": lambda t: oar.linalg.matrix_power(t[:, :4], 0),
    "matrix_rank tol": lambda t: oar.linalg.matrix_rank(t, tol=0.5),
    "matrix_rank atol": lambda t: oar.linalg.matrix_rank(t, atol=0.5),
    "matrix_rank, empty": lambda t: oar.linalg.matrix_rank(t[:, :0]),
    "vector_norm, p=0": lambda t: oar.linalg.vector_norm(t, 0),
    "eig": lambda t: oar.linalg.eig(t[:, :4])[1],
    "eigvals": lambda t: oar.linalg.eigvals(t[:, :4]),
    # signal: frame indices, padding and the default window were made on the current device
    "frame": lambda t: oar.signal.frame(t, 3, 2),
    "overlap_add": lambda t: oar.signal.overlap_add(t, 2),
    "stft": lambda t: oar.signal.stft(t, 4, pad_mode="constant").abs(),
    "istft": lambda t: oar.signal.istft(oar.signal.stft(t, 4), 4, length=7),
    # indexing: list, array and int indices and list values became tensors on the current device
    "getitem, list": lambda t: t[[0, 2]],
    "getitem, int and list": lambda t: t[1, [0, 2]],
    "getitem, bool array": lambda t: t[np.array([True, False, True, False])],
    "setitem, list": lambda t: _assigned(t, [0, 2], 1.5),
    "setitem, two lists": lambda t: _assigned(t, ([[0], [1]], [2, 3]), 9.0),
    "setitem, mask": lambda t: _assigned(t, t > 0, 0.0),
    "setitem, list value": lambda t: _assigned(t, (slice(1, 3),), [1.0, 2, 3, 4, 5, 6], grad=True),
    # geometric and text: zeros and numpy-built results were made on the current device
    "segment_sum": lambda t: oar.geometric.segment_sum(t, _on(t, [0, 0, 1, 3])),
    "segment_max, empty": lambda t: oar.geometric.segment_max(t[:0], _on(t, [])),
    "reindex_graph": lambda t: oar.geometric.reindex_graph(
        _on(t, [0, 1, 2]), _on(t, [8, 9, 0, 4, 7, 6, 7]), _on(t, [2, 3, 2], "int32"))[0],
    "sample_neighbors": lambda t: oar.geometric.sample_neighbors(
        _on(t, [3, 7, 0, 9, 1, 4, 2]), _on(t, [0, 2, 4, 5, 6, 7]), _on(t, [0, 3, 1]))[0],
    "viterbi_decode": lambda t: oar.text.viterbi_decode(t.reshape([2, 2, 6]), t.T @ t, _on(t, [2, 1]))[1],
    "ViterbiDecoder": lambda t: oar.text.ViterbiDecoder(t.T @ t, False)(t.reshape([2, 2, 6]), _on(t, [2, 1]))[0],
    # incubate: autograd's seeds and zero gradients, BFGS's identity and the results' holders
    "incubate vjp, unused input": lambda t: oar.incubate.autograd.vjp(lambda a, b: a * a, [t, t * 2.0])[1][1],
    "incubate Jacobian": lambda t: oar.incubate.autograd.Jacobian(lambda a: a * a.sum(), t[0])[:],
    "incubate shuffle_batch, seed": lambda t: oar.incubate.layers.nn.shuffle_batch(t, seed=3),
    "incubate minimize_bfgs": lambda t: oar.incubate.optimizer.functional.minimize_bfgs(
        lambda a: ((a - 1.0) ** 2).sum(), t[0], dtype="float64")[5],
    "incubate minimize_lbfgs": lambda t: oar.incubate.optimizer.functional.minimize_lbfgs(
        lambda a: ((a - 1.0) ** 2).sum(), t[0], dtype="float64")[1],
    # attention's causal mask and -inf fill, on the composite path (a mask with a gradient)
    "scaled_dot_product_attention, causal": lambda t: nn.functional.scaled_dot_product_attention(
        t.reshape([1, 4, 2, 3]), t.reshape([1, 4, 2, 3]), t.reshape([1, 4, 2, 3]),
        _grad_mask(t[:, :4].reshape([1, 1, 4, 4])), is_causal=True),
    "flash_attention, causal softmax": lambda t: nn.functional.flash_attention.flash_attention(
        t.reshape([1, 4, 2, 3]), t.reshape([1, 4, 2, 3]), t.reshape([1, 4, 2, 3]), causal=True,
        return_softmax=True)[1],
    # quantization: the abs max of an empty input
    "FakeQuantAbsMax, empty": lambda t: nn.quant.quant_layers.FakeQuantAbsMax()(t[:0]),
    "AbsmaxObserver, empty": lambda t: (lambda o: (o(t[:0]), o.scales())[1])(
        oar.quantization.observers.abs_max.AbsmaxObserverLayer(None)),
    # sparse: the indices (NumPy-computed) and zeros were made on the current device
    "sparse_coo_tensor": lambda t: oar.sparse.sparse_coo_tensor(_on(t, [[0, 1, 3], [1, 2, 5]]), t[0, :3],
                                                                [4, 6]).to_dense(),
    "sparse_csr_tensor": lambda t: oar.sparse.sparse_csr_tensor(_on(t, [0, 1, 3]), _on(t, [1, 0, 2]), t[0, :3],
                                                                [2, 3]).to_dense(),
    "sparse add": lambda t: oar.sparse.add(nn.functional.relu(t).to_sparse_coo(2), nn.functional.relu(t).to_sparse_coo(2)).to_dense(),
    "sparse matmul, csr": lambda t: oar.sparse.matmul(nn.functional.relu(t).to_sparse_csr(), t.T),
    "sparse sum, keepdim": lambda t: oar.sparse.sum(nn.functional.relu(t).to_sparse_coo(2), keepdim=True).to_dense(),
    "sparse transpose": lambda t: oar.sparse.transpose(nn.functional.relu(t).to_sparse_coo(2), [1, 0]).to_dense(),
    "sparse softmax": lambda t: oar.sparse.nn.functional.softmax(nn.functional.relu(t).to_sparse_csr()).to_dense(),
    "sparse conv3d": lambda t: oar.sparse.nn.functional.conv3d(
        nn.functional.relu(t).reshape([1, 2, 2, 6, 1]).to_sparse_coo(4), t[:2, :3].reshape([1, 1, 3, 1, 2]), padding=1).to_dense(),
    "sparse max_pool3d": lambda t: oar.sparse.nn.functional.max_pool3d(
        nn.functional.relu(t).reshape([1, 2, 2, 6, 1]).to_sparse_coo(4), 2, 2).to_dense(),
}


def _on(t, values, dtype="int64"):
    """An index tensor beside t."""
    return oar.to_tensor(values, dtype, t.place)


def _ints(t, scale):
    """Small non-negative integers made from t's values, on t's place."""
    return (t.abs() * scale).astype("int64")


def _grad_mask(t):
    """t * 0 as a float mask that needs a gradient."""
    t = t * 0.0
    t.stop_gradient = False
    return t


def _assigned(t, index, value, grad=False):
    """t[index] = value on a copy of t (through autograd's slice_scatter_ when grad)."""
    t = t.clone()
    if grad:
        t.stop_gradient = False
        t = t * 1.0
    t[index] = value
    return t


@pytest.mark.parametrize("name", list(DETERMINISTIC), ids=list(DETERMINISTIC))
def test_compositions_follow_their_operand(name, on_cpu):
    a = np.random.default_rng(0).standard_normal((4, 6))
    a[1, 2] = np.nan if "nan" in name else a[1, 2]
    cpu, dev = pair(a)
    want, got = DETERMINISTIC[name](cpu), DETERMINISTIC[name](dev)
    assert got.place.device_str() == DEV, name
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


RANDOM = {  # (draw, check of the values)
    "bernoulli": (lambda t: oar.bernoulli(t), lambda v: set(np.unique(v)) <= {0.0, 1.0}),
    "bernoulli p": (lambda t: oar.bernoulli(t, p=0.5), lambda v: set(np.unique(v)) <= {0.0, 1.0}),
    "multinomial": (lambda t: oar.multinomial(t[0], 3), lambda v: ((0 <= v) & (v < 6)).all() and len(set(v)) == 3),
    "multinomial replacement": (lambda t: oar.multinomial(t, 5, replacement=True),
                                lambda v: v.shape == (4, 5) and ((0 <= v) & (v < 6)).all()),
    "poisson small": (lambda t: oar.poisson(t), lambda v: (v >= 0).all() and (v == np.floor(v)).all()),
    "poisson large": (lambda t: oar.poisson(t * 40.0), lambda v: (v >= 0).all() and (v == np.floor(v)).all()),
    "standard_gamma": (lambda t: oar.standard_gamma(t + 0.5), lambda v: (v > 0).all()),
    "binomial": (lambda t: oar.binomial((t * 50).floor() + 30, t * 0.4 + 0.1),
                 lambda v: (v >= 0).all() and (v == np.floor(v)).all()),
    "normal, tensor mean": (lambda t: oar.normal(t, 1.0), lambda v: np.isfinite(v).all()),
    "rand_like": (lambda t: oar.rand_like(t), lambda v: ((0 <= v) & (v < 1)).all()),
    "randn_like": (lambda t: oar.randn_like(t), lambda v: np.isfinite(v).all()),
    "randint_like": (lambda t: oar.randint_like(t, 3, 7), lambda v: ((3 <= v) & (v < 7)).all()),
    "dropout": (lambda t: nn.functional.dropout(t, 0.5), lambda v: v.shape == (4, 6)),
    "dropout along an axis": (lambda t: nn.functional.dropout(t, 0.5, axis=1), lambda v: v.shape == (4, 6)),
    "dropout2d": (lambda t: nn.functional.dropout2d(t.reshape([1, 4, 2, 3])), lambda v: v.shape == (1, 4, 2, 3)),
    "alpha_dropout": (lambda t: nn.functional.alpha_dropout(t, 0.3), lambda v: np.isfinite(v).all()),
    "feature_alpha_dropout": (lambda t: nn.functional.feature_alpha_dropout(t.reshape([2, 2, 6]), 0.3),
                              lambda v: np.isfinite(v).all()),
    "gumbel_softmax": (lambda t: nn.functional.gumbel_softmax(t), lambda v: np.allclose(v.sum(-1), 1.0)),
    "rrelu": (lambda t: nn.functional.rrelu(t - 0.5), lambda v: np.isfinite(v).all()),
    "Dropout layer": (lambda t: nn.Dropout(0.2)(t), lambda v: v.shape == (4, 6)),
    "geometric_, tensor probs": (lambda t: t.clone().geometric_(t), lambda v: (v >= 0).all()),
    "svd_lowrank": (lambda t: oar.linalg.svd_lowrank(t, q=2)[1], lambda v: (v > 0).all()),
    "incubate shuffle_batch": (lambda t: oar.incubate.layers.nn.shuffle_batch(t),
                               lambda v: v.shape == (4, 6)),
    "scaled_dot_product_attention, dropout": (
        lambda t: nn.functional.scaled_dot_product_attention(
            t.reshape([1, 4, 2, 3]), t.reshape([1, 4, 2, 3]), t.reshape([1, 4, 2, 3]),
            t[:, :4].reshape([1, 1, 4, 4]) > 0.1, 0.5, is_causal=True), lambda v: np.isfinite(v).all()),
}


@pytest.mark.parametrize("name", list(RANDOM), ids=list(RANDOM))
def test_random_draws_land_beside_their_operand(name, on_cpu):
    probs = np.random.default_rng(1).uniform(0.05, 0.95, (4, 6))
    draw, ok = RANDOM[name]
    for t in pair(probs):
        got = draw(t)
        assert got.place == t.place, (name, got.place, t.place)
        assert ok(got.numpy()), (name, got.numpy())


def test_like_draws_take_a_device_argument(on_cpu):
    _, dev = pair(np.zeros((2, 3)))
    assert oar.rand_like(dev, device="cpu").place.is_cpu_place()
    assert oar.randn_like(dev.cpu(), device=DEV).place.device_str() == DEV
    with pytest.raises(ValueError, match="rand_like"):
        oar.rand_like(dev, device="nodevice:0")


def test_rnn_and_attention_cache_on_the_device(on_cpu):
    oar.seed(2)
    lstm = nn.LSTM(4, 5, direction="bidirect")
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype("float32")
    want, _ = lstm(oar.to_tensor(x))
    lstm.to(DEV)
    got, _ = lstm(oar.to_tensor(x, place=DEV))
    assert got.place.device_str() == DEV
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    mha = nn.MultiHeadAttention(8, 2)
    mha.to(DEV)
    key = oar.to_tensor(np.ones((2, 3, 8), "float32"), place=DEV)
    cache = mha.gen_cache(key)
    assert cache.k.place.device_str() == DEV and list(cache.k.shape) == [2, 2, 0, 4]


@pytest.mark.parametrize("current", ["cpu", DEV])
@pytest.mark.parametrize("cell", ["LSTM", "GRU", "SimpleRNN"])
def test_rnn_backward_with_an_unused_final_state(cell, current, sample):
    # The loss reads the outputs only: the final state's gradient never arrives and the
    # autograd engine fills it with zeros, which it made on the CPU whatever the place.
    oar.set_device(current)
    try:
        grads = []
        for place in ("cpu", DEV):
            oar.seed(4)
            rnn = getattr(nn, cell)(4, 5)
            rnn.to(place)
            x = oar.to_tensor(np.linspace(-1, 1, 24).reshape(2, 3, 4).astype("float32"), place=place)
            out, _ = rnn(x)
            (out * out).sum().backward()
            assert rnn.weight_hh_l0.grad.place.device_str() == place
            grads.append([p.grad.numpy() for p in rnn.parameters()])
        for g_cpu, g_dev in zip(*grads):
            np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-5, atol=1e-6)
    finally:
        oar.set_device("cpu")


def test_rfft_gradient_on_the_device(on_cpu):
    a = np.linspace(-1, 1, 12).reshape(2, 6)
    grads = []
    for t in pair(a):
        t.stop_gradient = False
        oar.fft.rfft(t).abs().sum().backward()
        assert t.grad.place == t.place
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-12)


GRADIENTS = {  # backward rules that made a constant on the CPU
    "index_put": lambda t: oar.index_put(t, (oar.to_tensor(np.array([0, 1]), place=t.place),
                                             oar.to_tensor(np.array([2, 0]), place=t.place)),
                                         oar.to_tensor(np.array([9.0, 8.0]), place=t.place)),
    "slice_scatter": lambda t: oar.slice_scatter(t, oar.to_tensor(np.ones((3, 1)), place=t.place), axes=[1],
                                                 starts=[0], ends=[1], strides=[1]),
    "eigh": lambda t: oar.linalg.eigh(t + t.T)[0],
    "svd": lambda t: oar.linalg.svd(t)[1],
}


@pytest.mark.parametrize("name", list(GRADIENTS), ids=list(GRADIENTS))
def test_backward_rules_make_constants_on_the_gradient_place(name, on_cpu):
    a = np.array([[2.0, 0.5, -1.0], [0.3, 1.0, 0.7], [-0.2, 0.4, 3.0]])
    grads = []
    for t in pair(a):
        t.stop_gradient = False
        y = GRADIENTS[name](t)
        (y * y).sum().backward()
        assert t.grad.place == t.place, name
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10, atol=1e-12, err_msg=name)


def test_complex_conversions_on_the_device(on_cpu):
    # The sample device's conversions had no complex case: a cast to complex wrote nothing
    # (zeros), silently, and a real * complex product read those zeros.
    a = np.array([1.5, -2.0, 0.0])
    z = np.array([1 + 2j, 3 - 1j, 0j])
    for place in ("cpu", DEV):
        x = oar.to_tensor(a, place=place)
        c = oar.to_tensor(z, place=place)
        np.testing.assert_array_equal(x.astype("complex128").numpy(), a.astype(np.complex128))
        np.testing.assert_array_equal(x.astype("complex64").numpy(), a.astype(np.complex64))
        np.testing.assert_array_equal(c.astype("complex64").numpy(), z.astype(np.complex64))
        np.testing.assert_array_equal(c.astype("float32").numpy(), z.real.astype(np.float32))
        np.testing.assert_array_equal(c.astype("bool").numpy(), z != 0)
        np.testing.assert_array_equal((x * c).numpy(), a * z)


def test_metrics_and_grad_clipping_answer_on_the_device(on_cpu):
    pred = oar.to_tensor(np.eye(3, dtype="float32"), place=DEV)
    label = oar.to_tensor(np.array([[0], [1], [0]]), place=DEV)
    hits = oar.metric.Accuracy().compute(pred, label)
    assert hits.place.device_str() == DEV
    np.testing.assert_array_equal(hits.numpy(), [[1.0], [1.0], [0.0]])
    assert oar.metric.accuracy(pred, label).place.device_str() == DEV
    lin = nn.Linear(3, 2)
    lin.to(DEV)
    lin(pred).sum().backward()
    norm = nn.utils.clip_grad_norm_(lin.parameters(), 0.5)
    assert norm.place.device_str() == DEV and float(norm) > 0.5
    total = np.sqrt(sum(float((p.grad * p.grad).sum()) for p in lin.parameters()))
    assert total == pytest.approx(0.5, rel=1e-4)


VISION = {  # numpy-built index, weight and result tensors were made on the current device
    "box_coder": lambda b, x, s: oar.vision.ops.box_coder(b, [0.1, 0.1, 0.2, 0.2], b + 0.5),
    "prior_box": lambda b, x, s: oar.vision.ops.prior_box(x, x, [2.0, 4.0], [3.0, 5.0])[0],
    "nms": lambda b, x, s: oar.vision.ops.nms(b, 0.3, s),
    "matrix_nms": lambda b, x, s: oar.vision.ops.matrix_nms(
        b.unsqueeze(0) / 8, s.reshape([1, 1, 5]).tile([1, 3, 1]), 0.1, 0.1, -1, -1)[0],
    "distribute_fpn_proposals": lambda b, x, s: oar.vision.ops.distribute_fpn_proposals(
        b * 30, 2, 5, 4, 224)[1],
    "generate_proposals": lambda b, x, s: oar.vision.ops.generate_proposals(
        x[:1, :2, :3, :3], x[:1, :, :3, :3].tile([1, 2, 1, 1]) * 0.1, b[:1, 2:], b[:3, :].tile([3, 2, 1]).reshape(
            [3, 3, 2, 4]), (b * 0 + 1.0)[:3].tile([3, 2, 1]).reshape([3, 3, 2, 4]))[0],
    "roi_align": lambda b, x, s: oar.vision.ops.roi_align(x, b, _on(b, [3, 2], "int32"), 2),
    "roi_pool": lambda b, x, s: oar.vision.ops.roi_pool(x, b, _on(b, [3, 2], "int32"), 2),
    "psroi_pool": lambda b, x, s: oar.vision.ops.psroi_pool(x, b, _on(b, [3, 2], "int32"), 2),
    "yolo_box": lambda b, x, s: oar.vision.ops.yolo_box(
        x[:1, :4, :2].reshape([1, 16, 2, 2]) - 0.5, _on(b, [[32, 32]], "int32"), [10, 13, 16, 30], 3, 0.01, 8)[0],
    "yolo_loss": lambda b, x, s: oar.vision.ops.yolo_loss(
        x[:1, :4, :2].reshape([1, 16, 2, 2]) - 0.5, (b[:2] / 10).clip(0.1, 0.9).unsqueeze(0),
        _on(b, [[1, 2]], "int32"), [10, 13, 16, 30], [0, 1], 3, 0.5, 8),
    "deform_conv2d": lambda b, x, s: oar.vision.ops.deform_conv2d(
        x[:1], x[:1, :2].tile([1, 9, 1, 1])[:, :18, :4, :4] - 0.5, x[:3, :, :3, :3], padding=1, stride=2),
}


@pytest.mark.parametrize("name", list(VISION), ids=list(VISION))
def test_vision_ops_answer_on_the_device(name, on_cpu):
    rng = np.random.default_rng(5)
    xy = rng.uniform(0, 4, (5, 2))
    arrays = (np.hstack([xy, xy + rng.uniform(1, 4, (5, 2))]), rng.uniform(0, 1, (2, 4, 8, 8)),
              rng.uniform(0, 1, 5))
    want = VISION[name](*(pair(a)[0] for a in arrays))
    got = VISION[name](*(pair(a)[1] for a in arrays))
    assert got.place.device_str() == DEV, name
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


DISTRIBUTIONS = {  # draws and constants that took the current device, not the parameters'
    "Normal.sample": lambda p: oar.distribution.Normal(p, p + 1.0).sample([2]),
    "Uniform.rsample": lambda p: oar.distribution.Uniform(p, p + 1.0).rsample([2]),
    "Exponential.sample": lambda p: oar.distribution.Exponential(p).sample([2]),
    "Laplace.sample": lambda p: oar.distribution.Laplace(p, 1.0).sample([2]),
    "Bernoulli.rsample": lambda p: oar.distribution.Bernoulli(p).rsample([2]),
    "Binomial.sample": lambda p: oar.distribution.Binomial(10, p).sample([2]),
    "Binomial.entropy": lambda p: oar.distribution.Binomial(10, p).entropy(),
    "Poisson.entropy": lambda p: oar.distribution.Poisson(p * 3.0).entropy(),
    "Multinomial.entropy": lambda p: oar.distribution.Multinomial(4, p).entropy(),
    "Categorical.probs, list": lambda p: oar.distribution.Categorical(p).probs([0, 2]),
    "LKJCholesky onion": lambda p: oar.distribution.LKJCholesky(3, p[0] + 1.0).sample([2]),
    "LKJCholesky cvine": lambda p: oar.distribution.LKJCholesky(3, p[0] + 1.0, "cvine").sample([2]),
    "StickBreakingTransform": lambda p: oar.distribution.StickBreakingTransform().forward(p),
}


@pytest.mark.parametrize("name", list(DISTRIBUTIONS), ids=list(DISTRIBUTIONS))
def test_distributions_draw_beside_their_parameters(name, on_cpu):
    p = np.array([0.2, 0.5, 0.7])
    got = DISTRIBUTIONS[name](pair(p)[1])
    assert got.place.device_str() == DEV, name
    assert np.isfinite(got.numpy()).all(), name
    if "sample" not in name and "LKJ" not in name:  # a deterministic value: the CPU's
        np.testing.assert_allclose(got.numpy(), DISTRIBUTIONS[name](pair(p)[0]).numpy(), rtol=1e-10)


@pytest.mark.parametrize("lengths", ["list", "tensor"])
def test_rnn_sequence_length_on_the_device(lengths, on_cpu):
    # the step masks compared sequence_length with a step index made on the current device
    x = np.linspace(-1, 1, 24).reshape(2, 3, 4).astype("float32")
    outs = []
    for place in ("cpu", DEV):
        oar.seed(6)
        rnn = nn.GRU(4, 5)
        rnn.to(place)
        seq = [3, 1] if lengths == "list" else oar.to_tensor(np.array([3, 1]), place=place)
        out, _ = rnn(oar.to_tensor(x, place=place), sequence_length=seq)
        assert out.place.device_str() == place
        outs.append(out.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("current", ["cpu", DEV])
def test_converted_training_step_with_a_grad_scaler(current, sample):
    # to_static's lr/step and loss-scaling holders were made on the current device: the
    # program on sample:0 refused a CPU holder while the CPU was current
    weights = []
    for place in ("cpu", DEV):
        oar.set_device("cpu")
        oar.seed(7)
        lin = nn.Linear(3, 2)
        lin.to(place)
        opt = oar.optimizer.SGD(0.1, parameters=lin.parameters())
        scaler = oar.amp.GradScaler(init_loss_scaling=1024.0)

        @oar.jit.to_static
        def step(x):
            loss = lin(x).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.clear_grad()
            return loss

        oar.set_device(current)
        try:
            for _ in range(3):
                step(oar.to_tensor(np.ones((4, 3), "float32"), place=place))
        finally:
            oar.set_device("cpu")
        assert lin.weight.place.device_str() == place
        weights.append(lin.weight.numpy())
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-6)


AUDIO = {  # the frame indices and the constant padding were made on the current device
    "Spectrogram": lambda: oar.audio.features.Spectrogram(32, 8),
    "Spectrogram, constant padding": lambda: oar.audio.features.Spectrogram(32, 8, win_length=20,
                                                                            pad_mode="constant"),
    "MelSpectrogram": lambda: oar.audio.features.MelSpectrogram(16000, 32, 8, n_mels=6),
    "LogMelSpectrogram": lambda: oar.audio.features.LogMelSpectrogram(16000, 32, 8, n_mels=6),
    "MFCC": lambda: oar.audio.features.MFCC(16000, 4, n_fft=32, hop_length=8, n_mels=6),
}


@pytest.mark.parametrize("name", list(AUDIO), ids=list(AUDIO))
def test_audio_features_on_the_device(name, on_cpu):
    x = np.random.default_rng(8).standard_normal((2, 100)).astype("float32")
    layer = AUDIO[name]()
    want = layer(oar.to_tensor(x))
    layer.to(DEV)
    got = layer(oar.to_tensor(x, place=DEV))
    assert got.place.device_str() == DEV, name
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


def test_beam_search_decodes_on_the_device(on_cpu):
    # the start ids, beam scores, masks and step counter were made on the current device
    outs = []
    for place in ("cpu", DEV):
        oar.seed(9)
        emb, out_fn, cell = nn.Embedding(12, 4), nn.Linear(4, 12), nn.GRUCell(4, 4)
        for layer in (emb, out_fn, cell):
            layer.to(place)
        dec = nn.BeamSearchDecoder(cell, 0, 1, 3, embedding_fn=emb, output_fn=out_fn)
        enc = oar.to_tensor(np.linspace(-1, 1, 8).reshape(2, 4).astype("float32"), place=place)
        ids, states, lengths = nn.dynamic_decode(dec, cell.get_initial_states(enc), max_step_num=3,
                                                 return_length=True)
        assert ids.place.device_str() == place and lengths.place.device_str() == place
        outs.append((ids.numpy(), states.log_probs.numpy(), lengths.numpy()))
    np.testing.assert_array_equal(outs[1][0], outs[0][0])
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(outs[1][2], outs[0][2])


INITIALIZERS = {
    "Constant": nn.initializer.Constant(0.5),
    "Uniform": nn.initializer.Uniform(-0.5, 0.5),
    "Normal": nn.initializer.Normal(0.0, 2.0),
    "XavierUniform": nn.initializer.XavierUniform(),
    "KaimingNormal": nn.initializer.KaimingNormal(),
    "TruncatedNormal": nn.initializer.TruncatedNormal(),
    "Orthogonal": nn.initializer.Orthogonal(),
    "Dirac": nn.initializer.Dirac(),
}


@pytest.mark.parametrize("name", list(INITIALIZERS), ids=list(INITIALIZERS))
def test_initializers_fill_on_the_parameter_place(name, on_cpu):
    # The values were made on the current device and copied in by set_value: a parameter-sized
    # CPU tensor for a parameter on the device. Seeded, the draws match the CPU parameter's.
    init = INITIALIZERS[name]
    shape = (256, 256, 3) if name == "Dirac" else (256, 768)
    cpu = oar.to_tensor(np.zeros(shape, "float32"))
    dev = oar.to_tensor(np.zeros(shape, "float32"), place=DEV)
    oar.seed(10)
    init(cpu)
    oar.seed(10)
    if name == "Constant":
        base = oar.device.memory_allocated("cpu")
        oar.device.reset_max_memory_allocated("cpu")
    init(dev)
    if name == "Constant":
        assert oar.device.max_memory_allocated("cpu") - base < (256 * 768 * 4) // 2
    assert dev.place.device_str() == DEV, name
    np.testing.assert_array_equal(dev.numpy(), cpu.numpy(), err_msg=name)
