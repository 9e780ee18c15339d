"""fractional_max_pool2d/3d (python/oar/nn/_functional_fractional_pool.py) and
adaptive_log_softmax_with_loss (_functional_adaptive_softmax.py) with their layers: float64
NumPy references, central differences, bad inputs, windows recorded from Paddle 3.3.1."""
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import OpCase, case_id, check_case, tensor

F64 = lambda a: tensor(np.asarray(a, dtype=np.float64), "float64")  # noqa: E731

# (n_in, n_out, kernel_size (0: disjoint), random_u, window starts, window ends), from
# fractional_max_pool2d(..., return_mask=True) of paddlepaddle 3.3.1 on CPU over increasing and
# decreasing ramps (the mask of the maximum is a window's last / first position).
PADDLE_WINDOWS = [
    (7, 5, 0, 0.3, [0, 1, 3, 4, 6], [1, 3, 4, 6, 7]),
    (10, 4, 0, 0.77, [0, 2, 5, 7], [2, 5, 7, 10]),
    (13, 6, 0, 0.1, [0, 2, 4, 6, 8, 10], [2, 4, 6, 8, 10, 13]),
    (32, 3, 0, 0.9, [0, 10, 21], [10, 21, 32]),
    (9, 9, 0, 0.5, [0, 1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9]),
    (15, 7, 0, 0.61, [0, 2, 4, 7, 9, 11, 13], [2, 4, 7, 9, 11, 13, 15]),
    (8, 3, 2, 0.3, [0, 3, 6], [2, 5, 8]),
    (12, 5, 3, 0.77, [0, 2, 5, 7, 9], [3, 5, 8, 10, 12]),
    (10, 4, 1, 0.5, [0, 3, 6, 9], [1, 4, 7, 10]),
    (32, 3, 2, 0.25, [0, 15, 30], [2, 17, 32]),
    (6, 1, 2, 0.4, [0], [2]),
    (20, 9, 4, 0.66, [0, 2, 4, 6, 8, 10, 12, 14, 16], [4, 6, 8, 10, 12, 14, 16, 18, 20]),
]


@pytest.mark.parametrize("n_in,n_out,k,u,starts,ends", PADDLE_WINDOWS)
def test_fractional_windows_are_paddles(n_in, n_out, k, u, starts, ends):
    ramp = np.arange(n_in, dtype=np.float32).reshape(1, 1, 1, n_in)
    kw = dict(output_size=[1, n_out], kernel_size=[1, k] if k else None, random_u=u,
              return_mask=True)
    _, last = F.fractional_max_pool2d(oar.to_tensor(ramp), **kw)
    _, first = F.fractional_max_pool2d(oar.to_tensor(-ramp), **kw)
    assert first.numpy().ravel().tolist() == starts
    assert (last.numpy().ravel() + 1).tolist() == ends
    assert last.dtype.name == "int32"


def np_windows(n, out, k, u):
    """The documented rule in float64 (see the module's docstring)."""
    if k:
        if out == 1:
            return [(0, k)]
        a = (n - k) / (out - 1)
        s = [math.floor((i + u) * a) - math.floor(u * a) for i in range(out - 1)] + [n - k]
        return [(b, b + k) for b in s]
    a = n / out
    base = n // out
    u = u * min((base + 2) / a - 1, (n + 1 - base) / a - (out - 1))
    g = [math.ceil(a * (i + u) - 1) for i in range(out + 1)]
    return [(max(g[i] - g[0], 0), min(g[i + 1] - g[0], n)) for i in range(out)]


def np_fractional(x, out, k, u):
    nd = x.ndim - 2
    wins = [np_windows(x.shape[2 + d], out[d], k[d], u) for d in range(nd)]
    res = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        sl = tuple(slice(*wins[d][pos[d]]) for d in range(nd))
        win = x[(slice(None), slice(None)) + sl]
        if win.size:
            res[(slice(None), slice(None)) + pos] = win.reshape(win.shape[:2] + (-1,)).max(-1)
    return res


def _bad4():
    return F64(np.ones((1, 1, 5, 5)))


