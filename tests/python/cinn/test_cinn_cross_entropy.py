"""cross_entropy and cross_entropy_grad decomposed (Note [cross_entropy decomposition] in
docs/notes/cinn.md): under to_static(backend='CINN') neither op is left in the forward or
backward program, and the loss and the input's gradient equal the op's (eager) in
float32 and float64 for every case of Note [cross_entropy]: hard labels ([N] and [N, 1]),
soft labels, class weights, ignore_index (negative and in range, every sample ignored),
label smoothing, the three reductions, use_softmax=False, a middle class axis, a batch of
0. A small classifier trained 20 steps with F.cross_entropy under CINN equals to_static
without it."""
import numpy as np
import pytest

import oar
from oar import _C

F = oar.nn.functional
C = 7
# The small class counts here decompose only with this flag (Note [Short rows keep their
# kernel]); restored after each test by conftest's cache fixture.
CINN_FLAGS = ["FLAGS_cinn_decompose_short_rows"]


@pytest.fixture(autouse=True)
def decompose_short_rows(cache_dir):
    oar.set_flags({"FLAGS_cinn_decompose_short_rows": True})
    yield


@pytest.mark.parametrize("classes,kept", [(10, True), (31, True), (32, False), (40, False)])
def test_short_rows_keep_the_kernel_by_default(classes, kept):
    oar.set_flags({"FLAGS_cinn_decompose_short_rows": False})
    rng = np.random.default_rng(classes)
    x = rng.standard_normal((16, classes)).astype("float32")
    label = oar.to_tensor(rng.integers(0, classes, 16).astype("int64"))
    fwd, bwd = compiled_matches_eager(lambda t, lb: F.cross_entropy(t, lb), x, label)
    assert ('"pd_op.cross_entropy"' in fwd) == kept, fwd
    assert ('"pd_op.cross_entropy_grad"' in bwd) == kept, bwd

# name -> (cross_entropy keyword arguments, label kind, input shape)
CASES = {
    "hard_mean": ({}, "hard", (9, C)),
    "hard_sum": ({"reduction": "sum"}, "hard", (9, C)),
    "hard_none": ({"reduction": "none"}, "hard", (9, C)),
    "hard_n1_none": ({"reduction": "none"}, "hard_n1", (9, C)),
    "hard_weight_mean": ({"weight": True}, "hard", (9, C)),
    "hard_weight_none": ({"weight": True, "reduction": "none"}, "hard", (9, C)),
    "hard_ignore_mean": ({"ignore_index": 2}, "hard", (9, C)),
    "hard_ignore_neg_mean": ({"ignore_index": -100}, "hard_neg", (9, C)),
    "hard_ignore_weight_sum": ({"ignore_index": 2, "weight": True, "reduction": "sum"}, "hard", (9, C)),
    "hard_smooth_mean": ({"label_smoothing": 0.1}, "hard", (9, C)),
    "hard_smooth_none": ({"label_smoothing": 0.2, "reduction": "none"}, "hard", (9, C)),
    "hard_smooth_weight_ignore_mean": ({"label_smoothing": 0.1, "weight": True, "ignore_index": 2}, "hard", (9, C)),
    "hard_no_softmax_mean": ({"use_softmax": False}, "hard", (9, C)),
    "hard_no_softmax_smooth_none": ({"use_softmax": False, "label_smoothing": 0.1, "reduction": "none"}, "hard",
                                    (9, C)),
    "hard_axis1_mean": ({"axis": 1, "weight": True}, "hard_axis1", (4, C, 5)),
    "hard_ignore_all_mean": ({"ignore_index": 2}, "hard_all2", (9, C)),
    "hard_ignore_all_weight_mean": ({"ignore_index": 2, "weight": True}, "hard_all2", (9, C)),
    "hard_empty_mean": ({}, "hard", (0, C)),
    "hard_empty_ignore_mean": ({"ignore_index": 2}, "hard", (0, C)),
    "hard_empty_sum": ({"reduction": "sum"}, "hard", (0, C)),
    "soft_mean": ({"soft_label": True}, "soft", (9, C)),
    "soft_none": ({"soft_label": True, "reduction": "none"}, "soft", (9, C)),
    "soft_weight_mean": ({"soft_label": True, "weight": True}, "soft", (9, C)),
    "soft_weight_smooth_sum": ({"soft_label": True, "weight": True, "label_smoothing": 0.1, "reduction": "sum"},
                               "soft", (9, C)),
    "soft_no_softmax_mean": ({"soft_label": True, "use_softmax": False}, "soft", (9, C)),
    "soft_axis0_none": ({"soft_label": True, "axis": 0, "reduction": "none"}, "soft", (C, 6)),
}


