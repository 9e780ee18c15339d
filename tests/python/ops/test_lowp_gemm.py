"""bf16 matmul and the int8 x int8 -> int32 GEMM (phi_kernels/funcs/lowp_gemm.h,
docs/notes/gemm_backends.md) against float64 / int64 NumPy on every shape class: odd
sizes, K across the int8 float path's 1024 blocks, transposed flags, transposed and
strided views, broadcast batches, vectors and 0-size operands; bf16 gradients; bad inputs.
The int8 GEMM is an internal function (oar_s8gemm_rowmajor in the core library, called
here through ctypes), the groundwork of the weight-only int8 linear; no op exposes it yet.

Each path is chosen once per process from the CPU (bf16: Oar's AMX kernel where the CPU has
AMX, oneDNN on AVX512-BF16 where its vdpbf16ps outruns float32 FMAs (measured once, Note [bf16
dot or widened float]); int8: oneDNN on VNNI; float blocks through sgemm elsewhere); the
tests run the default path in this process and every other path this CPU can run in a child
process with OAR_BF16_GEMM / OAR_INT8_GEMM.

bf16 tolerance (documented): the operands are bf16 (exact in float64), the products are
accumulated in float32 and the result rounded once to bf16, so
|got - ref| <= 2^-8 |ref| + 2^-12 (|a| @ |b|)."""
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import oar
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import peak  # noqa: E402

FLAGS = peak.cpu_flags()
HAS_BF16_HW = bool({"avx512_bf16", "amx_bf16"} & FLAGS)
HAS_AMX = {"amx_tile", "amx_bf16", "avx512_bf16"} <= FLAGS
HAS_AMX_INT8 = {"amx_tile", "amx_int8", "avx512bw"} <= FLAGS
HAS_VNNI = bool({"avx512_vnni", "avx_vnni", "amx_int8"} & FLAGS)


def _core_path():
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "liboar_core" in line}
    return libs.pop()


def _core_fn(name):
    fn = getattr(ctypes.CDLL(_core_path()), name)
    fn.restype = ctypes.c_char_p
    return fn().decode()


def bf16_dot_vs_fma():
    """Note [bf16 dot or widened float]'s measured flop-rate ratio, vdpbf16ps over float32 FMA."""
    fn = ctypes.CDLL(_core_path()).oar_bf16_dot_vs_fma
    fn.restype = ctypes.c_double
    return fn()


def bf16_onednn_default():
    """Whether oneDNN's bf16 kernels are this CPU's default (else the widened float path)."""
    return HAS_AMX or (HAS_BF16_HW and bf16_dot_vs_fma() >= 0.75)