FRACTIONAL = [
    OpCase("fractional_max_pool2d", lambda x, *a: F.fractional_max_pool2d(x, *(a or ([3, 4],)),
                                                                          random_u=0.37),
           lambda x: np_fractional(x, [3, 4], [0, 0], 0.37), inputs=[(2, 3, 7, 9)],
           shapes=[[(2, 3, 7, 9)], [(0, 3, 7, 9)], [(1, 2, 3, 4)]],
           bad_inputs=[((F64(np.ones((2, 7, 9))), 3), ValueError, "4-D"),
                       ((_bad4(), 6), ValueError, "input size 5"),
                       ((oar.to_tensor(np.ones((1, 1, 4, 4), np.int64)), 2), TypeError, "float"),
                       ((_bad4(), [2, 2, 2]), ValueError, "output_size"),
                       ((_bad4(), 0), ValueError, "output_size")]),
    OpCase("fractional_max_pool2d_overlap",
           lambda x: F.fractional_max_pool2d(x, [3, None], kernel_size=[2, 1], random_u=0.8),
           lambda x: np_fractional(x, [3, 5], [2, 1], 0.8), inputs=[(2, 2, 8, 5)],
           op="fractional_max_pool2d"),
    OpCase("fractional_max_pool3d",
           lambda x: F.fractional_max_pool3d(x, [2, 3, 2], random_u=0.55),
           lambda x: np_fractional(x, [2, 3, 2], [0, 0, 0], 0.55), inputs=[(1, 2, 5, 6, 3)],
           shapes=[[(1, 2, 5, 6, 3)], [(0, 1, 4, 4, 4)]],
           bad_inputs=[((_bad4(),), ValueError, "5-D")]),
    OpCase("fractional_max_pool3d_overlap",
           lambda x: F.fractional_max_pool3d(x, 2, kernel_size=2, random_u=0.2),
           lambda x: np_fractional(x, [2, 2, 2], [2, 2, 2], 0.2), inputs=[(1, 2, 4, 5, 3)],
           op="fractional_max_pool3d"),
]


@pytest.mark.parametrize("case", FRACTIONAL, ids=case_id)
def test_fractional_max_pool(case):
    check_case(case)


def test_fractional_bad_random_u_and_kernel():
    x = _bad4()
    for u in (0, 1.0, -0.5, 2, True, "0.5"):
        with pytest.raises(ValueError, match="fractional_max_pool2d: random_u"):
            F.fractional_max_pool2d(x, 2, random_u=u)
    with pytest.raises(ValueError, match=r"fractional_max_pool2d: input size 5 .* kernel_size 3"):
        F.fractional_max_pool2d(x, 4, kernel_size=3)
    with pytest.raises(ValueError, match="fractional_max_pool3d: kernel_size"):
        F.fractional_max_pool3d(F64(np.ones((1, 1, 4, 4, 4))), 2, kernel_size=[2, 2])


def test_fractional_mask_and_layers():
    rng = np.random.default_rng(3)
    x = F64(rng.standard_normal((2, 3, 9, 8)))
    out, mask = F.fractional_max_pool2d(x, [4, 3], random_u=0.4, return_mask=True)
    flat = x.numpy().reshape(2, 3, -1)
    got = np.take_along_axis(flat, mask.numpy().reshape(2, 3, -1).astype(np.int64), 2)
    np.testing.assert_array_equal(got.reshape(out.shape), out.numpy())
    x3 = F64(rng.standard_normal((1, 2, 6, 5, 7)))
    out3, mask3 = oar.nn.FractionalMaxPool3D([3, 2, 4], kernel_size=2, random_u=0.3,
                                             return_mask=True)(x3)
    got3 = np.take_along_axis(x3.numpy().reshape(1, 2, -1), mask3.numpy().reshape(1, 2, -1), 2)
    np.testing.assert_array_equal(got3.reshape(out3.shape), out3.numpy())
    layer = oar.nn.FractionalMaxPool2D(output_size=3, random_u=0.5)
    np.testing.assert_array_equal(layer(x).numpy(), F.fractional_max_pool2d(x, 3, random_u=0.5).numpy())
    assert "output_size=3" in repr(layer)
    # random_u None: a draw from oar's generator, fixed by oar.seed
    oar.seed(5)
    a = F.fractional_max_pool2d(x, 4).numpy()
    oar.seed(5)
    np.testing.assert_array_equal(F.fractional_max_pool2d(x, 4).numpy(), a)


