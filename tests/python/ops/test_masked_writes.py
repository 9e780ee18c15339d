"""x[mask] = v and x[mask] through index_put / index_get (phi_kernels/cpu/index_kernels.cc): the
one-value fill over a mask (a select on the element's bits), the offsets of a mask's true
elements (eight mask bytes a step), and index_put_ writing into x's own memory (inplace_kernel),
against NumPy on random masks of lengths around the eight-byte steps, every dtype, masks over
leading dims, and masks that are, or view, the tensor written; nonzero (the same
branch-free selection) against np.argwhere."""
import numpy as np
import pytest

import oar

RNG = np.random.default_rng(11)
LENGTHS = [0, 1, 7, 8, 9, 15, 17, 1000, 70001]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool",
          "complex64", "complex128"]


def _array(shape, dtype):
    a = RNG.standard_normal(shape) * 5
    if dtype == "bool":
        return a > 0
    if dtype.startswith("complex"):
        return (a + 1j * RNG.standard_normal(shape)).astype(dtype)
    if dtype == "bfloat16":
        return a.astype(np.float32)
    return a.astype(dtype)


def _tensor(a, dtype):
    t = oar.to_tensor(a)
    return t.astype("bfloat16") if dtype == "bfloat16" else t


def _numpy(t, dtype):
    return t.astype("float32").numpy() if dtype == "bfloat16" else t.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_fill_over_a_full_mask(dtype, n, threads):
    a = _array([n], dtype)
    if dtype == "bfloat16":  # exact in bfloat16, so NumPy's float32 reference is the same
        a = _numpy(_tensor(a, dtype), dtype)
    mask = RNG.random(n) < 0.4
    value = {"bool": True, "uint8": 7}.get(dtype, -3)
    x = _tensor(a, dtype)
    x[oar.to_tensor(mask)] = value
    want = a.copy()
    want[mask] = value
    np.testing.assert_array_equal(_numpy(x, dtype), want)
    got = x[oar.to_tensor(mask)]
    np.testing.assert_array_equal(_numpy(got, dtype), want[mask])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex128"])
def test_fill_over_leading_dims(dtype, threads):
    a = _array([37, 5, 3], dtype)
    mask = RNG.random([37, 5]) < 0.5
    for value in (1, oar.to_tensor(np.array([1]).astype(a.dtype))):
        x = _tensor(a, dtype)
        x[oar.to_tensor(mask)] = value
        want = a.copy()
        want[mask] = 1
        np.testing.assert_array_equal(_numpy(x, dtype), want)
    np.testing.assert_array_equal(_numpy(_tensor(a, dtype)[oar.to_tensor(mask)], dtype), a[mask])


def test_a_mask_that_is_the_tensor_written(threads):
    """m[m] = False and x[x[0]] = True read the whole mask before writing (NumPy does)."""
    m = RNG.random(1003) < 0.5
    t = oar.to_tensor(m)
    t[t] = False
    assert not t.numpy().any()
    t = oar.to_tensor(m)
    t[~t] = True
    assert t.numpy().all()
    b = np.array([[True, True, False], [False, True, True], [True, False, False]])
    x = oar.to_tensor(b)
    x[x[:, 0]] = False  # a view of x's column 0: copied by contiguous()
    want = b.copy()
    want[b[:, 0].copy()] = False
    np.testing.assert_array_equal(x.numpy(), want)
    b = np.array([[True, True], [False, True]])
    x = oar.to_tensor(b)
    x[x[0]] = False  # row 0 is the mask and is written first: row 1 must still be written
    want = b.copy()
    want[b[0].copy()] = False
    np.testing.assert_array_equal(x.numpy(), want)


def test_writes_land_in_the_tensor_and_its_views():
    """The in-place write keeps x's memory: a view taken before sees it, and a view written
    into writes its base."""
    a = RNG.standard_normal([64, 64]).astype(np.float32)
    x = oar.to_tensor(a)
    before = x[3:5]
    mask = a > 0
    x[oar.to_tensor(mask)] = 0.0
    want = np.where(mask, 0, a)
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(before.numpy(), want[3:5])
    v = x[:, 10:20]
    v[oar.to_tensor(want[:, 10:20] < 0)] = 9.0
    want[:, 10:20][want[:, 10:20] < 0] = 9.0
    np.testing.assert_array_equal(x.numpy(), want)
    x = oar.to_tensor(a)
    x[oar.to_tensor(np.array([5, 1, 5]))] = 2.0  # int rows, in place too
    want = a.copy()
    want[[5, 1, 5]] = 2.0
    np.testing.assert_array_equal(x.numpy(), want)


def test_index_put_out_of_place_and_accumulate():
    a = RNG.standard_normal([500]).astype(np.float32)
    mask = RNG.random(500) < 0.3
    x = oar.to_tensor(a)
    y = oar._C.ops.index_put(x, [oar.to_tensor(mask)], oar.to_tensor(np.float32(4)), False)
    np.testing.assert_array_equal(x.numpy(), a)  # the input is untouched
    np.testing.assert_array_equal(y.numpy(), np.where(mask, 4, a))
    z = oar._C.ops.index_put(x, [oar.to_tensor(mask)], oar.to_tensor(np.float32(4)), True)
    np.testing.assert_allclose(z.numpy(), np.where(mask, a + 4, a), rtol=1e-6)


def test_gradient_through_a_masked_fill():
    a = RNG.standard_normal([6, 7])
    mask = a > 0.2
    leaf = oar.to_tensor(a, stop_gradient=False)
    x = leaf * 2.0
    x[oar.to_tensor(mask)] = 0.0
    w = RNG.standard_normal([6, 7])
    (x * oar.to_tensor(w)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.where(mask, 0.0, 2 * w), atol=1e-12)


def test_bad_masks():
    x = oar.zeros([4, 5])
    with pytest.raises((IndexError, ValueError, RuntimeError), match=r"\[5, 5\]"):
        x[oar.ones([5, 5], dtype="bool")] = 1.0
    with pytest.raises((IndexError, ValueError, RuntimeError), match="index_put"):
        oar._C.ops.index_put_(x, [oar.ones([4, 6], dtype="bool")], oar.to_tensor(1.0), False)
    with pytest.raises((IndexError, ValueError, RuntimeError)):
        x[oar.ones([4, 5], dtype="bool")] = oar.ones([3])  # 20 positions, 3 values


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int8", "bool"])
@pytest.mark.parametrize("shape", [[], [1], [9], [0, 3], [3, 0], [5, 1], [4, 7], [3, 4, 5], [2, 3, 1, 6]],
                         ids=lambda s: "x".join(map(str, s)) or "scalar")
def test_nonzero(dtype, shape):
    for density, last in [(0.4, None), (0.0, None), (1.0, None), (0.3, 0), (0.3, 1)]:
        a = (RNG.random(shape) < density).astype(np.float64) * RNG.standard_normal(shape)
        if dtype.startswith("float") and a.size:
            a.flat[0] = -0.0  # a zero
            if a.size > 2:
                a.flat[1] = np.nan  # nonzero
        if last is not None and a.size:
            a.flat[-1] = last
        a = (a != 0) if dtype == "bool" else a.astype(dtype)
        got = oar.nonzero(oar.to_tensor(a)).numpy()
        want = np.argwhere(a)
        assert got.shape == want.shape, (a, got)
        np.testing.assert_array_equal(got, want)
