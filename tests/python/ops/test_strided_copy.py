"""The CPU copy kernel's same-dtype path (Note [Strided copies], phi_kernels/cpu/copy_kernel.cc):
what a kernel's contiguous() runs on a view (concat and stack read their inputs through it) and
what an assignment into a strided view runs. Every value must land in its place, bit for bit,
for transposes (the tiled path, ragged tiles, float's register tiles and the other element
sizes), permutations, expanded, stepped and reversed views, 0-size views, shapes large enough
to be split over the pool, and a destination that overlaps its source."""
import numpy as np
import pytest

import oar as paddle

RNG = np.random.default_rng(7)

# dtype -> numpy values of it with awkward bits: NaN payloads for the floats
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "bool",
          "complex64", "complex128"]


def _values(dtype, shape):
    n = int(np.prod(shape))
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return RNG.integers(-100, 100, shape).astype(dtype)
    if dtype.startswith("complex"):
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    bits = {"float32": np.uint32, "float64": np.uint64, "float16": np.uint16, "bfloat16": np.uint16}[dtype]
    if dtype == "bfloat16":
        v = (RNG.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        if n:
            v[::7] = 0x7F81 + (np.arange(v[::7].size) % 100).astype(np.uint16)  # signalling NaNs, payloads
        return v.reshape(shape)
    v = RNG.standard_normal(n).astype(dtype).view(bits)
    if n:
        nan = {"float32": 0x7F800001, "float64": 0x7FF0000000000001, "float16": 0x7C01}[dtype]
        v[::7] = nan + (np.arange(v[::7].size) % 100).astype(bits)
    return v.reshape(shape)


def _tensor(dtype, a):
    """A paddle tensor of `dtype` holding a's bits (a is the bit pattern for the 16-bit floats)."""
    if dtype == "bfloat16":
        return paddle.to_tensor(a.astype(np.uint16).view(np.int16)).view("bfloat16")
    if dtype in ("float16", "float32", "float64"):
        return paddle.to_tensor(a.view(dtype))
    return paddle.to_tensor(a)


def _bits(dtype, t):
    if dtype == "bfloat16":
        return t.view("int16").numpy().view(np.uint16)
    if dtype == "float16":
        return t.numpy().view(np.uint16)
    if dtype == "float32":
        return t.numpy().view(np.uint32)
    if dtype == "float64":
        return t.numpy().view(np.uint64)
    return t.numpy()


def _made_dense(view):
    """view made contiguous by a kernel's contiguous(): concat of the view alone."""
    return paddle.concat([view], axis=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(67, 45), (8, 8), (1, 33), (200, 300), (0, 5)])
def test_transpose_made_dense_keeps_every_bit(dtype, shape):
    a = _values(dtype, shape)
    got = _bits(dtype, _made_dense(_tensor(dtype, a).transpose([1, 0])))
    np.testing.assert_array_equal(got, a.T)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "complex128", "int8"])
@pytest.mark.parametrize("perm", [[0, 2, 3, 1], [3, 1, 2, 0], [0, 1, 3, 2], [2, 0, 1, 3]])
def test_permuted_4d_views(dtype, perm):
    a = _values(dtype, (3, 20, 9, 37))
    got = _bits(dtype, _made_dense(_tensor(dtype, a).transpose(perm)))
    np.testing.assert_array_equal(got, a.transpose(perm))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "bool"])
@pytest.mark.parametrize("shape,perm", [
    ((2, 3, 2, 2, 5, 33), [0, 1, 4, 2, 5, 3]),   # pixel_shuffle(2): a 2-wide innermost dim
    ((2, 5, 33, 3, 3), [0, 3, 1, 4, 2]),         # pixel_unshuffle(3)'s shape of view
    ((40, 7, 3), [1, 0, 2]),                      # 3-wide rows, the source's rows strided
    ((9, 4, 50), [2, 0, 1]),                      # 4-wide destination rows from a strided dim
    ((3, 5, 2), [2, 1, 0]),                       # every dim short: rows as they are
])
def test_short_innermost_rows_run_along_a_longer_dim(dtype, shape, perm):
    """A view whose innermost dim is short copies along the longest dim that one side steps
    through by one (Note [Strided copies]): every value lands in its place, at 1 and 2 threads."""
    a = _values(dtype, shape)
    prev = paddle.get_num_threads()
    try:
        for threads in (1, 2):
            paddle.set_num_threads(threads)
            got = _bits(dtype, _made_dense(_tensor(dtype, a).transpose(perm)))
            np.testing.assert_array_equal(got, a.transpose(perm), err_msg=f"threads={threads}")
    finally:
        paddle.set_num_threads(prev)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
