"""Creation ops (arange, linspace, eye) against NumPy and the random ops (uniform,
gaussian, randint, randperm) for reproducibility, state round trips and
distribution sanity. See paddle_core/tensor/generator.h for the generator."""
import pickle

import numpy as np
import oar
import pytest


# ---------------------------------------------------------------- arange / linspace / eye
@pytest.mark.parametrize("args, dtype", [
    ((5,), None), ((2, 9), None), ((0, 10, 3), None), ((10, 0, -3), None), ((-3, 3, 1), "int32"),
    ((0.0, 1.0, 0.1), None), ((1.0, -1.0, -0.25), "float64"), ((0, 1, 0.3), "float32"),
    ((2.5, 7), "float64"), ((0, 5, 2), "float32"), ((3, 3), None), ((-1e9, 1e9, 3e8), "int64"),
])
def test_arange_matches_numpy(args, dtype):
    out = oar.arange(*args, dtype=dtype)
    ref = np.arange(*args, dtype=np.dtype(dtype) if dtype else None)
    if dtype is None:
        expect = "int64" if all(isinstance(a, int) for a in args) else "float32"
        assert out.dtype.name == expect
    assert out.shape == list(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.astype(out.numpy().dtype), rtol=1e-6, atol=1e-6)


def test_arange_dtype_and_errors():
    assert oar.arange(5, dtype="float64").dtype.name == "float64"
    with pytest.raises(ValueError, match="arange.*step"):
        oar.arange(0, 5, 0)
    with pytest.raises(ValueError, match="arange"):
        oar.arange(0, 5, -1)  # Paddle: the step must point towards end
    with pytest.raises(TypeError, match="arange"):
        oar.arange(0, 5, 1, dtype="bool")


@pytest.mark.parametrize("start, stop, num, dtype", [
    (0, 1, 5, "float32"), (-2.5, 7.0, 11, "float64"), (3, -3, 7, "float32"), (1, 1, 4, "float64"),
    (0, 10, 4, "int64"), (5, 9, 1, "float32"), (0, 1, 1000, "float64"),
])
def test_linspace_matches_numpy(start, stop, num, dtype):
    out = oar.linspace(start, stop, num, dtype=dtype)
    ref = np.linspace(start, stop, num)
    assert out.dtype.name == dtype and out.shape == [num]
    if dtype == "int64":
        ref = ref.astype(np.int64)
        np.testing.assert_array_equal(out.numpy(), ref)
    else:
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)
        if num > 1:
            assert out.numpy()[-1] == np.asarray(stop, dtype)  # last value exactly stop


def test_linspace_errors():
    for num in (0, -2):
        with pytest.raises(ValueError, match="linspace"):
            oar.linspace(0, 1, num)


@pytest.mark.parametrize("rows, cols, dtype", [(3, None, "float32"), (2, 5, "float64"),
                                               (4, 2, "int64"), (0, 3, "float32"), (3, 3, "bool")])
def test_eye_matches_numpy(rows, cols, dtype):
    out = oar.eye(rows, cols, dtype=dtype)
    np.testing.assert_array_equal(out.numpy(), np.eye(rows, cols, dtype=np.dtype(dtype)))


def test_eye_errors():
    with pytest.raises(ValueError, match="eye"):
        oar.eye(-1)
    with pytest.raises(ValueError, match="eye"):
        oar.eye(2, -3)


# ---------------------------------------------------------------- random
RANDOM_FNS = {
    "uniform": lambda: oar.uniform([1000], min=-2.0, max=3.0),
    "rand": lambda: oar.rand([7, 3], dtype="float64"),
    "randn": lambda: oar.randn([1001]),
    "normal": lambda: oar.normal(1.0, 2.0, [10]),
    "randint": lambda: oar.randint(-5, 5, [100]),
    "randperm": lambda: oar.randperm(50),
}


@pytest.mark.parametrize("name", sorted(RANDOM_FNS))
def test_seed_makes_runs_reproducible(name):
    fn = RANDOM_FNS[name]
    oar.seed(123)
    a, b = fn().numpy(), fn().numpy()
    oar.seed(123)
    c, d = fn().numpy(), fn().numpy()
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, d)
    assert not np.array_equal(a, b)  # the stream advances between calls
    oar.seed(124)
    assert not np.array_equal(fn().numpy(), a)


