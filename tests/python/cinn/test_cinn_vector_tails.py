"""Row lengths around the generated loops' vector widths (docs/notes/cinn.md, "Lowering
and code generation"): the code generator emits vectors of the host's width (16 float32
or 8 float64 lanes with AVX-512, 8 / 4 with AVX2), a reduction sweep's main loop takes U
vectors per step (4 for one or two reductions), then single vectors, then a scalar tail.
Lengths on both sides of 1, 2, 3, 4 and 8 vectors of every width reach each of those
loops with and without a remainder on whatever CPU runs the tests. Each group against
float64 NumPy: the four test models, the SLEEF-called functions (log, tanh; float64
exp and erf), the inlined float32 exp across its subnormal and overflow range, row and
column reductions with NaN in a vector body and in the tail, bf16, and 1 vs 2 threads."""
import os
import sys

import numpy as np
import pytest

import oar
from oar import _C

from test_cinn import MODELS  # noqa: E402


# 4-, 8- and 16-lane vectors, U = 4 of them per unrolled step: 16, 32, 64 and 128 columns;
# each length one past or short of a multiple (a tail), at or below one vector, two
# single vectors after the unrolled loop (47 with 16 lanes), one unrolled step and more.
COLS = [7, 15, 17, 47, 65, 129]


# No NVRTC check: the CUDA C has no vector loops; the other CINN tests compile it.
CINN_NVRTC = False


def executed(static_fn):
    return str(static_fn.concrete_programs[-1].executed_program)


def erf64(x):
    # float64 erf without SciPy: math.erf per element (a few thousand values at most).
    import math
    return np.vectorize(math.erf, otypes=["float64"])(x)


REFS = {
    "rms_norm": lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w,
    "softmax": lambda x, w: (lambda e: e / e.sum(-1, keepdims=True) * w)(np.exp(x - x.max(-1, keepdims=True))),
    "layer_norm": lambda x, w: (lambda d: d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + w)(
        x - x.mean(-1, keepdims=True)),
    "gelu_bias": lambda x, w: (x + w) * 0.5 * (erf64((x + w) * 0.7071067811865476) + 1.0),
}


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype,tol", [("float32", 3e-5), ("float64", 1e-11)])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_at_lengths_around_the_vector_widths(name, cols, dtype, tol):
    rng = np.random.default_rng(cols)
    xn = rng.standard_normal((5, cols)).astype(dtype)
    wn = rng.standard_normal(cols).astype(dtype)
    static = oar.jit.to_static(MODELS[name], backend="CINN")
    got = static(oar.to_tensor(xn), oar.to_tensor(wn)).numpy()
    assert "kernel.compiled_kernel" in executed(static)
    want = REFS[name](xn.astype("float64"), wn.astype("float64"))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def sleef_model(x):
    # log and tanh call SLEEF's vector functions (Sleef_logf16_u10 with 16 lanes); the sum
    # is a reduction over the same values (one sweep, then the output loop).
    a = oar.log(oar.abs(x) + 0.5)
    b = oar.tanh(x * 1.5)
    return a * b, oar.sum(a + b, axis=-1, keepdim=True)


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-13)])
def test_sleef_calls_at_lengths_around_the_vector_widths(cols, dtype, tol):
    xn = np.random.default_rng(cols + 7).uniform(-4, 4, (3, cols)).astype(dtype)
    static = oar.jit.to_static(sleef_model, backend="CINN")
    got = static(oar.to_tensor(xn))
    assert executed(static).count("kernel.compiled_kernel") == 1
    x = xn.astype("float64")
    a, b = np.log(np.abs(x) + 0.5), np.tanh(x * 1.5)
    np.testing.assert_allclose(got[0].numpy(), a * b, rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1].numpy(), (a + b).sum(-1, keepdims=True), rtol=tol, atol=tol * cols)