def test_stepped_reversed_and_expanded_views(dtype):
    a = _values(dtype, (40, 50))
    t = _tensor(dtype, a)
    np.testing.assert_array_equal(_bits(dtype, _made_dense(t[3:37:3, 1::4])), a[3:37:3, 1::4])
    np.testing.assert_array_equal(_bits(dtype, _made_dense(t[::2].transpose([1, 0]))), a[::2].T)
    row = _values(dtype, (1, 50))
    np.testing.assert_array_equal(_bits(dtype, _made_dense(_tensor(dtype, row).expand([30, 50]))),
                                  np.broadcast_to(row, (30, 50)))
    col = _values(dtype, (30, 1))
    np.testing.assert_array_equal(_bits(dtype, _made_dense(_tensor(dtype, col).expand([30, 50]))),
                                  np.broadcast_to(col, (30, 50)))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64", "complex128"])
def test_cropped_rows_on_an_odometer(dtype, threads):
    """Rows of a cropped or stepped view (unit stride inside, the outer dims walked by an
    odometer from each pool chunk's first row): rows around the inline copy's 64 values, an
    inner dim that carries into two outer ones, chunks starting mid-walk at two threads, and
    an overlapping assignment beside them."""
    prev = paddle.get_num_threads()
    paddle.set_num_threads(threads)
    try:
        for shape, idx in [((16, 32, 36, 36), np.s_[:, :, 2:34, 2:34]), ((3, 5, 7, 70), np.s_[1:, :4, 2:, 3:67]),
                           ((2, 3, 4, 5, 80), np.s_[:, 1:, ::2, 1:4, 5:70]), ((9, 66), np.s_[1:8, 1:]),
                           ((257, 3, 130), np.s_[:, 1, 1:129]), ((40, 50, 9), np.s_[3:37:3, 1::4, 1:8])]:
            a = _values(dtype, shape)
            t = _tensor(dtype, a)
            np.testing.assert_array_equal(_bits(dtype, _made_dense(t[idx])), a[idx], err_msg=str(shape))
            np.testing.assert_array_equal(_bits(dtype, t[idx].contiguous()), a[idx], err_msg=str(shape))
        a = _values(dtype, (6, 8, 40))
        t = _tensor(dtype, a)
        t[:, :, 1:] = t[:, :, :-1]  # one storage: each row a memmove
        want = a.copy()
        want[:, :, 1:] = a[:, :, :-1]
        np.testing.assert_array_equal(_bits(dtype, t), want)
    finally:
        paddle.set_num_threads(prev)


def test_flipped_view_if_supported():
    a = RNG.standard_normal((33, 70)).astype(np.float32)
    t = paddle.to_tensor(a)
    flipped = t[::-1]  # a view with a negative stride where Oar makes one, else a copy
    np.testing.assert_array_equal(_made_dense(flipped).numpy(), a[::-1])
    np.testing.assert_array_equal(_made_dense(flipped.transpose([1, 0])).numpy(), a[::-1].T)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_whole_tiles_of_a_sliced_batched_transpose(dtype):
    """64 x 64 tiles through the buffer (Note [Transposed tiles through a buffer]: source rows
    512 values apart) with a source row stride unlike the tile's width, a batch dim outside
    the plane and ragged edges (300 rows)."""
    a = _values(dtype, (3, 300, 512))
    got = _bits(dtype, _made_dense(_tensor(dtype, a)[:, :, 3:195].transpose([0, 2, 1])))
    np.testing.assert_array_equal(got, a[:, :, 3:195].transpose(0, 2, 1))
    got = _bits(dtype, _made_dense(_tensor(dtype, a[0]).transpose([1, 0])))
    np.testing.assert_array_equal(got, a[0].T)