def test_fractional_gradient_reaches_the_maxima_only():
    x = F64(np.arange(16.0).reshape(1, 1, 4, 4))
    x.stop_gradient = False
    F.fractional_max_pool2d(x, 2, random_u=0.5).sum().backward()
    g = x.grad.numpy().reshape(-1)
    _, mask = F.fractional_max_pool2d(x, 2, random_u=0.5, return_mask=True)
    want = np.zeros(16)
    want[mask.numpy().ravel()] = 1
    np.testing.assert_array_equal(g, want)


# ---- adaptive log softmax
def np_log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def np_full_log_prob(x, head_w, tails, cutoffs, head_b=None):
    head = np_log_softmax(x @ head_w + (0 if head_b is None else head_b))
    cols = [head[:, :cutoffs[0]]]
    for i, (w0, w1) in enumerate(tails):
        cols.append(np_log_softmax(x @ w0 @ w1) + head[:, cutoffs[0] + i:cutoffs[0] + i + 1])
    return np.concatenate(cols, axis=1)


CUT = [3, 5, 9]  # shortlist 3, clusters [3, 5) and [5, 9)
LABELS = np.array([0, 4, 8, 2, 5, 3, 7])


def _asm_np(x, hw, hb, a0, a1, b0, b1, labels=LABELS):
    lp = np_full_log_prob(x, hw, [(a0, a1), (b0, b1)], CUT, hb)
    out = lp[np.arange(len(labels)), labels]
    return out, -out.mean() if len(labels) else np.nan


def _asm_oar(x, hw, hb, a0, a1, b0, b1, labels=LABELS, which=0):
    res = F.adaptive_log_softmax_with_loss(x, oar.to_tensor(labels[:x.shape[0]]), hw,
                                           [[a0, a1], [b0, b1]], CUT, head_bias=hb)
    return res[which]


ASM_INPUTS = [(7, 6), (6, 5), (5,), (6, 3), (3, 2), (6, 2), (2, 4)]
ASM = [
    OpCase("adaptive_log_softmax_with_loss", lambda *t: _asm_oar(*t),
           lambda *a: _asm_np(*a, labels=LABELS[:a[0].shape[0]])[0], inputs=ASM_INPUTS,
           shapes=[ASM_INPUTS, [(0, 6)] + ASM_INPUTS[1:]], grad_shapes=[ASM_INPUTS]),
    OpCase("adaptive_log_softmax_with_loss_loss", lambda *t: _asm_oar(*t, which=1),
           lambda *a: _asm_np(*a, labels=LABELS[:a[0].shape[0]])[1], inputs=ASM_INPUTS,
           op="adaptive_log_softmax_with_loss"),
]


@pytest.mark.parametrize("case", ASM, ids=case_id)
def test_adaptive_log_softmax_with_loss(case):
    check_case(case)


