"""oar.Tensor's Python surface: to_tensor dtype rules, NumPy and DLPack interop, repr,
dtype objects, flags and threads, and views sharing storage."""
import numpy as np
import pytest

import oar
from op_test_utils import tensor


# ---- to_tensor
@pytest.mark.parametrize("data, dtype, shape", [
    (1.5, "float32", []), (3, "int64", []), (True, "bool", []),
    ([1.0, 2.0], "float32", [2]), ([[1, 2], [3, 4]], "int64", [2, 2]), ([1, 2.5], "float32", [2]),
    ([True, False], "bool", [2]), ([], "float32", [0]),
    (np.array([1.0, 2.0]), "float64", [2]), (np.ones((2, 3), np.float32), "float32", [2, 3]),
    (np.array(7, np.int32), "int32", []), (np.ones(2, np.float16), "float16", [2]),
    (np.ones(2, np.int8), "int8", [2]), (np.ones(2, np.uint8), "uint8", [2]),
    (np.ones(2, np.int16), "int16", [2]), (np.zeros(2, np.bool_), "bool", [2]),
    (np.float64(0.25), "float64", []),  # a NumPy scalar keeps its dtype (Paddle 3.3)
])
def test_to_tensor_dtype_rules(data, dtype, shape):
    t = oar.to_tensor(data)
    assert t.dtype.name == dtype and t.shape == shape
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, dtype=t.numpy().dtype))


def test_to_tensor_arguments():
    t = oar.to_tensor([1, 2], dtype="float64", stop_gradient=False)
    assert t.dtype == oar.float64 and not t.stop_gradient and t.is_leaf
    assert oar.to_tensor([1.5, 2.5], dtype=oar.int32).tolist() == [1, 2]
    assert oar.to_tensor([1.0], dtype=np.float16).dtype == oar.float16
    assert oar.to_tensor(np.ones(2), dtype="bfloat16").dtype == oar.bfloat16


def test_to_tensor_copies_its_input():
    a = np.array([1.0, 2.0])
    t = oar.to_tensor(a)
    a[0] = 100.0
    assert t.tolist() == [1.0, 2.0]
    u = oar.to_tensor(t)  # from a Tensor: a copy, stop_gradient=True
    assert not u._share_storage_with(t) and u.tolist() == [1.0, 2.0]
    v = oar.to_tensor(np.arange(12.0).reshape(3, 4)[:, ::2])  # non-contiguous source
    assert v.tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]


def test_to_tensor_bad_inputs():
    with pytest.raises(ValueError):  # ragged (Paddle raises ValueError too)
        oar.to_tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="to_tensor"):
        oar.to_tensor(["a", "b"])
    with pytest.raises(TypeError, match="uint32"):
        oar.to_tensor(np.ones(2, np.uint32))
    with pytest.raises(TypeError, match="unknown dtype 'float128'"):
        oar.to_tensor([1.0], dtype="float128")


def test_default_dtype():
    assert oar.get_default_dtype() == "float32"
    oar.set_default_dtype("float64")
    try:
        assert oar.to_tensor(1.5).dtype == oar.float64
        assert (tensor([1, 2], "int64") * 0.5).dtype == oar.float64
    finally:
        oar.set_default_dtype("float32")
    assert oar.to_tensor(1.5).dtype == oar.float32


# ---- NumPy interop
def test_numpy_is_a_copy_as_paddle():
    # Note [numpy() copies]: Paddle's numpy() is a deep copy, so a snapshot taken before
    # an in-place update keeps the old values, and writing the array leaves the tensor.
    t = tensor([[1.0, 2.0], [3.0, 4.0]])
    a = t.numpy()
    a[0, 1] = 42.0
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    t.scale_(2.0)
    assert a.tolist() == [[1.0, 42.0], [3.0, 4.0]]
    assert a.ctypes.data != t.data_ptr()
    b = np.asarray(t)  # __array__ copies too (copy=None)
    b[0, 0] = -1.0
    assert t.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    # A weight snapshot across an optimizer step (the pattern the view broke).
    lin = oar.nn.Linear(3, 2)
    w0 = lin.weight.numpy()
    opt = oar.optimizer.SGD(learning_rate=0.5, parameters=lin.parameters())
    lin(oar.ones([4, 3])).sum().backward()
    opt.step()
    assert not np.allclose(w0, lin.weight.numpy())


