"""max/min in fused groups give what the eager kernels give on NaN and +-inf
(docs/notes/cinn.md, Note [Reduction sweeps]): the row (last-axis) max/min/amax/amin
reductions, the column ones, the elementwise maximum/minimum, clip and relu. NaN and inf
at the first, last, vector-tail and middle columns, whole rows of them, column counts on
both sides of the vector widths (4, 8, 16 lanes, 4 accumulators), 1 and 2 threads; each
kernel's CUDA C is compiled by NVRTC (cinn_env) and uses the NaN-propagating helpers."""

import numpy as np
import pytest

import oar
from oar import _C




def executed(static_fn):
    return str(static_fn.concrete_programs[-1].executed_program)


def specials(rows, cols, dtype, seed):
    """Random rows with NaN / +-inf planted: row 0 clean, then NaN at the first, last,
    middle and tail columns, an all-NaN row, all -inf, all +inf, +inf with NaN, -inf
    with a NaN last, and a row of +inf and -inf only."""
    x = np.random.default_rng(seed).standard_normal((rows, cols)).astype(dtype)
    tail = cols - 1 - (cols % 8) // 2
    plants = [
        lambda r: None,
        lambda r: r.__setitem__(0, np.nan),
        lambda r: r.__setitem__(cols - 1, np.nan),
        lambda r: r.__setitem__(cols // 2, np.nan),
        lambda r: r.__setitem__(max(tail, 0), np.nan),
        lambda r: r.fill(np.nan),
        lambda r: r.fill(-np.inf),
        lambda r: r.fill(np.inf),
        lambda r: (r.fill(np.inf), r.__setitem__(cols // 3, np.nan)),
        lambda r: (r.fill(-np.inf), r.__setitem__(cols - 1, np.nan)),
        lambda r: (r.__setitem__(slice(None), np.where(np.arange(cols) % 2, np.inf, -np.inf))),
        lambda r: r.__setitem__(cols - 1, np.inf),
        lambda r: r.__setitem__(0, -np.inf),
    ]
    for i in range(rows):
        plants[i % len(plants)](x[i])
    return x


def same(got, want, rtol=0.0):
    """Equal as the kernels give it: NaN where NaN, equal values otherwise (inf included);
    with rtol, finite values within it (a sum, whose order depends on the vector width)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def row_model(x):
    y = x * 2.0
    return (oar.max(y, axis=-1), oar.min(y, axis=-1, keepdim=True), oar.amax(y, axis=-1, keepdim=True),
            oar.amin(y, axis=-1), y - oar.max(y, axis=-1, keepdim=True))


COLS = [1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, 300]


@pytest.mark.parametrize("cols", COLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_row_extrema_propagate_nan_and_inf_like_the_kernels(cols, dtype, threads):
    xn = specials(26, cols, dtype, cols)
    x = oar.to_tensor(xn)
    fused = oar.jit.to_static(row_model, backend="CINN")
    got, want = fused(x), row_model(x)
    for g, w in zip(got, want):
        same(g.numpy(), w.numpy())
    # The kernels' semantics checked against NumPy too (np.max propagates NaN).
    y = xn.astype("float64") * 2.0
    same(got[0].numpy(), y.max(-1).astype(dtype))
    same(got[3].numpy(), y.min(-1).astype(dtype))
    if cols == 1:  # [R, 1] keepdim results look like the full space: those ops stay eager
        return
    text = executed(fused)
    assert text.count("kernel.compiled_kernel") == 1, text
    for op in ("max", "min", "amax", "amin"):
        assert f'"pd_op.{op}"' not in text, text
    assert _C.cinn.cache_stats()["fallbacks"] == 0


def test_row_extrema_bf16_keep_nan():
    xn = specials(13, 37, "float32", 2)
    x = oar.to_tensor(xn).astype("bfloat16")
    fused = oar.jit.to_static(row_model, backend="CINN")
    for g, w in zip(fused(x), row_model(x)):
        same(g.astype("float32").numpy(), w.astype("float32").numpy())
    assert "kernel.compiled_kernel" in executed(fused)


def elementwise_model(x, z):
    a = oar.maximum(x, z)
    b = oar.minimum(x, z)
    return a * 1.0, b * 1.0, oar.nn.functional.relu(x) + 0.0, oar.clip(x, -1.0, 1.0) * 1.0, oar.sum(a - b, axis=-1)


@pytest.mark.parametrize("cols", [1, 7, 9, 33])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_elementwise_maximum_minimum_clip_relu_like_the_kernels(cols, dtype, threads):
    xn = specials(26, cols, dtype, 7 + cols)
    zn = np.flip(specials(26, cols, dtype, 11), axis=0).copy()
    zn[::3] = 0.5  # NaN in x alone, in z alone and in both
    x, z = oar.to_tensor(xn), oar.to_tensor(zn)
    fused = oar.jit.to_static(elementwise_model, backend="CINN")
    got, want = fused(x, z), elementwise_model(x, z)
    # The row sum adds in another order than the eager kernel's when the vector widths
    # differ (16 lanes x 4 accumulators here, the kernel's 8-lane loop): 1 ulp apart.
    for i, (g, w) in enumerate(zip(got, want)):
        same(g.numpy(), w.numpy(), rtol=1e-6 if i == 4 and dtype == "float32" else 1e-14 if i == 4 else 0.0)
    with np.errstate(invalid="ignore"):
        same(got[0].numpy(), np.maximum(xn, zn))  # NumPy's maximum propagates NaN too
        same(got[1].numpy(), np.minimum(xn, zn))
    same(got[2].numpy(), np.where(xn > 0, xn, 0).astype(dtype))  # relu(NaN) = 0, as the kernel
    text = executed(fused)
    assert text.count("kernel.compiled_kernel") == 1, text
    for op in ("maximum", "minimum", "relu", "clip"):
        assert f'"pd_op.{op}"' not in text, text


def test_signed_zeros_of_maximum_minimum_and_relu_as_the_kernels():
    x = oar.to_tensor(np.array([[0.0, -0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.0]], "float32"))
    z = oar.to_tensor(np.array([[-0.0, 0.0, -0.0, 0.0, 1.0, -0.0, 0.0, -1.0]], "float32"))

    def f(x, z):
        return oar.maximum(x, z) * 1.0, oar.minimum(x, z) * 1.0, oar.nn.functional.relu(x) * 1.0

    fused = oar.jit.to_static(f, backend="CINN")
    for g, w in zip(fused(x, z), f(x, z)):
        np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(w.numpy()))
        same(g.numpy(), w.numpy())
    assert "kernel.compiled_kernel" in executed(fused)


def column_model(x):
    y = x + 1.0
    return oar.amax(y, axis=0), oar.amin(y, axis=0, keepdim=True), oar.max(y, axis=0), y * 3.0


@pytest.mark.parametrize("rows", [1, 13, 64, 65, 200])
def test_column_amax_amin_propagate_nan_and_inf(rows, threads):
    xn = specials(19, rows, "float32", rows).T.copy()  # the planted NaN / inf down the columns
    x = oar.to_tensor(xn)
    fused = oar.jit.to_static(column_model, backend="CINN")
    got, want = fused(x), column_model(x)
    for g, w in zip(got, want):
        same(g.numpy(), w.numpy())
    if rows > 1:
        text = executed(fused)
        assert "pd_op.amax" not in text and "pd_op.amin" not in text, text


def test_cuda_c_uses_the_nan_propagating_helpers():
    fused = oar.jit.to_static(row_model, backend="CINN")
    fused(oar.to_tensor(specials(8, 40, "float32", 1)))
    fused2 = oar.jit.to_static(elementwise_model, backend="CINN")
    fused2(oar.ones([4, 9]), oar.zeros([4, 9]))
    srcs = [k["source"] for k in _C.cinn.cuda_kernels()]
    assert srcs
    for src in srcs:
        assert "fmaxf(" not in src.replace("fmaxf(fminf(x, hi), lo)", "") and "fminf(a" not in src, src
        assert "OarMax" in src and "oar_max(" in src
    assert any("oar_relu(" in s for s in srcs) and any("oar_min(" in s and "OarMin()" in s for s in srcs)


def test_accuracy_check_accepts_matching_nan_and_inf():
    old = oar.get_flags(["FLAGS_enable_cinn_accuracy_check"])
    oar.set_flags({"FLAGS_enable_cinn_accuracy_check": True})
    try:
        for model, args in ((row_model, (specials(26, 33, "float32", 3),)),
                            (elementwise_model, (specials(26, 9, "float64", 4), specials(26, 9, "float64", 5)))):
            oar.jit.to_static(model, backend="CINN")(*(oar.to_tensor(a) for a in args))
        s = _C.cinn.cache_stats()
        assert s["accuracy_checks"] == 2 and s["accuracy_failures"] == 0, s
    finally:
        oar.set_flags(old)