def test_adaptive_log_softmax_bad_inputs():
    rng = np.random.default_rng(0)
    w = [F64(rng.standard_normal(s)) for s in ASM_INPUTS]
    x, hw, hb, a0, a1, b0, b1 = w
    fn = F.adaptive_log_softmax_with_loss
    cases = [
        ((x, oar.to_tensor(LABELS[:3]), hw, [[a0, a1], [b0, b1]], CUT), "same batch size"),
        ((x, oar.to_tensor(np.array([0, 9, 1, 1, 1, 1, 1])), hw, [[a0, a1], [b0, b1]], CUT),
         "label values must be in [0, 8]"),
        ((x, oar.to_tensor(np.array([-1] * 7)), hw, [[a0, a1], [b0, b1]], CUT), "got values in [-1"),
        ((x, oar.to_tensor(LABELS), hw, [[a0, a1]], CUT), "tail_weights must hold 2"),
        ((x, oar.to_tensor(LABELS), hw, [[a0, a1], [b0, a1]], CUT), "tail_weights[1]"),
        ((x, oar.to_tensor(LABELS), hw, [[a0, a1], [b0, b1]], [5, 3, 9]), "cutoffs"),
        ((x, oar.to_tensor(LABELS), a0, [[a0, a1], [b0, b1]], CUT), "head_weight"),
        ((x, oar.to_tensor(LABELS.astype(np.float64)), hw, [[a0, a1], [b0, b1]], CUT), "integer"),
        ((x, oar.to_tensor(LABELS.reshape(7, 1)), hw, [[a0, a1], [b0, b1]], CUT), "0-D or 1-D"),
    ]
    for args, msg in cases:
        with pytest.raises((ValueError, TypeError)) as info:
            fn(*args)
        assert "adaptive_log_softmax_with_loss" in str(info.value) and msg in str(info.value), \
            str(info.value)
    # 0-D label with 1-D input: one sample
    out, loss = fn(x[1], oar.to_tensor(np.array(4)), hw, [[a0, a1], [b0, b1]], CUT, head_bias=hb)
    want, _ = _asm_np(x.numpy()[1:2], *[t.numpy() for t in w[1:]], labels=np.array([4]))
    assert out.shape == [] and abs(float(out) - want[0]) < 1e-10 and abs(float(loss) + want[0]) < 1e-10