def test_numpy_view_when_asked_for():
    t = tensor([[1.0, 2.0], [3.0, 4.0]])
    v = np.asarray(t, copy=False)  # NumPy 2's protocol: never a copy
    v[0, 1] = 42.0  # writes through to the tensor
    assert t.tolist() == [[1.0, 42.0], [3.0, 4.0]]
    t.scale_(2.0)  # and the other way round
    assert v[1, 0] == 6.0
    assert v.ctypes.data == t.data_ptr() and np.shares_memory(v, t._numpy_view())
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(t, dtype=np.float64, copy=False)


def test_numpy_of_views_and_lifetime():
    t = tensor(np.arange(6.0).reshape(2, 3), "float64")
    a = t.transpose([1, 0]).numpy()  # a copy of a strided view is C-contiguous
    assert a.shape == (3, 2) and a.strides == (16, 8)
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3).T)
    v = np.asarray(t.transpose([1, 0]), copy=False)  # the view keeps the strides
    assert v.strides == (8, 24) and np.shares_memory(v, np.asarray(t, copy=False))
    b = tensor([1.0, 2.0])._numpy_view()  # the array keeps the storage alive
    assert b.tolist() == [1.0, 2.0]
    assert tensor(np.ones((0, 3))).numpy().shape == (0, 3)


def test_array_protocol():
    t = tensor([1.0, 2.0])
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError):  # __array_ufunc__ = None: NumPy defers to Tensor (Paddle)
        np.add(t, 1)
    assert isinstance(np.float32(1) + t, type(t))
    bf = tensor([1.0, 2.5], "bfloat16")
    assert bf.numpy().dtype == np.uint16  # raw bits, as Paddle


def test_item_tolist_and_conversions():
    assert tensor([2.5]).item() == 2.5 and isinstance(tensor([2.5]).item(), float)
    assert tensor(7, "int64").item() == 7 and isinstance(tensor(7, "int64").item(), int)
    assert tensor(True, "bool").item() is True
    assert tensor([1.5], "bfloat16").item() == 1.5
    assert tensor([[1, 2], [3, 4]], "int32").tolist() == [[1, 2], [3, 4]]
    assert tensor([0.5, 1.5], "bfloat16").tolist() == [0.5, 1.5]
    assert float(tensor([3.0])) == 3.0 and int(tensor([3.0])) == 3
    assert bool(tensor([1.0])) and not bool(tensor(0.0))
    with pytest.raises(ValueError, match="only a tensor with one element"):
        tensor([1.0, 2.0]).item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tensor([1.0, 2.0]))


@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 3), (1,)])
def test_item_with_flat_and_multi_indices_matches_numpy(shape):
    a = np.random.default_rng(0).standard_normal(shape)
    t = tensor(a, "float64")
    for flat in list(range(a.size)) + [-1, -a.size]:
        assert t.item(flat) == a.item(flat)
    for multi in np.ndindex(*shape):
        assert t.item(*multi) == a.item(*multi) == t.item(multi)
    with pytest.raises(IndexError, match="item: flat index"):
        t.item(a.size)
    with pytest.raises(IndexError, match="item: got"):
        t.item(*([0] * (len(shape) + 1)))
    assert len(tensor(np.ones((4, 2)))) == 4