@pytest.mark.parametrize("cols", COLS)
def test_float64_exp_and_erf_at_lengths_around_the_vector_widths(cols):
    xn = np.random.default_rng(cols + 11).uniform(-3, 3, (3, cols))

    def f(x):
        return oar.exp(x) * oar.erf(x) + 0.0

    got = oar.jit.to_static(f, backend="CINN")(oar.to_tensor(xn)).numpy()
    np.testing.assert_allclose(got, np.exp(xn) * erf64(xn), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("cols", COLS)
def test_inlined_exp_with_out_of_range_lanes(cols):
    # One lane below -87.3 (a subnormal or 0 result) or above 88.4 (inf) sends its whole
    # vector to the two-step 2^n; the other lanes must come out as on the common path.
    rng = np.random.default_rng(cols + 3)
    xn = rng.uniform(-20, 20, (6, cols)).astype("float32")
    xn[1, cols // 2] = -95.0
    xn[2, cols - 1] = 89.0
    xn[3, 0] = -104.5
    xn[4, cols - 1] = np.nan
    xn[5, :] = np.linspace(-103.0, 88.7, cols)

    def ex(x):
        return oar.exp(x) * 1.0 + 0.0

    static = oar.jit.to_static(ex, backend="CINN")
    got = static(oar.to_tensor(xn)).numpy()
    assert "kernel.compiled_kernel" in executed(static)
    with np.errstate(over="ignore"):
        want = np.exp(xn.astype("float64")).astype("float32")
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-45)  # subnormals within 2 ulp


def reductions(x):
    return (oar.sum(x, axis=-1, keepdim=True), oar.max(x, axis=-1, keepdim=True),
            oar.min(x * 1.0, axis=-1), oar.sum(x * 2.0, axis=0))


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_and_column_reductions_with_nan_in_the_body_and_the_tail(cols, dtype, threads):
    rng = np.random.default_rng(cols + 5)
    xn = rng.standard_normal((70, cols)).astype(dtype)
    xn[3, 0] = np.nan            # the first vector
    xn[5, cols - 1] = np.nan     # the last column: the scalar tail when cols is no multiple
    xn[7, (cols * 3) // 4] = np.nan
    xn[9, :] = -np.inf
    old = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        static = oar.jit.to_static(reductions, backend="CINN")
        got = [t.numpy() for t in static(oar.to_tensor(xn))]
    finally:
        oar.set_num_threads(old)
    x = xn.astype("float64")
    want = [x.sum(-1, keepdims=True), x.max(-1, keepdims=True), x.min(-1), (x * 2.0).sum(0)]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert np.array_equal(np.isnan(g), np.isnan(w)), (g, w)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.sqrt(x.shape[0] * cols))
    assert "pd_op.max" not in executed(static) and _C.cinn.cache_stats()["fallbacks"] == 0


@pytest.mark.parametrize("cols", [15, 17, 65])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_bf16_models_at_lengths_around_the_vector_widths(name, cols):
    rng = np.random.default_rng(cols + 13)
    x = oar.to_tensor(rng.standard_normal((4, cols)).astype("float32")).astype("bfloat16")
    w = oar.to_tensor(rng.standard_normal(cols).astype("float32")).astype("bfloat16")
    static = oar.jit.to_static(MODELS[name], backend="CINN")
    got = static(x, w).astype("float32").numpy().astype("float64")
    assert "kernel.compiled_kernel" in executed(static)
    want = REFS[name](x.astype("float32").numpy().astype("float64"), w.astype("float32").numpy().astype("float64"))
    np.testing.assert_allclose(got, want, rtol=2.0 ** -8, atol=1e-5)  # float32 math, one bf16 rounding


NARROW = r"""
import os, sys, numpy as np, oar
sys.path.insert(0, sys.argv[1])
from test_cinn import MODELS
from test_cinn_vector_tails import REFS, sleef_model
for cols in (7, 15, 17, 33, 65):
    for dtype, tol in (("float32", 3e-5), ("float64", 1e-11)):
        rng = np.random.default_rng(cols)
        xn = rng.standard_normal((5, cols)).astype(dtype)
        wn = rng.standard_normal(cols).astype(dtype)
        for name, f in MODELS.items():
            got = oar.jit.to_static(f, backend="CINN")(oar.to_tensor(xn), oar.to_tensor(wn)).numpy()
            np.testing.assert_allclose(got, REFS[name](xn.astype("float64"), wn.astype("float64")), rtol=tol, atol=tol)
        a, b = oar.jit.to_static(sleef_model, backend="CINN")(oar.to_tensor(xn))
        x = xn.astype("float64")
        np.testing.assert_allclose(a.numpy(), np.log(np.abs(x) + 0.5) * np.tanh(x * 1.5), rtol=tol, atol=tol)
d = os.environ["FLAGS_cinn_cache_dir"]
keys = [open(os.path.join(d, f), "rb").read() for f in os.listdir(d) if f.endswith(".o")]
print("ENTRIES", len(keys), sum(b" w" + os.environ["OAR_CINN_VECTOR_BITS"].encode() + b"set " in k for k in keys))
"""


@pytest.mark.parametrize("bits", [128, 256])
def test_narrower_vectors_on_this_host(bits, tmp_path):
    # OAR_CINN_VECTOR_BITS sets every kernel's vectors (never past the host's; Note
    # [Vector width]): an AVX-512 machine runs the AVX2 (8 / 4 lanes) and SSE (4 / 2
    # lanes) loops too; the width ("w256set") is in every cache key.
    import subprocess
    env = dict(os.environ, OAR_CINN_VECTOR_BITS=str(bits), FLAGS_cinn_cache_dir=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", NARROW, os.path.dirname(os.path.abspath(__file__))], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    n, narrow = (int(v) for v in [ln for ln in out.stdout.splitlines() if ln.startswith("ENTRIES")][0].split()[1:])
    assert n >= 10 and narrow == n, out.stdout