def _bf16(a):
    """float64 array rounded to bf16 values (round to nearest even), as float64."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def _check_bf16(got, a, b):
    ref = a @ b
    bound = 2.0**-8 * np.abs(ref) + 2.0**-12 * (np.abs(a) @ np.abs(b)) + 1e-30
    err = np.abs(got.astype(np.float64) - ref)
    assert got.shape == ref.shape
    assert np.all(err <= bound), f"max err/bound {np.max(err / bound)}"


def _t(x, dtype):
    return oar.to_tensor(np.ascontiguousarray(x)).astype(dtype)


# (batch_x, batch_y, M, K, N); on an AMX CPU products of >= 2^28 multiply-adds with M, N >= 256
# take Oar's AMX kernel and the others oneDNN; the AMX child below sends every one of these
# to the AMX kernel (tile blocks of 32, K blocks of 256, column panels of 256)
BF16_SHAPES = [((), (), 1, 1, 1), ((), (), 7, 13, 5), ((), (), 33, 65, 17), ((), (), 128, 784, 64),
               ((3,), (3,), 9, 31, 12), ((2, 3), (), 5, 40, 6), ((1,), (4,), 8, 16, 3),
               ((), (), 70, 300, 290), ((), (), 257, 33, 520), ((2,), (2,), 40, 515, 33), ((), (), 32, 32, 32)]


def test_paths_are_the_cpus():
    want = "amx" if HAS_AMX else "onednn" if bf16_onednn_default() else "float"
    assert _core_fn("oar_bf16_gemm_path") == want
    assert _core_fn("oar_int8_gemm_path") == ("amx" if HAS_AMX_INT8 else "onednn" if HAS_VNNI else "float")


@pytest.mark.parametrize("shape", BF16_SHAPES, ids=str)
@pytest.mark.parametrize("tx,ty", [(False, False), (True, False), (False, True), (True, True)])
def test_bf16_matmul(shape, tx, ty):
    bx, by, m, k, n = shape
    rng = np.random.default_rng(m * 31 + k)
    a = _bf16(rng.standard_normal((*bx, m, k)))
    b = _bf16(rng.standard_normal((*by, k, n)))
    xa = np.swapaxes(a, -1, -2) if tx else a
    yb = np.swapaxes(b, -1, -2) if ty else b
    out = oar.matmul(_t(xa, "bfloat16"), _t(yb, "bfloat16"), transpose_x=tx, transpose_y=ty)
    assert out.dtype == oar.bfloat16
    _check_bf16(out.astype("float32").numpy(), a, b)


def test_bf16_transposed_and_strided_views():
    rng = np.random.default_rng(3)
    big_a = _bf16(rng.standard_normal((40, 70)))
    big_b = _bf16(rng.standard_normal((50, 90)))
    ta, tb = _t(big_a, "bfloat16"), _t(big_b, "bfloat16")
    # a strided view (ld 70), a transposed view, and a view with a step
    x = ta[3:23, 5:55]  # 20 x 50
    y = tb[:, 10:40]  # 50 x 30, ld 90
    _check_bf16(oar.matmul(x, y).astype("float32").numpy(), big_a[3:23, 5:55], big_b[:, 10:40])
    yt = tb[0:30, 0:50].T  # 50 x 30 transposed view
    _check_bf16(oar.matmul(x, yt).astype("float32").numpy(), big_a[3:23, 5:55], big_b[0:30, 0:50].T)
    xs = ta[::2, 0:50]  # every other row
    _check_bf16(oar.matmul(xs, y).astype("float32").numpy(), big_a[::2, 0:50], big_b[:, 10:40])


def test_bf16_dot_probe():
    """The probe behind the bf16 route: a ratio of two measured flop rates where the CPU has
    AVX512-BF16 (its value is the machine's, so only its range is checked), 0 without."""
    r = bf16_dot_vs_fma()
    if HAS_BF16_HW and "avx512f" in FLAGS:
        assert 0.05 < r < 20, r
    else:
        assert r == 0.0


def test_bf16_vectors_and_zero_size():
    rng = np.random.default_rng(4)
    a = _bf16(rng.standard_normal(9))
    b = _bf16(rng.standard_normal((9, 4)))
    _check_bf16(oar.matmul(_t(a, "bfloat16"), _t(b, "bfloat16")).astype("float32").numpy(), a, b)
    for (m, k, n) in [(0, 5, 3), (4, 0, 3), (4, 5, 0)]:
        out = oar.matmul(_t(np.ones((m, k)), "bfloat16"), _t(np.ones((k, n)), "bfloat16"))
        assert out.shape == [m, n]
        np.testing.assert_array_equal(out.astype("float32").numpy(), np.zeros((m, n)))


@pytest.mark.parametrize("tx,ty", [(False, False), (True, True)])
def test_bf16_matmul_grad(tx, ty):
    rng = np.random.default_rng(5)
    a = _bf16(rng.standard_normal((2, 11, 19)))
    b = _bf16(rng.standard_normal((19, 7)))
    g = _bf16(rng.standard_normal((2, 11, 7)))
    x = _t(np.swapaxes(a, -1, -2) if tx else a, "bfloat16")
    y = _t(b.T if ty else b, "bfloat16")
    x.stop_gradient = False
    y.stop_gradient = False
    out = oar.matmul(x, y, transpose_x=tx, transpose_y=ty)
    out.backward(_t(g, "bfloat16"))
    assert x.grad.dtype == oar.bfloat16 and y.grad.dtype == oar.bfloat16
    gx = x.grad.astype("float32").numpy()
    gy = y.grad.astype("float32").numpy()
    # dL/da = g b^T, dL/db = sum over the batch of a^T g
    gb_ref = np.einsum("bmk,bmn->kn", a, g)
    _check_bf16(np.swapaxes(gx, -1, -2) if tx else gx, g, b.T)
    # the batch reduction adds one more bf16 rounding (the per-batch products are bf16)
    bound = 2.0**-7 * np.abs(gb_ref) + 2.0**-7 * np.einsum("bmk,bmn->kn", np.abs(a), np.abs(g))
    assert np.all(np.abs((gy.T if ty else gy) - gb_ref) <= bound)


def test_bf16_repeated_geometry_new_data():
    """oneDNN's bf16 primitives are cached per geometry (Note [bf16 primitive cache]): a
    repeated shape with other data, other leading dimensions of the same shape, and more
    geometries than the cache holds (it is cleared when full) all give the right product."""
    rng = np.random.default_rng(6)
    for _ in range(3):
        a, b = _bf16(rng.standard_normal((17, 33))), _bf16(rng.standard_normal((33, 9)))
        _check_bf16(oar.matmul(_t(a, "bfloat16"), _t(b, "bfloat16")).astype("float32").numpy(), a, b)
    big = _bf16(rng.standard_normal((33, 40)))
    tb = _t(big, "bfloat16")
    for c0 in (0, 7):  # N 9 at ld 40 (a view), then the dense one above again
        a = _bf16(rng.standard_normal((17, 33)))
        _check_bf16(oar.matmul(_t(a, "bfloat16"), tb[:, c0:c0 + 9]).astype("float32").numpy(), a, big[:, c0:c0 + 9])
    for n in range(1, 300):
        a, b = _bf16(rng.standard_normal((2, 3))), _bf16(rng.standard_normal((3, n)))
        _check_bf16(oar.matmul(_t(a, "bfloat16"), _t(b, "bfloat16")).astype("float32").numpy(), a, b)


def test_bf16_two_python_threads_at_once():
    """Each thread keeps its own primitives (Note [bf16 primitive cache]): two threads
    multiplying the same and different geometries at once get their own products."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(8)
    cases = [(_bf16(rng.standard_normal((40, 70))), _bf16(rng.standard_normal((70, 30 + i)))) for i in range(2)]

    def work(i):
        for j in range(30):
            a, b = cases[(i + j) % 2]
            _check_bf16(oar.matmul(_t(a, "bfloat16"), _t(b, "bfloat16")).astype("float32").numpy(), a, b)
        return i

    with ThreadPoolExecutor(2) as pool:  # a failed check raises here
        assert list(pool.map(work, range(2), timeout=120)) == [0, 1]


# ---- int8 x int8 -> int32 (oar_s8gemm_rowmajor, the internal GEMM of weight-only int8) ----

def s8gemm(a, b, ta=False, tb=False):
    """op(a) @ op(b) through the core's int8 GEMM; a, b int8 2-D arrays or row-strided views."""
    lib = ctypes.CDLL(_core_path())
    fn = lib.oar_s8gemm_rowmajor
    fn.restype = ctypes.c_int
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    fn.argtypes = [ctypes.c_int, ctypes.c_int, i64, i64, i64, ptr, i64, ptr, i64, ptr, i64]
    for x in (a, b):
        assert x.dtype == np.int8 and x.ndim == 2 and (x.strides[1] == 1 or x.size == 0)
    m, k = (a.shape[1], a.shape[0]) if ta else a.shape
    n = b.shape[0] if tb else b.shape[1]
    c = np.full((m, n), -7, np.int32)  # garbage: the GEMM must overwrite it
    lda = a.strides[0] if a.size else max(1, a.shape[1])
    ldb = b.strides[0] if b.size else max(1, b.shape[1])
    rc = fn(int(ta), int(tb), m, n, k, a.ctypes.data, lda, b.ctypes.data, ldb, c.ctypes.data, max(1, n))
    if rc != 0:
        raise ValueError(f"oar_s8gemm_rowmajor returned {rc}")
    return c


def _int8_ref(a, b):
    return a.astype(np.int64) @ b.astype(np.int64)


def _i8(rng, shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(np.int8)


INT8_SHAPES = [(1, 1, 1), (7, 13, 5), (33, 1023, 17), (5, 1025, 9), (16, 2500, 40), (64, 256, 48)]


@pytest.mark.parametrize("mkn", INT8_SHAPES, ids=str)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_int8_gemm_exact(mkn, ta, tb):
    m, k, n = mkn
    rng = np.random.default_rng(m * 13 + k)
    a = _i8(rng, (m, k))
    b = _i8(rng, (k, n))
    got = s8gemm(np.ascontiguousarray(a.T) if ta else a, np.ascontiguousarray(b.T) if tb else b, ta, tb)
    np.testing.assert_array_equal(got, _int8_ref(a, b))


@pytest.mark.parametrize("k", [1024, 1025, 3000])
def test_int8_extremes(k):
    # all -128: every partial sum is the largest the float blocks can meet (2^24 per block)
    a = np.full((3, k), -128, np.int8)
    for v in (-128, 127):
        b = np.full((k, 2), v, np.int8)
        np.testing.assert_array_equal(s8gemm(a, b), _int8_ref(a, b))


def test_int8_strided_and_zero_size():
    rng = np.random.default_rng(7)
    big = _i8(rng, (50, 60))
    x, y = big[2:12, 5:45], big[0:40, 10:20]  # row-strided views (ld 60)
    np.testing.assert_array_equal(s8gemm(x, y), _int8_ref(x, y))
    yt = big[0:7, 0:40]  # used transposed, ld 60
    np.testing.assert_array_equal(s8gemm(x, yt, tb=True), _int8_ref(x, yt.T))
    for (m, k, n) in [(0, 5, 3), (4, 0, 3), (4, 5, 0)]:
        got = s8gemm(np.ones((m, k), np.int8), np.ones((k, n), np.int8))
        np.testing.assert_array_equal(got, np.zeros((m, n), np.int32))


def test_int8_bad_arguments():
    lib = ctypes.CDLL(_core_path())
    fn = lib.oar_s8gemm_rowmajor
    fn.restype = ctypes.c_int
    i64 = ctypes.c_int64
    fn.argtypes = [ctypes.c_int, ctypes.c_int, i64, i64, i64, ctypes.c_void_p, i64, ctypes.c_void_p, i64,
                   ctypes.c_void_p, i64]
    a = np.ones((4, 4), np.int8)
    c = np.zeros((4, 4), np.int32)
    assert fn(0, 0, 4, 4, 4, a.ctypes.data, 2, a.ctypes.data, 4, c.ctypes.data, 4) == -1  # lda < K
    assert fn(0, 0, -1, 4, 4, a.ctypes.data, 4, a.ctypes.data, 4, c.ctypes.data, 4) == -1


# ---- the other paths, in a child process ----

CHILD = textwrap.dedent(r"""
    import sys, numpy as np, oar
    sys.path.insert(0, %r)
    import test_lowp_gemm as T
    rng = np.random.default_rng(0)
    lo, hi = %d, %d
    for (m, k, n) in [(7, 13, 5), (33, 1500, 17), (64, 256, 48), (70, 300, 290), (257, 33, 520)]:
        for tx, ty in [(False, False), (True, False), (False, True), (True, True)]:
            a = T._i8(rng, (m, k), lo, hi); b = T._i8(rng, (k, n), lo, hi)
            xa = a.T if tx else a; yb = b.T if ty else b
            out = T.s8gemm(np.ascontiguousarray(xa), np.ascontiguousarray(yb), tx, ty)
            np.testing.assert_array_equal(out, T._int8_ref(a, b))
            fa = T._bf16(rng.standard_normal((m, k))); fb = T._bf16(rng.standard_normal((k, n)))
            xa = fa.T if tx else fa; yb = fb.T if ty else fb
            if %r:
                got = oar.matmul(T._t(xa, "bfloat16"), T._t(yb, "bfloat16"), transpose_x=tx, transpose_y=ty)
                T._check_bf16(got.astype("float32").numpy(), fa, fb)
    for k in (1024, 3000):  # all-extreme operands: the largest pair sums a GEMM can meet
        for va, vb in ((lo, lo), (lo, hi), (hi, hi)):
            a = np.full((5, k), va, np.int8); b = np.full((k, 3), vb, np.int8)
            np.testing.assert_array_equal(T.s8gemm(a, b), T._int8_ref(a, b))
    print("paths", T._core_fn("oar_bf16_gemm_path"), T._core_fn("oar_int8_gemm_path"))
""")


def _child(env, lo, hi, bf16):
    code = CHILD % (os.path.dirname(os.path.abspath(__file__)), lo, hi, bf16)
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.split()[-2:]


def test_float_paths_in_a_child():
    assert _child({"OAR_BF16_GEMM": "float", "OAR_INT8_GEMM": "float"}, -128, 127, True) == ["float", "float"]


@pytest.mark.skipif(not HAS_BF16_HW, reason="oneDNN has no bf16 matmul without AVX512-BF16 or AMX")
def test_onednn_bf16_forced_in_a_child():
    assert _child({"OAR_BF16_GEMM": "onednn", "OAR_INT8_GEMM": "float"}, -128, 127, True) == ["onednn", "float"]


def test_bf16_large_product():
    """Large enough for the AMX kernel on an AMX CPU (M, N >= 256, >= 2^28 multiply-adds), with
    K and N off its blocks, both operands transposed in storage."""
    rng = np.random.default_rng(9)
    a = _bf16(rng.standard_normal((520, 1030)))
    b = _bf16(rng.standard_normal((1030, 515)))
    got = oar.matmul(_t(a.T, "bfloat16"), _t(b.T, "bfloat16"), transpose_x=True, transpose_y=True)
    _check_bf16(got.astype("float32").numpy(), a, b)


@pytest.mark.skipif(not (HAS_AMX and HAS_AMX_INT8), reason="no AMX-BF16 / AMX-INT8 on this CPU")
def test_amx_every_shape_in_a_child():
    """OAR_BF16_GEMM=amx, OAR_INT8_GEMM=amx: every product of the child's battery (small ones,
    few rows and extreme int8 values included) through the AMX kernels."""
    assert _child({"OAR_BF16_GEMM": "amx", "OAR_INT8_GEMM": "amx"}, -128, 127, True) == ["amx", "amx"]


@pytest.mark.skipif(not HAS_AMX, reason="no AMX-BF16 on this CPU")
def test_onednn_bf16_on_an_amx_cpu_in_a_child():
    """Where the AMX kernel is the default, oneDNN's bf16 path still works when asked for."""
    assert _child({"OAR_BF16_GEMM": "onednn"}, -128, 127, True)[0] == "onednn"


TWO_THREAD_PATHS = ((["amx"] if HAS_AMX and HAS_AMX_INT8 else []) + (["onednn"] if HAS_BF16_HW and HAS_VNNI else [])
                    + ["float"])


@pytest.mark.parametrize("path", TWO_THREAD_PATHS)
def test_two_threads_in_a_child(path):
    """At two threads each path splits over Oar's pool: the AMX kernels by column panels
    (N > 256) or row strips, oneDNN's bf16 and int8 GEMMs by 16-column (row) panels, one
    single-threaded call each (gemm_split.h); the float paths through sgemm's split, bf16's
    widening and rounding in even element runs (for_row_segments)."""
    code = textwrap.dedent(r"""
        import sys, numpy as np, oar
        sys.path.insert(0, %r)
        import test_lowp_gemm as T
        oar.set_num_threads(2)
        rng = np.random.default_rng(1)
        for m, k, n in [(96, 300, 700), (400, 200, 100), (513, 64, 40), (700, 96, 33)]:
            for tx, ty in [(False, False), (True, False), (False, True), (True, True)]:
                a = T._bf16(rng.standard_normal((m, k))); b = T._bf16(rng.standard_normal((k, n)))
                got = oar.matmul(T._t(a.T if tx else a, "bfloat16"), T._t(b.T if ty else b, "bfloat16"),
                                 transpose_x=tx, transpose_y=ty)
                T._check_bf16(got.astype("float32").numpy(), a, b)
                ia = T._i8(rng, (m, k)); ib = T._i8(rng, (k, n))
                got = T.s8gemm(np.ascontiguousarray(ia.T) if tx else ia, np.ascontiguousarray(ib.T) if ty else ib, tx, ty)
                np.testing.assert_array_equal(got, T._int8_ref(ia, ib))
        print(T._core_fn("oar_bf16_gemm_path"), T._core_fn("oar_int8_gemm_path"))
    """) % os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OAR_BF16_GEMM": path, "OAR_INT8_GEMM": path}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[-2:] == [path, path]


def test_onednn_int8_in_a_child():
    # Without VNNI, oneDNN's s8s8s32 GEMM goes through vpmaddubsw, whose int16 pair sums
    # saturate past 32767; operands in [-64, 63] stay below it. With VNNI: the full range.
    lo, hi = (-128, 127) if HAS_VNNI else (-64, 63)
    assert _child({"OAR_INT8_GEMM": "onednn", "OAR_BF16_GEMM": "float"}, lo, hi, False)[1] == "onednn"


def test_capped_onednn_takes_the_float_paths_in_a_child():
    """oneDNN capped to AVX2 (an AVX2 machine's view; bench --isa avx2): the bf16 and int8
    GEMMs take the float paths, as on an AVX2 CPU, instead of asking oneDNN for the bf16 or
    VNNI kernels it will not run there (the choice keys on what oneDNN runs, not cpuid)."""
    assert _child({"DNNL_MAX_CPU_ISA": "AVX2"}, -128, 127, True) == ["float", "float"]