# ---- repr
def test_repr_matches_paddle():
    t = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert repr(t) == ("Tensor(shape=[2, 3], dtype=float32, place=Place(cpu), stop_gradient=True,\n"
                       "       [[1., 2., 3.],\n"
                       "        [4., 5., 6.]])")
    assert str(t) == repr(t)
    assert repr(tensor([1, 2], "int64", stop_gradient=False)) == (
        "Tensor(shape=[2], dtype=int64, place=Place(cpu), stop_gradient=False,\n       [1, 2])")
    assert repr(oar.to_tensor(1.0)) == (
        "Tensor(shape=[], dtype=float32, place=Place(cpu), stop_gradient=True,\n       1.)")
    assert repr(oar.to_tensor(True)).endswith("stop_gradient=True,\n       True)")
    assert repr(tensor([0.5, 1.0], "bfloat16")).endswith(
        "dtype=bfloat16, place=Place(cpu), stop_gradient=True,\n       [0.50000000, 1.        ])")


def test_repr_float_digits_match_paddle():
    assert repr(tensor([0.5, 0.25])).endswith("[0.50000000, 0.25000000])")
    # The example of paddle.to_tensor's docs: items padded to the widest one.
    assert repr(tensor([0.5, 1.0])) == ("Tensor(shape=[2], dtype=float32, place=Place(cpu), "
                                        "stop_gradient=True,\n       [0.50000000, 1.        ])")
    assert repr(tensor(0.5, "float64")).endswith("\n       0.50000000)")
    assert repr(tensor([1.5, 2.0], "float16")).endswith("[1.50000000, 2.        ])")


def test_repr_pads_signs_and_widths_like_paddle():
    # paddle.randn's docs: a leading space on non-negative items when some item is negative.
    t = tensor([[-0.29270014, -0.02925120, -1.07807338], [1.19966674, -0.46673676, -0.18050613]])
    assert repr(t).endswith("\n       [[-0.29270014, -0.02925120, -1.07807338],\n"
                            "        [ 1.19966674, -0.46673676, -0.18050613]])")
    assert repr(tensor([1, 10, -3], "int32")).endswith("[ 1, 10, -3])")
    assert repr(tensor([True, False], "bool")).endswith("[True , False])")
    assert repr(tensor([-np.inf, np.nan, 2.0])).endswith("[-inf.,  nan ,  2.  ])")
    assert repr(tensor(np.zeros((0, 3)))).endswith("stop_gradient=True,\n       [])")


def test_repr_nested_and_wrapped_layout():
    r = repr(tensor(np.arange(8.0).reshape(2, 2, 2)))
    # Blocks of a 3-D tensor are separated by one blank line (ndim - 1 newlines).
    assert r.endswith("\n       [[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n"
                      "         [6., 7.]]])")
    lines = repr(tensor(np.arange(30.0) / 7, "float64")).split("\n")[1:]
    assert len(lines) == 5 and all(len(x) <= 80 for x in lines)
    assert lines[0] == "       [0.        , 0.14285714, 0.28571429, 0.42857143, 0.57142857, 0.71428571,"
    assert lines[1].startswith("        0.85714286, 1.        ,")


def test_set_printoptions():
    t = tensor([0.123456789, 2.0], "float64")
    try:
        oar.set_printoptions(precision=4)
        assert repr(t).endswith("[0.1235, 2.    ])")
        oar.set_printoptions(sci_mode=True)
        assert repr(t).endswith("[1.2346e-01, 2.0000e+00])")
        oar.set_printoptions(threshold=3, edgeitems=1, sci_mode=False)
        assert repr(tensor(np.arange(5.0))).endswith("[0., ..., 4.])")
        with pytest.raises(TypeError, match="set_printoptions: precision must be int"):
            oar.set_printoptions(precision=2.5)
    finally:
        oar.set_printoptions(precision=8, threshold=1000, edgeitems=3, sci_mode=False)
    assert repr(t).endswith("[0.12345679, 2.        ])")


def test_repr_summarizes_large_tensors():
    r = repr(tensor(np.zeros(5000)))
    assert "..." in r and len(r) < 300