def test_adaptive_log_softmax_layer():
    oar.seed(11)
    layer = oar.nn.AdaptiveLogSoftmaxWithLoss(6, 9, [3, 5], div_value=2.0, head_bias=True)
    params = dict(layer.named_parameters())
    assert [list(p.shape) for p in params.values()] == [[6, 5], [5], [6, 3], [3, 2], [6, 1], [1, 4]]
    x = F64(np.random.default_rng(1).standard_normal((7, 6)))
    x = x.astype(layer.head_weight.dtype)
    out, loss = layer(x, oar.to_tensor(LABELS))
    lp = layer.log_prob(x)
    np.testing.assert_allclose(np.exp(lp.numpy()).sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(out.numpy(), lp.numpy()[np.arange(7), LABELS], rtol=1e-5, atol=1e-6)
    ref = np_full_log_prob(x.numpy().astype(np.float64), layer.head_weight.numpy().astype(np.float64),
                           [[t.numpy().astype(np.float64) for t in pair] for pair in layer.tail_weights],
                           layer.cutoffs, layer.head_bias.numpy().astype(np.float64))
    np.testing.assert_allclose(lp.numpy(), ref, rtol=1e-5, atol=1e-5)
    pred = layer.predict(x)
    assert pred.dtype.name == "float32"
    np.testing.assert_array_equal(pred.numpy(), lp.numpy().argmax(axis=1))
    loss.backward()  # every parameter, the tails included, gets a gradient
    assert all(p.grad is not None for p in layer.parameters())
    with pytest.raises(ValueError, match="AdaptiveLogSoftmaxWithLoss: cutoffs"):
        oar.nn.AdaptiveLogSoftmaxWithLoss(6, 9, [3, 9])
    with pytest.raises(ValueError, match="AdaptiveLogSoftmaxWithLoss: cutoffs"):
        oar.nn.AdaptiveLogSoftmaxWithLoss(6, 9, [5, 3])
    with pytest.raises(ValueError, match="AdaptiveLogSoftmaxWithLoss: div_value"):
        oar.nn.AdaptiveLogSoftmaxWithLoss(6, 9, [3], div_value=0)
    with pytest.raises(ValueError, match="AdaptiveLogSoftmaxWithLoss.log_prob: input"):
        layer.log_prob(F64(np.ones((2, 5))))


def test_adaptive_log_softmax_paddle_example():
    # paddle.nn.AdaptiveLogSoftmaxWithLoss's docstring, values printed by Paddle 3.3.1
    oar.seed(2024)
    x = oar.randn([3, 5], dtype="float32")
    asfm = oar.nn.AdaptiveLogSoftmaxWithLoss(5, 3, [2], div_value=2.0, head_bias=False)
    out, loss = asfm(x, oar.full((3,), 1, dtype="int64"))
    np.testing.assert_allclose(out.numpy(), [-1.04691017, -0.42341536, -1.16909981], rtol=1e-5)
    np.testing.assert_allclose(float(loss), 0.87980843, rtol=1e-5)
    np.testing.assert_array_equal(asfm.predict(x).numpy(), [1.0, 1.0, 2.0])


# ---- edit_distance (paddle.nn.functional.loss.edit_distance)
def np_levenshtein(a, b):
    d = np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        prev, d = d, np.zeros(len(b) + 1, np.int64)
        d[0] = i
        for j in range(1, len(b) + 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
    return d[len(b)]


@pytest.mark.parametrize("batch,w1,w2", [(6, 7, 5), (3, 0, 4), (0, 3, 3), (5, 9, 9)])
def test_edit_distance_against_numpy(batch, w1, w2):
    rng = np.random.default_rng(batch + w1)
    h, r = rng.integers(0, 3, (batch, w1)), rng.integers(0, 3, (batch, w2))
    hl, rl = rng.integers(0, w1 + 1, batch), rng.integers(1, w2 + 1, batch)
    for norm in (False, True):
        n, d = oar.nn.functional.loss.edit_distance(
            oar.to_tensor(h), oar.to_tensor(r), normalized=norm, input_length=oar.to_tensor(hl),
            label_length=oar.to_tensor(rl))
        want = np.array([np_levenshtein(h[i, :hl[i]], r[i, :rl[i]]) for i in range(batch)], np.float64)
        if norm:
            want = want / rl
        assert n.numpy().tolist() == [batch] and n.dtype.name == "int64"
        assert list(d.shape) == [batch, 1] and d.dtype.name == "float32"
        np.testing.assert_allclose(d.numpy().ravel(), want, rtol=1e-6)


def test_edit_distance_paddle_values_and_bad_inputs():
    # recorded from paddlepaddle 3.3.1 (CPU) on this input
    rng = np.random.default_rng(0)
    h, r = rng.integers(0, 3, (6, 7)), rng.integers(0, 3, (6, 5))
    hl, rl = np.array([7, 3, 0, 5, 1, 6]), np.array([5, 5, 2, 1, 4, 3])
    ed = oar.nn.functional.loss.edit_distance
    _, d = ed(oar.to_tensor(h), oar.to_tensor(r), False, None, oar.to_tensor(hl), oar.to_tensor(rl))
    assert d.numpy().ravel().tolist() == [5.0, 3.0, 2.0, 4.0, 3.0, 5.0]
    _, d = ed(oar.to_tensor(h), oar.to_tensor(r), True, None, oar.to_tensor(hl), oar.to_tensor(rl))
    np.testing.assert_allclose(d.numpy().ravel(), [1.0, 0.6, 1.0, 4.0, 0.75, 5 / 3], rtol=1e-6)
    # bad inputs: the implementation's own tests (tests/python/nn/test_seq_losses_decode.py)
# ---- rnnt_loss
def np_rnnt(acts, labels, tl, ul, blank=0):
    out = []
    for b in range(acts.shape[0]):
        T, U = tl[b], ul[b]
        lp = acts[b]
        al = np.full((T, U + 1), -np.inf)
        al[0, 0] = 0.0
        for t in range(T):
            for u in range(U + 1):
                if t == 0 and u == 0:
                    continue
                c = []
                if t > 0:
                    c.append(al[t - 1, u] + lp[t - 1, u, blank])
                if u > 0:
                    c.append(al[t, u - 1] + lp[t, u - 1, labels[b, u - 1]])
                al[t, u] = np.logaddexp.reduce(c)
        out.append(-(al[T - 1, U] + lp[T - 1, U, blank]))
    return np.array(out)


RNNT_LABELS = np.array([[1, 3, 2], [2, 0, 0], [3, 1, 0]])
RNNT_TL, RNNT_UL = np.array([5, 3, 4]), np.array([3, 1, 2])


def _rnnt_oar(x, reduction="none", lam=0.0):
    return F.rnnt_loss(x, oar.to_tensor(RNNT_LABELS.astype(np.int32)),
                       oar.to_tensor(RNNT_TL.astype(np.int32)), oar.to_tensor(RNNT_UL.astype(np.int32)),
                       blank=0, fastemit_lambda=lam, reduction=reduction)


RNNT = [
    OpCase("rnnt_loss", lambda x: _rnnt_oar(x), lambda x: np_rnnt(x, RNNT_LABELS, RNNT_TL, RNNT_UL),
           inputs=[(3, 5, 4, 4)]),
    OpCase("rnnt_loss_mean", lambda x: _rnnt_oar(x, "mean"),
           lambda x: np_rnnt(x, RNNT_LABELS, RNNT_TL, RNNT_UL).mean(), inputs=[(3, 5, 4, 4)],
           op="rnnt_loss"),
]


@pytest.mark.parametrize("case", RNNT, ids=case_id)
def test_rnnt_loss(case):
    check_case(case)


def test_rnnt_loss_paddle_values_fastemit_and_bad_inputs():
    # recorded from paddlepaddle 3.3.1 (CPU): losses and gradients with FastEmit
    rng = np.random.default_rng(1)
    acts = rng.standard_normal((3, 5, 4, 4))
    labels = rng.integers(1, 4, (3, 3)).astype(np.int32)
    tl, ul = np.array([5, 3, 4], np.int32), np.array([3, 1, 2], np.int32)
    a = F64(acts)
    a.stop_gradient = False
    c = oar.nn.RNNTLoss(blank=0, fastemit_lambda=0.5, reduction="none")(
        a, oar.to_tensor(labels), oar.to_tensor(tl), oar.to_tensor(ul))
    np.testing.assert_allclose(c.numpy(), [-4.220848, -1.250181, -4.915202], atol=1e-6)
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy().sum(), -21.0, atol=1e-9)
    np.testing.assert_allclose(a.grad.numpy()[1, 0, 0], [-0.78532, -0.32202, 0.0, 0.0], atol=1e-5)
    # bad inputs: the implementation's own tests (tests/python/nn/test_seq_losses_decode.py)
    empty = F.rnnt_loss(F64(np.zeros((0, 2, 2, 3))), oar.to_tensor(np.zeros((0, 1), np.int32)),
                        oar.to_tensor(np.zeros(0, np.int32)), oar.to_tensor(np.zeros(0, np.int32)),
                        reduction="none")
    assert list(empty.shape) == [0]


# ---- class_center_sample
@pytest.mark.parametrize("n,classes,samples", [(10, 20, 6), (4, 20, 6), (7, 7, 7), (1, 3, 1)])
def test_class_center_sample(n, classes, samples):
    rng = np.random.default_rng(n + classes)
    lab = rng.integers(0, classes, n)
    for dtype in ("int64", "int32"):
        remapped, sampled = F.class_center_sample(oar.to_tensor(lab.astype(dtype)), classes, samples)
        assert remapped.dtype.name == dtype and sampled.dtype.name == dtype
        s, r = sampled.numpy(), remapped.numpy()
        pos = np.unique(lab)
        np.testing.assert_array_equal(s[:pos.size], pos)  # the positives, ascending
        assert s.size == max(samples, pos.size) and len(set(s.tolist())) == s.size
        assert ((s >= 0) & (s < classes)).all()
        np.testing.assert_array_equal(s[r], lab)  # each label maps to its own center
    oar.seed(3)
    a = F.class_center_sample(oar.to_tensor(lab), classes, samples)[1].numpy()
    oar.seed(3)
    np.testing.assert_array_equal(F.class_center_sample(oar.to_tensor(lab), classes, samples)[1].numpy(), a)


def test_class_center_sample_paddle_example_and_bad_inputs():
    # paddle.nn.functional.class_center_sample's docstring (Paddle 3.3.1's printed values)
    lab = oar.to_tensor(np.array([17, 10, 5, 18, 8, 8, 19, 14, 10, 14]))
    r, s = F.class_center_sample(lab, 20, 6)
    assert r.numpy().tolist() == [4, 2, 0, 5, 1, 1, 6, 3, 2, 3]
    assert s.numpy().tolist() == [5, 8, 10, 14, 17, 18, 19]
    # bad inputs: the implementation's own tests (tests/python/nn/test_seq_losses_decode.py)