def test_rng_state_round_trip():
    oar.seed(7)
    oar.rand([5])
    state = oar.get_rng_state()
    a = [oar.randn([4]).numpy(), oar.randint(0, 100, [6]).numpy(), oar.randperm(9).numpy()]
    oar.rand([1000])
    oar.set_rng_state(pickle.loads(pickle.dumps(state)))  # the state is picklable
    b = [oar.randn([4]).numpy(), oar.randint(0, 100, [6]).numpy(), oar.randperm(9).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    with pytest.raises((ValueError, TypeError), match="set_rng_state"):
        oar.set_rng_state("not a state")


def test_results_do_not_depend_on_thread_count():
    n = oar.get_num_threads()
    try:
        oar.seed(5)
        a = oar.randn([200000]).numpy()
        oar.set_num_threads(1)
        oar.seed(5)
        b = oar.randn([200000]).numpy()
    finally:
        oar.set_num_threads(n)
    np.testing.assert_array_equal(a, b)


def test_local_seed_is_independent_of_global_state():
    a = oar.uniform([8], seed=42).numpy()
    oar.rand([3])
    b = oar.uniform([8], seed=42).numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_uniform_distribution(dtype):
    oar.seed(1)
    x = oar.uniform([100000], dtype=dtype, min=-1.0, max=3.0).astype("float64").numpy()
    assert x.min() >= -1.0 and x.max() <= 3.0
    assert abs(x.mean() - 1.0) < 0.02
    assert abs(x.std() - 4 / np.sqrt(12)) < 0.02
    hist = np.histogram(x, bins=8, range=(-1, 3))[0] / len(x)
    assert np.all(np.abs(hist - 1 / 8) < 0.01)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gaussian_distribution(dtype):
    oar.seed(2)
    x = oar._C.ops.gaussian([100000], 2.0, 3.0, 0, dtype, None).numpy().astype(np.float64)
    assert x.dtype == np.float64 and np.all(np.isfinite(x))
    assert abs(x.mean() - 2.0) < 0.05 and abs(x.std() - 3.0) < 0.05
    z = (x - 2.0) / 3.0
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01
    assert abs(np.mean(z ** 3)) < 0.05  # symmetric
    assert abs(np.mean(z ** 4) - 3.0) < 0.1  # normal kurtosis


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_randint_bounds_and_uniformity(dtype):
    oar.seed(3)
    x = oar.randint(-3, 7, [100000], dtype=dtype)
    assert x.dtype.name == dtype
    v = x.numpy()
    assert v.min() == -3 and v.max() == 6
    counts = np.bincount(v + 3, minlength=10) / len(v)
    assert np.all(np.abs(counts - 0.1) < 0.01)
    assert oar.randint(10, shape=[3, 4]).shape == [3, 4]
    big = oar.randint(-(2 ** 62), 2 ** 62, [1000]).numpy()
    assert big.min() < -(2 ** 60) and big.max() > 2 ** 60


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64"])
def test_randperm_is_a_permutation(dtype):
    oar.seed(4)
    p = oar.randperm(1000, dtype=dtype)
    assert p.dtype.name == dtype
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(1000))
    assert not np.array_equal(p.numpy(), np.arange(1000))
    assert oar.randperm(0).shape == [0]
    # every position is uniformly distributed: the first element over many draws
    firsts = np.array([oar.randperm(4).numpy()[0] for _ in range(4000)])
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 4000 - 0.25) < 0.03)


def test_random_bad_inputs():
    with pytest.raises(ValueError, match="uniform"):
        oar.uniform([3], min=2.0, max=1.0)
    with pytest.raises(TypeError, match="uniform"):
        oar.uniform([3], dtype="int64")
    with pytest.raises(ValueError, match="randint"):
        oar.randint(5, 5, [3])
    with pytest.raises(TypeError, match="randint"):
        oar.randint(0, 5, [3], dtype="float32")
    with pytest.raises(ValueError, match="randperm"):
        oar.randperm(-1)
    with pytest.raises(ValueError, match="uniform"):
        oar.uniform([2, -1])
    with pytest.raises(ValueError, match="gaussian"):
        oar._C.ops.gaussian([3], 0.0, -1.0, 0, "float32", None)


def test_shapes_and_empty():
    assert oar.rand([2, 0, 3]).shape == [2, 0, 3]
    assert oar.randn([]).shape == []
    assert oar.uniform([3, 4]).dtype.name == "float32"