# ---- DLPack
def test_dlpack_to_numpy_shares_memory():
    t = tensor(np.arange(6.0).reshape(2, 3), "float64")
    a = np.from_dlpack(t)
    assert a.shape == (2, 3) and a.dtype == np.float64 and a.ctypes.data == t.data_ptr()
    t.add_(tensor([1.0], "float64"))  # in-place in Oar is seen by NumPy
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3) + 1)
    v = np.from_dlpack(t.transpose([1, 0]))  # strides travel too
    np.testing.assert_array_equal(v, a.T)


def test_dlpack_to_numpy_is_writeable():
    t = tensor([1.0, 2.0])
    a = np.from_dlpack(t)  # NumPy asks for a versioned (DLPack 1.x) capsule
    assert a.flags.writeable
    a[1] = 7.0  # NumPy's write is seen by Oar: the memory is shared
    assert t.tolist() == [1.0, 7.0]


def test_dlpack_protocol_versions():
    t = tensor([[1.0, 2.0], [3.0, 4.0]], "float64")
    assert t.__dlpack_device__() == (1, 0)  # (kDLCPU, 0)
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 3)))
    assert '"dltensor"' in repr(t.__dlpack__())  # consumers without max_version: legacy
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    assert '"dltensor"' in repr(oar.utils.dlpack.to_dlpack(t))  # as Paddle's to_dlpack
    # Both capsule kinds import, sharing memory.
    for cap in (t.__dlpack__(max_version=(1, 0)), t.__dlpack__()):
        u = oar.utils.dlpack.from_dlpack(cap)
        assert u.data_ptr() == t.data_ptr() and u.tolist() == t.tolist()
    v = oar.utils.dlpack.from_dlpack(t.transpose([1, 0]).__dlpack__(max_version=(1, 0)))
    assert v.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    with pytest.raises(ValueError, match="unconsumed 'dltensor' or 'dltensor_versioned'"):
        oar.utils.dlpack.from_dlpack(object())
    # Not a Tensor: an exception naming the function and the argument (None crashed before).
    for bad in (None, [1.0], np.ones(2)):
        with pytest.raises(TypeError, match="to_dlpack: argument 'x' must be a Tensor"):
            oar.to_dlpack(bad)
    with pytest.raises(TypeError):  # the private two-tensor methods refuse None too
        t._copy_from(None)
    with pytest.raises(TypeError):
        t._share_storage_with(None)


def test_dlpack_copy_device_and_stream_arguments():
    t = tensor([1.0, 2.0])
    c = np.from_dlpack(t, copy=True)  # an exported copy (flag IS_COPIED)
    c[0] = -5.0
    assert t.tolist() == [1.0, 2.0] and c.ctypes.data != t.data_ptr()
    assert np.from_dlpack(t, copy=False).ctypes.data == t.data_ptr()
    assert np.from_dlpack(t, device="cpu").ctypes.data == t.data_ptr()
    with pytest.raises(BufferError, match="cannot export a CPU tensor to device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream must be None"):
        t.__dlpack__(stream=1)
    with pytest.raises(ValueError, match="max_version must be a"):
        t.__dlpack__(max_version=(1, 0, 0))


def test_dlpack_from_read_only_numpy_copies():
    a = np.arange(4.0)
    a.setflags(write=False)
    t = oar.utils.dlpack.from_dlpack(a)  # versioned capsule flagged read-only
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and t.data_ptr() != a.ctypes.data
    t.add_(tensor([1.0], "float64"))  # writing the copy leaves NumPy's memory alone
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_dlpack_from_legacy_only_producer():
    class Legacy:  # a producer from before DLPack 1.x: __dlpack__ has no max_version
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return oar.utils.dlpack.to_dlpack(self.t)

    t = tensor([3.0, 4.0])
    u = oar.utils.dlpack.from_dlpack(Legacy(t))
    assert u.data_ptr() == t.data_ptr() and u.tolist() == [3.0, 4.0]


