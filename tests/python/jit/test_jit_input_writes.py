"""Note [Input writes] (docs/notes/jit.md): in-place writes into the inputs and the state
of a to_static function (x.add_(y), x.copy_(v), paddle.assign(v, output=x), updates under
no_grad) are kept by the program and written into the caller's tensors on every call, as
eager mode does; with backend='CINN' an elementwise group computes them in place."""
import numpy as np
import pytest

import oar
from oar import _C

BACKENDS = [None, pytest.param("CINN", marks=pytest.mark.skipif(not oar.is_compiled_with_cinn(),
                                                                 reason="built without LLVM 19"))]


@pytest.fixture(autouse=True)
def _cinn_cache(tmp_path):
    old = oar.get_flags(["FLAGS_cinn_cache_dir", "FLAGS_prim_all"])
    oar.set_flags({"FLAGS_cinn_cache_dir": str(tmp_path / "cinn")})
    yield
    oar.set_flags(old)


def _t(a):
    return oar.to_tensor(np.asarray(a))


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _eager_and_static(fn, make_args, backend, calls=3):
    """Runs fn eagerly and converted on equal copies of the arguments `calls` times; returns
    the per-call (outputs, arguments) of both as float64 arrays."""
    sf = oar.jit.to_static(fn, backend=backend)
    ea, sa = make_args(), make_args()
    got = []
    for _ in range(calls):
        before = [t._version for t in sa]
        eo, so = fn(*ea), sf(*sa)
        eo = eo if isinstance(eo, (list, tuple)) else [eo]
        so = so if isinstance(so, (list, tuple)) else [so]
        got.append(([o.numpy().copy() for o in eo], [t.numpy().copy() for t in ea], [o.numpy().copy() for o in so],
                    [t.numpy().copy() for t in sa], before, [t._version for t in sa]))
    return got


@pytest.mark.parametrize("backend", BACKENDS)
def test_add_inplace_matches_eager_over_calls(backend):
    def f(x, y):
        x.add_(y)
        return x * 2.0
    xn, yn = _rand(3, 5), _rand(3, 5, seed=1)
    got = _eager_and_static(f, lambda: [_t(xn), _t(yn)], backend)
    ref = xn.copy()
    for k, (eo, ea, so, sa, before, after) in enumerate(got):
        ref = ref + yn  # float64 NumPy reference of the input after k+1 calls
        np.testing.assert_allclose(sa[0], ref, rtol=1e-12)
        np.testing.assert_allclose(ea[0], ref, rtol=1e-12)
        np.testing.assert_allclose(so[0], ref * 2.0, rtol=1e-12)
        np.testing.assert_array_equal(sa[1], yn)  # the other input is not written
        assert after[0] > before[0], "the written input's version must grow"
        assert after[1] == before[1], "an input that is only read keeps its version"