def make_case(name, dtype, seed=0):
    kw, kind, shape = CASES[name]
    kw = dict(kw)
    rng = np.random.default_rng(seed + len(name))
    x = rng.standard_normal(shape) * 2
    axis = kw.get("axis", -1) % len(shape)
    if not kw.get("use_softmax", True):  # probabilities (a few exact zeros: log clamps)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        x = e / e.sum(axis=axis, keepdims=True)
        x.reshape(-1)[::11] = 0.0
    n = shape[0]
    if kind.startswith("hard"):
        if kind == "hard_axis1":
            label = rng.integers(0, C, (shape[0], shape[2]))
        else:
            label = rng.integers(0, C, n)
            label[::3] = 2  # ignored where ignore_index=2
            if kind == "hard_neg":
                label[1::4] = -100
            if kind == "hard_all2":
                label[:] = 2
            if kind == "hard_n1":
                label = label.reshape(n, 1)
        label = oar.to_tensor(label.astype("int64"))
    else:
        y = rng.random(shape)
        label = oar.to_tensor((y / y.sum(axis=axis, keepdims=True)).astype(dtype))
    if kw.pop("weight", False):
        kw["weight"] = oar.to_tensor((rng.random(C) + 0.5).astype(dtype))
    up = rng.standard_normal(100).astype(dtype)  # the upstream gradient of 'none' losses
    return x.astype(dtype), label, kw, up


def loss_fn(kw, up):
    def fn(x, label):
        loss = F.cross_entropy(x, label, **kw)
        if loss.ndim == 0:
            return loss * 1.5
        # a per-sample upstream gradient
        u = oar.to_tensor(up[:int(np.prod(loss.shape))].reshape(loss.shape))
        return (loss * u).sum()
    return fn


def run(fn, x, label):
    xt = oar.to_tensor(x, stop_gradient=False)
    out = fn(xt, label)
    out.backward()
    return out.numpy(), xt.grad.numpy()


def compiled_matches_eager(fn, x, label):
    """fn's float32 loss and input gradient under to_static(backend='CINN') against eager;
    returns the executed forward and backward programs' text."""
    static = oar.jit.to_static(fn, backend="CINN")
    got_loss, got_grad = run(static, x, label)
    want_loss, want_grad = run(fn, x, label)
    np.testing.assert_allclose(got_loss, want_loss, rtol=2e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=2e-5, atol=1e-7)
    prog = static.concrete_programs[-1]
    return str(prog.executed_program), str(prog.executed_backward_program)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-11)])
def test_decomposition_equals_the_op(name, dtype, tol):
    x, label, kw, up = make_case(name, dtype)
    fn = loss_fn(kw, up)
    want_loss, want_grad = run(fn, x, label)
    static = oar.jit.to_static(fn, backend="CINN")
    got_loss, got_grad = run(static, x, label)
    np.testing.assert_allclose(got_loss, want_loss, rtol=tol, atol=tol)
    np.testing.assert_allclose(got_grad, want_grad, rtol=tol, atol=tol)
    prog = static.concrete_programs[-1]
    fwd, bwd = str(prog.executed_program), str(prog.executed_backward_program)
    assert '"pd_op.cross_entropy"' not in fwd, fwd
    assert '"pd_op.cross_entropy_grad"' not in bwd, bwd
    assert _C.cinn.cache_stats()["fallbacks"] == 0


def test_the_empty_and_fully_ignored_means_match_the_kernel():
    # 0 samples without ignore_index: 0 / 0 (NaN) as the kernel; with it, or every sample
    # ignored: 0 (a zero denominator counts as 1).
    for name, want in (("hard_empty_mean", "nan"), ("hard_empty_ignore_mean", 0.0), ("hard_ignore_all_mean", 0.0)):
        x, label, kw, up = make_case(name, "float32")
        got = oar.jit.to_static(lambda t, lb: F.cross_entropy(t, lb, **kw), backend="CINN")(oar.to_tensor(x), label)
        eager = F.cross_entropy(oar.to_tensor(x), label, **kw).numpy()
        if want == "nan":
            assert np.isnan(got.numpy()) and np.isnan(eager)
        else:
            assert got.numpy() == want and eager == want


def test_hard_label_loss_fuses_around_the_class_select():
    # The forward's log-softmax, the class pick (a compare of the class index with the
    # label, a select) and its row sum are one kernel; the backward's softmax, the
    # one-hot select and the scale another.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 100)).astype("float32")
    label = oar.to_tensor(rng.integers(0, 100, 64).astype("int64"))
    fwd, bwd = compiled_matches_eager(lambda t, lb: F.cross_entropy(t, lb, ignore_index=5), x, label)
    for text in (fwd, bwd):
        # no [64, 1] or [64, 100] op outside the kernels: only the 0-D denominator's
        # where(D == 0, 1, D) and the integer labels' compare (its count) stay kernel calls
        for op in ("where", "equal", "not_equal", "log", "exp", "max"):
            assert f'op_name = "pd_op.{op}"}} : (tensor<64x1' not in text, text
        assert "kernel.compiled_kernel" in text, text
    assert fwd.count("kernel.compiled_kernel") <= 3, fwd
    assert bwd.count("kernel.compiled_kernel") <= 2, bwd