def test_dlpack_keeps_memory_alive():
    import gc
    t = tensor(np.arange(1000.0), "float64")
    a = np.from_dlpack(t)
    u = oar.utils.dlpack.from_dlpack(np.arange(5.0) * 2)  # the producer array is a temporary
    del t
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(1000.0))
    assert u.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    for _ in range(3):  # unconsumed capsules free their tensor when they die
        tensor([1.0]).__dlpack__(max_version=(1, 0))
        tensor([1.0]).__dlpack__()


def test_dlpack_from_numpy_shares_memory():
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    t = oar.utils.dlpack.from_dlpack(a)
    assert t.dtype == oar.float32 and t.shape == [2, 4] and t.data_ptr() == a.ctypes.data
    a[1, 1] = -1.0
    assert t.numpy()[1, 1] == -1.0
    s = oar.utils.dlpack.from_dlpack(a[:, 1::2])  # a strided NumPy view
    np.testing.assert_array_equal(s.numpy(), a[:, 1::2])
    assert oar.utils.dlpack.from_dlpack(np.ones((), np.int64)).shape == []


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32",
                                   "int64", "uint8"])
def test_dlpack_capsule_round_trip(dtype):
    t = tensor([[1, 2], [3, 4]], dtype)
    cap = oar.utils.dlpack.to_dlpack(t)
    u = oar.utils.dlpack.from_dlpack(cap)
    assert u.dtype.name == dtype and u._share_storage_with(t) is False
    assert u.data_ptr() == t.data_ptr() and u.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="unconsumed"):
        oar.utils.dlpack.from_dlpack(cap)  # a capsule is consumed once


def test_dlpack_bool_round_trip():
    a = np.from_dlpack(tensor([True, False], "bool"))
    assert a.dtype == np.bool_ and a.tolist() == [True, False]
    t = oar.utils.dlpack.from_dlpack(np.array([False, True]))
    assert t.dtype == oar.bool and t.tolist() == [False, True]


def test_dlpack_bfloat16_round_trip():
    t = tensor([1.5, -2.0], "bfloat16")
    u = oar.utils.dlpack.from_dlpack(oar.utils.dlpack.to_dlpack(t))
    assert u.dtype == oar.bfloat16 and u.tolist() == [1.5, -2.0]


# ---- dtype objects
def test_dtype_objects():
    t = tensor([1.0])
    assert t.dtype == oar.float32 and oar.float32 == oar.DataType.float32
    assert oar.float32.name == "float32" and oar.float64.itemsize == 8
    assert oar.bfloat16.is_floating_point and not oar.int32.is_floating_point
    assert oar.bool.name == "bool" and oar.dtype is oar.DataType
    assert oar.is_floating_point(t) and not oar.is_floating_point(tensor([1], "int64"))
    assert t.astype("float64").dtype == oar.float64
    assert t.astype(np.int32).dtype == oar.int32 and t.astype(oar.float16).dtype == oar.float16
    assert t.element_size() == 4
    assert oar.finfo(oar.float16).max == 65504.0 and oar.iinfo("int8").min == -128
    assert oar.finfo("bfloat16").bits == 16