def test_large_transpose_split_over_threads_matches():
    a = RNG.standard_normal((1031, 517)).astype(np.float32)  # ragged in both tile directions
    paddle.set_num_threads(2) if hasattr(paddle, "set_num_threads") else None
    np.testing.assert_array_equal(_made_dense(paddle.to_tensor(a).transpose([1, 0])).numpy(), a.T)
    b = RNG.standard_normal((4, 300, 257)).astype(np.float64)
    np.testing.assert_array_equal(_made_dense(paddle.to_tensor(b).transpose([2, 0, 1])).numpy(),
                                  b.transpose(2, 0, 1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_assignment_into_a_transposed_destination(dtype):
    a = _values(dtype, (50, 70))
    dst = _tensor(dtype, np.zeros((70, 50), dtype=a.dtype))
    dst.transpose([1, 0])[:] = _tensor(dtype, a)  # a strided destination
    np.testing.assert_array_equal(_bits(dtype, dst), a.T)


def test_overlapping_source_and_destination():
    a = np.arange(40, dtype=np.float32).reshape(4, 10)
    t = paddle.to_tensor(a)
    t[:, 1:] = t[:, :-1]  # rows overlap their source: the result is as if the source were read first
    want = a.copy()
    want[:, 1:] = a[:, :-1]
    np.testing.assert_array_equal(t.numpy(), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_large_dense_copies_split_over_threads(threads, dtype):
    """A dense copy large enough to go to the pool (clone, which is assign, and assignment
    between disjoint tensors), and an overlapping one of the same size that must stay a
    memmove (a 1-D contiguous destination one element past its source), bit for bit:
    float16's signalling NaNs keep their payloads (assign went through float lanes)."""
    prev = paddle.get_num_threads()
    paddle.set_num_threads(threads)
    try:
        a = _values(dtype, (600037,))  # odd, so the pieces end between vector widths
        t = _tensor(dtype, a)
        np.testing.assert_array_equal(_bits(dtype, t.clone()), a)
        dst = _tensor(dtype, np.zeros_like(a))
        dst[:] = t
        np.testing.assert_array_equal(_bits(dtype, dst), a)
        t[1:] = t[:-1]
        want = a.copy()
        want[1:] = a[:-1]
        np.testing.assert_array_equal(_bits(dtype, t), want)
    finally:
        paddle.set_num_threads(prev)


@pytest.mark.parametrize("src,dst", [("bfloat16", "float32"), ("float32", "bfloat16"), ("float16", "float32"),
                                     ("float32", "float64"), ("float64", "float32"), ("float32", "int32"),
                                     ("int64", "float32"), ("float32", "bool")])
@pytest.mark.parametrize("view", ["contiguous", "stepped", "transposed"])
@pytest.mark.parametrize("n", [0, 7, 100003])
def test_converting_copies_unit_stride_and_strided(src, dst, view, n):
    # a raw copy between dtypes (_copy_from: copy_into, what kernels use to change a dtype) runs
    # the copy kernel's convert: one row split over the pool for dense tensors, typed
    # unit-stride rows of views, byte strides otherwise; against the cast kernel
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 3)).astype(np.float32) * 50
    if n:
        a[0] = [np.nan, np.inf, -0.0]
    if not src.startswith("float") and src != "bfloat16":
        a = np.nan_to_num(a)
    x = paddle.to_tensor(a).astype(src)
    if view == "stepped":
        x = x[::2]
    elif view == "transposed":
        x = x.t()
    want = x.astype(dst)  # the cast kernel, tested bit for bit elsewhere
    y = paddle.zeros(list(x.shape), dst)
    y._copy_from(x)
    g, w = y.numpy(), want.numpy()
    if dst in ("bfloat16", "float16"):
        g, w = y.astype("float32").numpy(), want.astype("float32").numpy()
    np.testing.assert_array_equal(g, w)