def test_bfloat16_keeps_the_op():
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((4, 5)).astype("float32")).astype("bfloat16")
    label = oar.to_tensor(np.array([0, 1, 2, 3], dtype="int64"))
    fn = lambda t, lb: F.cross_entropy(t, lb)  # noqa: E731
    static = oar.jit.to_static(fn, backend="CINN")
    np.testing.assert_allclose(static(x, label).astype("float32").numpy(), fn(x, label).astype("float32").numpy(),
                               rtol=1e-2)
    assert '"pd_op.cross_entropy"' in str(static.concrete_programs[-1].executed_program)


class Classifier(oar.nn.Layer):
    """Two linear layers and GELU; the loss (hard labels, smoothing) is part of forward."""

    def __init__(self):
        super().__init__()
        self.l1 = oar.nn.Linear(16, 32)
        self.l2 = oar.nn.Linear(32, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.l2(F.gelu(self.l1(x))), y, label_smoothing=0.05)


def train(mode, steps=20):
    oar.seed(0)
    net = Classifier()
    fn = net if mode == "eager" else oar.jit.to_static(net, backend="CINN" if mode == "cinn" else None)
    opt = oar.optimizer.Adam(learning_rate=5e-3, parameters=net.parameters())
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = oar.to_tensor(rng.standard_normal((32, 16)).astype("float32"))
        y = oar.to_tensor(rng.integers(0, 10, 32).astype("int64"))
        loss = fn(x, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    return np.array(losses), [p.numpy().copy() for p in net.parameters()], fn


def test_a_classifier_trains_the_same_under_cinn():
    static_l, static_p, _ = train("static")
    cinn_l, cinn_p, fn = train("cinn")
    eager_l, _, _ = train("eager")
    np.testing.assert_allclose(cinn_l, static_l, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cinn_l, eager_l, rtol=1e-5, atol=1e-5)
    for a, b in zip(cinn_p, static_p):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert cinn_l[-1] < cinn_l[0]
    cp = fn.concrete_programs[-1] if hasattr(fn, "concrete_programs") else fn.forward.concrete_programs[-1]
    assert '"pd_op.cross_entropy"' not in str(cp.executed_program)
    assert '"pd_op.cross_entropy_grad"' not in str(cp.executed_backward_program)
    assert "kernel.compiled_kernel" in str(cp.executed_program)
    assert _C.cinn.cache_stats()["fallbacks"] == 0


@pytest.mark.parametrize("bad", [10, -1, 99])
def test_an_out_of_range_label_raises_under_cinn_as_the_op(bad):
    # cross_entropy_check_labels keeps the kernel's check ahead of the fused group: a hard
    # label outside [0, C) that is not ignore_index raises the op's IndexError, in the
    # forward and when the compiled program runs again with other labels.
    rng = np.random.default_rng(4)
    x = oar.to_tensor(rng.standard_normal((6, 10)).astype("float32"), stop_gradient=False)
    good = oar.to_tensor(np.array([0, 9, 3, 5, 5, 1], dtype="int64"))
    wrong = oar.to_tensor(np.array([0, 9, bad, 5, 5, 1], dtype="int64"))
    fn = lambda t, lb: F.cross_entropy(t, lb, ignore_index=5)  # noqa: E731
    static = oar.jit.to_static(fn, backend="CINN")
    np.testing.assert_allclose(static(x, good).numpy(), fn(x, good).numpy(), rtol=2e-5)
    prog = str(static.concrete_programs[-1].executed_program)
    assert "cross_entropy_check_labels" in prog and '"pd_op.cross_entropy"' not in prog
    for call in (fn, static):
        with pytest.raises(IndexError, match=rf"cross_entropy(_check_labels)?: label value {bad} at position 2 is out of range "
                                             r"for 10 classes \(expected \[0, 10\) or ignore_index=5\)"):
            call(x, wrong)


def test_the_label_check_op():
    # out = label for int32/int64 labels (ignore_index passes); the op's error otherwise
    for dt in ("int32", "int64"):
        lab = oar.to_tensor(np.array([[0], [3], [-100]], dtype=dt))
        out = _C.ops._cross_entropy_check_labels(lab, 4, -100)
        assert out.dtype == lab.dtype and out.shape == [3, 1]
        np.testing.assert_array_equal(out.numpy(), lab.numpy())
        with pytest.raises(IndexError, match=r"label value 4 at position 1 is out of range for 4 classes"):
            _C.ops._cross_entropy_check_labels(oar.to_tensor(np.array([1, 4], dtype=dt)), 4, -100)
    empty = _C.ops._cross_entropy_check_labels(oar.to_tensor(np.zeros([0], dtype="int64")), 4, -100)
    assert empty.shape == [0]
    with pytest.raises((TypeError, RuntimeError, NotImplementedError), match="cross_entropy_check_labels"):
        _C.ops._cross_entropy_check_labels(oar.to_tensor(np.array([1.0], dtype="float32")), 4, -100)