@pytest.mark.parametrize("name", ["bool", "int8", "uint8", "int16", "int32", "int64", "float16",
                                  "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_dtype_and_place_are_one_object_each(name):
    """x.dtype is the named member itself and x.place one object per place (Note [One Python
    object per dtype]): identity holds and holds across tensors, so dtype checks by `is` work."""
    a, b = oar.zeros([2], dtype=name), oar.ones([3, 1], dtype=name)
    assert a.dtype is getattr(oar.DataType, name) and a.dtype is b.dtype
    assert a.dtype == b.dtype and hash(a.dtype) == hash(getattr(oar.DataType, name))
    assert a.place is b.place and a.place == oar.CPUPlace()
    assert a.astype("float64").dtype is oar.float64


@pytest.mark.parametrize("fn", [str, repr])
def test_dtype_str(fn):
    assert fn(oar.float32) == "paddle.float32"  # as Paddle prints it


# ---- flags and threads
def test_flags_round_trip():
    old = oar.get_flags("FLAGS_oar_check_nan_inf")["FLAGS_oar_check_nan_inf"]
    assert old is False
    oar.set_flags({"FLAGS_oar_check_nan_inf": True})
    try:
        assert oar.get_flags(["FLAGS_oar_check_nan_inf"]) == {"FLAGS_oar_check_nan_inf": True}
    finally:
        oar.set_flags({"FLAGS_oar_check_nan_inf": False})
    assert oar.get_flags("oar_allocator_cache_limit_mb")["FLAGS_oar_allocator_cache_limit_mb"] > 0
    with pytest.raises(RuntimeError, match="unknown flag FLAGS_no_such_flag"):
        oar.get_flags("FLAGS_no_such_flag")
    with pytest.raises(ValueError, match="FLAGS_no_such_flag"):
        oar.set_flags({"FLAGS_no_such_flag": 1})
    with pytest.raises(ValueError, match="FLAGS_oar_num_threads"):
        oar.set_flags({"FLAGS_oar_num_threads": "many"})
    with pytest.raises(TypeError, match="dict"):
        oar.set_flags(["FLAGS_oar_check_nan_inf"])


def test_set_num_threads():
    old = oar.get_num_threads()
    try:
        oar.set_num_threads(1)
        assert oar.get_num_threads() == 1
        x = tensor(np.arange(100_000.0), "float64")
        assert (x * 2.0).sum().item() == 2 * np.arange(100_000.0).sum()
    finally:
        oar.set_num_threads(old)
    with pytest.raises(ValueError, match="set_num_threads"):
        oar.set_num_threads(0)


def test_set_num_threads_reaches_openblas():
    # Debian's OpenBLAS (float64 and complex GEMMs, LAPACK) keeps its own thread count: set with
    # the pool's, so one thread means one thread there too (threads.cc)
    import ctypes
    with open("/proc/self/maps") as f:
        libs = sorted({ln.split()[-1] for ln in f if "libopenblas" in ln and ln.split()[-1].startswith("/")})
    libs = [p for p in libs if "scipy" not in p]  # numpy's and sgemm's own OpenBLAS builds aside
    if not libs:
        pytest.skip("no system OpenBLAS loaded (another BLAS serves float64)")
    get = ctypes.CDLL(libs[0]).openblas_get_num_threads
    old = oar.get_num_threads()
    a = tensor(np.eye(64), "float64")
    try:
        for n in (1, 2, 1):
            oar.set_num_threads(n)
            assert get() == n
            np.testing.assert_array_equal((a @ a).numpy(), np.eye(64))
    finally:
        oar.set_num_threads(old)


# ---- views share storage
def test_views_share_storage():
    x = tensor(np.arange(6.0).reshape(2, 3))
    t, r, e = x.transpose([1, 0]), x.reshape([3, 2]), oar.expand(x.reshape([2, 1, 3]), [2, 4, 3])
    for v in (t, r, e):
        assert v._share_storage_with(x)
    assert not t.is_contiguous() and r.is_contiguous() and e.strides == [3, 0, 1]
    x.scale_(10.0)  # writes are visible through every view
    assert t.numpy()[2, 1] == 50.0 and r.numpy()[2, 1] == 50.0 and e.numpy()[1, 3, 2] == 50.0
    assert not x.clone()._share_storage_with(x)


def test_reshape_of_non_contiguous_copies():
    x = tensor(np.arange(6.0).reshape(2, 3))
    t = x.transpose([1, 0])
    r = t.reshape([6])  # no view can express this order: a copy
    assert not r._share_storage_with(x)
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    s = t.reshape([3, 2, 1])  # this one is still a view
    assert s._share_storage_with(x)


def test_strided_slice_view():
    x = tensor(np.arange(10.0))
    s = oar._C.ops.strided_slice_view(x, [0], [1], [9], [3])
    assert s._share_storage_with(x) and s.tolist() == [1.0, 4.0, 7.0]
    assert s.offset == 1 and s.strides == [3]
    s.scale_(-1.0)  # in place through a view writes the base
    assert x.tolist()[:5] == [0.0, -1.0, 2.0, 3.0, -4.0]


def test_tensor_properties():
    x = tensor(np.zeros((2, 3, 4)))
    assert x.shape == [2, 3, 4] and x.ndim == 3 and x.dim() == 3 and x.size == 24
    assert x.numel() == 24 and x.strides == [12, 4, 1] and x.place.is_cpu_place()
    assert x.T.shape == [4, 3, 2] and x.mT.shape == [2, 4, 3]
    x.name = "w"
    assert x.name == "w"


def test_numel_and_persistable_as_paddle():
    """Tensor.numel() is paddle.numel: a 0-D int64 tensor (size stays an int), usable where an
    int is (range, indexing, arithmetic); persistable is False on a tensor, True on a
    Layer's parameter, and settable."""
    x = tensor(np.zeros((2, 3, 4)))
    n = x.numel()
    assert isinstance(n, oar.Tensor) and n.shape == [] and n.dtype.name == "int64" and int(n) == 24
    assert tensor(np.zeros((0, 3))).numel().item() == 0 and oar.to_tensor(1.0).numel().item() == 1
    assert len(range(n)) == 24 and list(range(30))[n] == 24
    assert (n * 2).item() == 48 and bool(n == 24) and isinstance(x.size, int)
    assert x.persistable is False
    x.persistable = True
    assert x.persistable is True and tensor(np.zeros(2)).persistable is False
    assert oar.nn.Linear(2, 3).weight.persistable is True


def test_format_of_zero_d_tensors_is_their_value():
    loss = oar.to_tensor(2.5)
    assert f"{loss}" == "2.5" and "{:.3f}".format(loss) == "2.500"
    assert f"{oar.to_tensor(7, 'int64'):>4d}" == "   7"
    t = oar.to_tensor([1.0, 2.0])
    assert f"{t}" == str(t)  # not 0-D: the usual printout
    with pytest.raises(TypeError):
        f"{t:.2f}"  # like Paddle (object.__format__): a spec needs a 0-D tensor


def test_tensor_subclasses_through_op_arguments_and_results():
    # Op bindings read a Tensor argument's C++ tensor without pybind11's type lookup
    # (python/csrc/py_convert.cc impl_of): subclasses still work, and an instance whose
    # __init__ skipped Tensor's is pybind11's TypeError, not a crash.
    class Skipped(oar.Tensor):
        def __init__(self):
            pass

    x = oar.to_tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="__init__"):
        oar.add(Skipped(), x)
    with pytest.raises(TypeError, match="__init__"):
        oar.add(x, Skipped())
    p = oar.create_parameter([2], "float32", default_initializer=oar.nn.initializer.Constant(3.0))
    assert oar.add(p, x).tolist() == [4.0, 5.0] and (x + p).tolist() == [4.0, 5.0]
    y = oar.add(x, 1.5)  # a Python number made a tensor beside its peer
    assert y.tolist() == [2.5, 3.5] and type(y) is oar.Tensor


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64,
                                   np.uint8, np.bool_, np.complex64, np.complex128])
def test_numpy_scalars_to_tensor_and_setitem(dtype):
    # A NumPy scalar's value, not its bytes read as another dtype (np.float32(2.5) gave 0).
    v = dtype(1) if dtype is np.bool_ else dtype(2.5) if np.dtype(dtype).kind in "fc" else dtype(7)
    t = oar.to_tensor(v)
    assert t.shape == [] and complex(t.item()) == complex(v)
    if np.dtype(dtype).kind == "c":
        return
    x = oar.zeros([2, 3])
    x[1, 2] = v
    x[0] = v
    want = np.zeros([2, 3], np.float32)
    want[1, 2] = v
    want[0] = v
    np.testing.assert_array_equal(x.numpy(), want)