@pytest.mark.parametrize("backend", BACKENDS)
def test_copy_assign_and_read_after_overwrite(backend):
    def f(p, m, g):
        old = p * 1.0                # read before the write
        p.copy_(p - 0.1 * g)         # Paddle's p.copy_(new)
        oar.assign(m * 0.5 + g, output=m)
        return old, p + m            # reads the new values after the writes
    pn, mn, gn = _rand(4, 6), _rand(4, 6, seed=1), _rand(4, 6, seed=2)
    got = _eager_and_static(f, lambda: [_t(pn), _t(mn), _t(gn)], backend)
    p, m = pn.copy(), mn.copy()
    for eo, ea, so, sa, before, after in got:
        old = p.copy()
        p = p - 0.1 * gn
        m = m * 0.5 + gn
        np.testing.assert_allclose(sa[0], p, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(sa[1], m, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(so[0], old, rtol=1e-12)
        np.testing.assert_allclose(so[1], p + m, rtol=1e-12, atol=1e-14)
        for e, s in zip(ea, sa):
            np.testing.assert_allclose(s, e, rtol=1e-12, atol=1e-14)
        assert after[0] > before[0] and after[1] > before[1] and after[2] == before[2]


@pytest.mark.parametrize("backend", BACKENDS)
def test_scale_inplace_float32_odd_shape(backend):
    def f(x):
        x.scale_(0.5)
        x.add_(oar.ones_like(x))
        return x.sum()
    xn = _rand(7, 13).astype("float32")
    got = _eager_and_static(f, lambda: [_t(xn)], backend)
    ref = xn.astype("float64")
    for eo, ea, so, sa, before, after in got:
        ref = ref * 0.5 + 1.0
        np.testing.assert_allclose(sa[0], ref, rtol=1e-6)
        np.testing.assert_allclose(so[0], ref.sum(), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_size_input_write(backend):
    def f(x, y):
        x.copy_(x + y)
        return x
    got = _eager_and_static(f, lambda: [_t(np.zeros((0, 3))), _t(np.zeros((0, 3)))], backend)
    for eo, ea, so, sa, before, after in got:
        assert sa[0].shape == (0, 3) and so[0].shape == (0, 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cross_element_write_is_correct(backend):
    # The new value reads other elements of the written input (a reversal and a row sum):
    # the program must not compute it over the memory it still reads.
    def f(x):
        x.copy_(oar.flip(x, [1]) + x.sum(axis=1, keepdim=True))
        return x
    xn = _rand(5, 9)
    got = _eager_and_static(f, lambda: [_t(xn)], backend)
    ref = xn.copy()
    for eo, ea, so, sa, before, after in got:
        ref = ref[:, ::-1] + ref.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(sa[0], ref, rtol=1e-10)
        np.testing.assert_allclose(so[0], ref, rtol=1e-10)


def test_cinn_elementwise_group_writes_in_place():
    if not oar.is_compiled_with_cinn():
        pytest.skip("built without LLVM 19")

    def f(p, g):
        p.copy_(p * 0.9 - g * 0.1)
        return p
    p, g = _t(_rand(64, 33)), _t(_rand(64, 33, seed=1))
    sf = oar.jit.to_static(f, backend="CINN")
    ptr = p.data_ptr()
    sf(p, g)  # (an output kept alive shares p's memory: the next call would copy instead)
    out = sf(p, g)
    assert p.data_ptr() == ptr
    # The group computed the new value in p's memory: the output shares it (no copy).
    assert out.data_ptr() == ptr
    assert "compiled_kernel" in str(sf.concrete_programs[-1].executed_program)


def test_same_tensor_twice_is_a_clear_error():
    def f(x, y):
        x.add_(1.0)
        return y * 1.0
    t = _t(_rand(3))
    with pytest.raises(Exception, match="same tensor passed|modified in place"):
        oar.jit.to_static(f)(t, t)
    sf = oar.jit.to_static(f)
    sf(_t(_rand(3)), _t(_rand(3)))  # traced with separate tensors; the cached program then refuses
    with pytest.raises(ValueError, match="shares its memory"):
        sf(t, t)


def test_view_write_is_a_clear_error():
    def f(x):
        v = x[0:2]
        v.add_(1.0)
        return x * 1.0
    x = _t(_rand(4, 3))
    before = x.numpy()
    with pytest.raises(Exception, match="view"):
        oar.jit.to_static(f)(x)
    np.testing.assert_array_equal(x.numpy(), before)  # the trace's write was undone


def test_parameter_update_under_no_grad():
    lin = oar.nn.Linear(4, 3)
    w0 = lin.weight.numpy().astype("float64")

    class Step(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, g):
            with oar.no_grad():
                self.lin.weight.add_(g * -0.5)
            return self.lin.weight * 1.0

    net = oar.jit.to_static(Step())
    gn = _rand(4, 3).astype("float32")
    with oar.no_grad():
        for k in range(1, 4):
            v = lin.weight._version
            out = net(_t(gn))
            ref = w0 - 0.5 * k * gn
            np.testing.assert_allclose(lin.weight.numpy(), ref, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
            assert lin.weight._version > v


def test_trainable_parameter_write_under_grad_is_an_error():
    lin = oar.nn.Linear(4, 3)

    class Bad(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            self.lin.weight.copy_(self.lin.weight * 2.0)
            return self.lin(x)

    w = lin.weight.numpy().copy()  # (numpy() of a CPU tensor shares its memory)
    with pytest.raises(Exception, match=r"shape \[4, 3\].*copy_"):
        oar.jit.to_static(Bad())(_t(_rand(2, 4).astype("float32")))
    np.testing.assert_array_equal(lin.weight.numpy(), w)


def test_jit_save_load_keeps_the_write(tmp_path):
    def f(x, y):
        x.add_(y)
        return x * 1.0
    sf = oar.jit.to_static(f, input_spec=[oar.static.InputSpec([2, 3], "float64"),
                                           oar.static.InputSpec([2, 3], "float64")])
    path = str(tmp_path / "m")
    oar.jit.save(sf, path)
    loaded = oar.jit.load(path)
    xn, yn = _rand(2, 3), _rand(2, 3, seed=1)
    x = _t(xn)
    out = loaded(x, _t(yn))
    out = out[0] if isinstance(out, (list, tuple)) else out
    np.testing.assert_allclose(x.numpy(), xn + yn, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), xn + yn, rtol=1e-12)


def _adam_ops_inplace(p, g, m, v):
    m.copy_(m * 0.9 + g * 0.1)
    v.copy_(v * 0.999 + g * g * 0.001)
    mh = m * (1.0 / (1.0 - 0.9 ** 10))
    vh = v * (1.0 / (1.0 - 0.999 ** 10))
    p.copy_(p - mh * 1e-3 / (oar.sqrt(vh) + 1e-8))


@pytest.mark.parametrize("backend", BACKENDS)
def test_adam_as_ops_matches_adam_kernel(backend):
    rng = np.random.default_rng(3)
    pn, mn = rng.standard_normal((37, 65)).astype("float32"), rng.standard_normal((37, 65)).astype("float32") * .1
    vn = np.abs(rng.standard_normal((37, 65))).astype("float32") * 0.01
    gs = [rng.standard_normal((37, 65)).astype("float32") for _ in range(3)]
    step = oar.jit.to_static(_adam_ops_inplace, backend=backend)
    p, m, v = _t(pn), _t(mn), _t(vn)
    kp, km, kv = _t(pn), _t(mn), _t(vn)
    rp, rm, rv = pn.astype("float64"), mn.astype("float64"), vn.astype("float64")
    for gn in gs:
        step(p, _t(gn), m, v)
        _C._adam_update([kp], [_t(gn)], [km], [kv], [1e-3], [0.0], 0.9, 0.999, 1e-8, False, 10)
        g64 = gn.astype("float64")
        rm = rm * 0.9 + g64 * 0.1
        rv = rv * 0.999 + g64 * g64 * 0.001
        rp = rp - (rm / (1 - 0.9 ** 10)) * 1e-3 / (np.sqrt(rv / (1 - 0.999 ** 10)) + 1e-8)
        for a, b, r in ((p, kp, rp), (m, km, rm), (v, kv, rv)):
            np.testing.assert_allclose(a.numpy(), r, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
