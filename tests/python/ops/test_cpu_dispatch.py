"""CPU dispatch (Note [CPU dispatch], docs/notes/cpu_dispatch.md): every per-ISA copy of
the hot kernels this CPU can run, forced with OAR_CPU_CAPABILITY in a child process,
against float64 NumPy references on odd sizes and vector tails, strided views and 0-size
inputs; the override itself; and an objdump scan that the baseline kernel objects hold no
instruction above x86-64-v3."""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import peak  # noqa: E402  (bench/peak.py: the one reader of the CPU's flags)


FLAGS = peak.cpu_flags()
HAS_AVX512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= FLAGS
SUPPORTED = ["avx2"] + (["avx512"] if HAS_AVX512 else [])

# Runs in a child with OAR_CPU_CAPABILITY set: prints the active capability (read from the
# core library, which is where the choice is made) and every mismatch against float64.
CHILD = textwrap.dedent(r'''
    import ctypes, json, math
    import numpy as np
    import oar
    import oar.nn.functional as F

    def active_capability():
        with open("/proc/self/maps") as f:
            libs = {l.split()[-1] for l in f if "liboar_core" in l}
        fn = ctypes.CDLL(libs.pop()).oar_cpu_capability
        fn.restype = ctypes.c_char_p
        return fn().decode()

    erf = np.vectorize(math.erf, otypes=[np.float64])
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    def softmax(x, a):
        e = np.exp(x - x.max(axis=a, keepdims=True))
        return e / e.sum(axis=a, keepdims=True)
    def lse(x, a):
        m = x.max(axis=a, keepdims=True)
        return (m + np.log(np.exp(x - m).sum(axis=a, keepdims=True))).squeeze(a)
    def layer_norm(x):
        m = x.mean(-1, keepdims=True)
        return (x - m) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    def gelu_tanh(x):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    sig = lambda x: 1 / (1 + np.exp(-x))

    # name, oar function, float64 reference, input range
    UNARY = [
        ("exp", oar.exp, np.exp, 10), ("log", oar.log, np.log, 0),
        ("tanh", oar.tanh, np.tanh, 6), ("sigmoid", F.sigmoid, sig, 12),
        ("sin", oar.sin, np.sin, 5), ("cos", oar.cos, np.cos, 5),
        ("expm1", oar.expm1, np.expm1, 3), ("log1p", oar.log1p, np.log1p, 0),
        ("erf", oar.erf, erf, 3), ("silu", F.silu, lambda x: x * sig(x), 8),
        ("gelu", F.gelu, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), 6),
        ("gelu_tanh", lambda x: F.gelu(x, approximate=True), gelu_tanh, 6),
    ]
    softplus = lambda x: np.where(x > 20, x, np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))
    mish_t = lambda x: np.tanh(softplus(x))
    # name, oar function, float64 f, float64 f'
    ACT = [
        ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
         lambda x: np.where(x > 0, 1.0, 0.2)),
        ("elu", F.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
         lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0)))),
        ("softplus", F.softplus, softplus, lambda x: np.where(x > 20, 1.0, sig(x))),
        ("mish", F.mish, lambda x: x * mish_t(x),
         lambda x: mish_t(x) + x * (1 - mish_t(x) ** 2) * np.where(x > 20, 1.0, sig(x))),
        ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
         lambda x: np.where(x + 3 >= 6, 1.0, np.where(x + 3 > 0, (2 * x + 3) / 6, 0.0))),
        ("log_sigmoid", F.log_sigmoid, lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))),
         lambda x: sig(-x)),
        ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), lambda x: np.tanh(x) ** 2),
        ("silu", F.silu, lambda x: x * sig(x), lambda x: sig(x) * (1 + x * (1 - sig(x)))),
    ]
    # along the last axis and along axis 0 (a strided row walk)
    ROWS = [
        ("softmax", lambda x, a: F.softmax(x, axis=a), softmax),
        ("log_softmax", lambda x, a: F.log_softmax(x, axis=a), lambda x, a: np.log(softmax(x, a))),
        ("logsumexp", lambda x, a: oar.logsumexp(x, axis=a), lse),
        ("sum", lambda x, a: oar.sum(x, axis=a), lambda x, a: x.sum(axis=a)),
        ("mean", lambda x, a: oar.mean(x, axis=a), lambda x, a: x.mean(axis=a)),
        ("max", lambda x, a: oar.max(x, axis=a), lambda x, a: x.max(axis=a)),
        ("min", lambda x, a: oar.min(x, axis=a), lambda x, a: x.min(axis=a)),
    ]
    # vector widths are 8/16 floats and 4/8 doubles: sizes around them and long odd ones
    SIZES = [0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 127, 1000, 4099]
    TOL = {"float32": (2e-5, 2e-6), "float64": (1e-10, 1e-12)}
    rng = np.random.default_rng(0)
    failures, checked = [], 0

    def check(name, dtype, shape, got, ref, tol=None):
        global checked
        checked += 1
        got = got.numpy().astype(np.float64) if hasattr(got, "numpy") else got
        rtol, atol = tol or TOL[dtype]
        if got.shape != ref.shape:
            failures.append(f"{name} {dtype} {shape}: shape {got.shape} != {ref.shape}")
        elif not np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True):
            err = np.max(np.abs(got - ref) / (atol + rtol * np.abs(ref)))
            failures.append(f"{name} {dtype} {shape}: {err:.3g}x the tolerance")

    for dtype in ("float32", "float64"):
        for name, fn, ref, r in UNARY:
            for n in SIZES:
                lo = 1e-3 if r == 0 else -r
                x = rng.uniform(lo, 4 if r == 0 else r, [n]).astype(dtype)
                check(name, dtype, [n], fn(oar.to_tensor(x)), ref(x.astype(np.float64)))
            # a strided view (every other column of a transposed matrix) and a 2-D tail
            base = rng.uniform(1e-3 if r == 0 else -r, 4 if r == 0 else r, [37, 6]).astype(dtype)
            v = oar.to_tensor(base).transpose([1, 0])[:, ::2]
            check(name + "[strided]", dtype, list(v.shape), fn(v),
                  ref(base.T[:, ::2].astype(np.float64)))
        # activations (activation_kernels.cc): f and g f'(x), the vector forms' lanes and
        # tails (float32) and the scalar forms (float64); their own stream, so the draws of
        # the checks after them stay as they were
        act_rng = np.random.default_rng(1)
        for name, fn, ref, d1 in ACT:
            for n in SIZES[1:]:
                x = act_rng.uniform(-25, 25, [n]).astype(dtype)
                g = act_rng.standard_normal([n]).astype(dtype)
                x64 = x.astype(np.float64)
                xt = oar.to_tensor(x, stop_gradient=False)
                out = fn(xt)
                (dx,) = oar.grad([out], [xt], [oar.to_tensor(g)])
                tol = (5e-6, 5e-6) if dtype == "float32" else None
                check(name, dtype, [n], out, ref(x64), tol)
                check(name + "_grad", dtype, [n], dx, g.astype(np.float64) * d1(x64), tol)
        for name, fn, ref in ROWS:
            for n in SIZES[1:]:
                for shape, axis in (([3, n], -1), ([n, 5], 0), ([2, n, 3], 1)):
                    x = rng.standard_normal(shape).astype(dtype) * 4
                    check(f"{name}(axis={axis})", dtype, shape, fn(oar.to_tensor(x), axis),
                          ref(x.astype(np.float64), axis))
            x = np.zeros([0, 4], dtype)
            if name not in ("max", "min"):
                check(name + "[0-size]", dtype, [0, 4], fn(oar.to_tensor(x), -1),
                      ref(x.astype(np.float64), -1))
        for n in SIZES[1:]:
            x = rng.standard_normal([4, n]).astype(dtype) * 3 + 1
            got = F.layer_norm(oar.to_tensor(x), [n], epsilon=1e-5)
            check("layer_norm", dtype, [4, n], got, layer_norm(x.astype(np.float64)),
                  (1e-4, 1e-4) if dtype == "float32" else None)
        # the vector exp's range ends (AVX-512 scales by vscalefps, AVX2 clamps and selects):
        # overflow to inf, underflow through the subnormals to exact 0, +-inf and NaN
        ends = np.array([-np.inf, -1e4, -200, -110, -104, -103.5, -100, -90, -87.5, -87, -20, -1,
                         0, 1, 20, 87, 88.5, 88.8, 89, 100, 1e4, np.inf, np.nan], dtype)
        ends = np.concatenate([ends, rng.uniform(-120, 120, 10).astype(dtype)])  # 33 lanes
        x64 = ends.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            for name, fn, ref in (("sigmoid[ends]", F.sigmoid, sig), ("tanh[ends]", oar.tanh, np.tanh),
                                  ("silu[ends]", F.silu, lambda x: x * sig(x)),
                                  ("gelu[ends]", F.gelu, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
                                  ("gelu_tanh[ends]", lambda x: F.gelu(x, approximate=True), gelu_tanh)):
                check(name, dtype, [33], fn(oar.to_tensor(ends)), ref(x64))
        # gelu's negative tail, where 0.5 x (1 + erf(z)) cancels: relative accuracy down to
        # gelu(-12.7) = -3e-36 in float32 (Abramowitz & Stegun's erfc: 3.5% there, 0.36% at
        # -6) and gelu(-35) = -1e-267 in float64 (SLEEF's erfc; the rounding of z = |x| / sqrt2
        # alone is 2 z^2 ulp of erfc, 1.4e-13 at z = 24.7), 1001 lanes (a vector tail)
        lo = 12.7 if dtype == "float32" else 35.0
        x = -np.geomspace(1e-3, lo, 1001).astype(dtype)
        x64 = x.astype(np.float64)
        check("gelu[tail]", dtype, [1001], F.gelu(oar.to_tensor(x)), 0.5 * x64 * erfc(-x64 / math.sqrt(2)),
              (4e-2, 0.0) if dtype == "float32" else (5e-13, 0.0))
        far = np.array([-12.8, -13.5, -20, -100, -1e30] * 7, "float32")  # 35 lanes past it
        if dtype == "float32" and np.any(F.gelu(oar.to_tensor(far)).numpy() != 0):
            failures.append("gelu[far tail] float32: not 0 where |gelu| < 3e-36")
        rows = np.where(np.isnan(ends), 0, ends)[None, :].repeat(2, 0)
        rows[1, ::3] = -np.inf  # a masked row: exp(-inf) must be exactly 0
        got = F.softmax(oar.to_tensor(rows), axis=-1).numpy()
        check("softmax[ends]", dtype, [2, 33], got, softmax(rows.astype(np.float64), -1))
        if np.any(got[1, ::3] != 0):
            failures.append(f"softmax[ends] {dtype}: masked lanes not exactly 0")
        small = rng.uniform(-110, -80, [4, 17]).astype(dtype)  # exp of every lane subnormal or 0
        check("logsumexp[small]", dtype, [4, 17], oar.logsumexp(oar.to_tensor(small - small.max()), axis=-1),
              lse((small - small.max()).astype(np.float64), -1))
        # logsumexp's vector row max skips NaN and leaves it to the sum: NaN in the first,
        # a middle and the tail lane, with +inf, rows of -inf, around the 4-vector loop
        for n in (1, 5, 63, 64, 65, 129):
            x = rng.standard_normal([8, n]).astype(dtype)
            x[0, 0] = np.nan
            x[1, n // 2] = np.nan
            x[2, -1] = np.nan
            x[3, n // 3] = np.inf
            x[4, :] = -np.inf
            x[5, ::2] = -np.inf
            x[6, 0], x[6, -1] = np.inf, np.nan
            x[7, :] = np.nan
            with np.errstate(invalid="ignore"):
                ref = lse(x.astype(np.float64), -1)
            ref[[0, 1, 2, 6, 7]] = np.nan  # any NaN gives NaN
            ref[3] = np.inf  # a +inf gives +inf (NumPy's reference makes inf - inf = NaN)
            ref[4] = -np.inf  # all -inf
            if n == 1:
                ref[5] = -np.inf
            check("logsumexp[nan,inf]", dtype, [8, n], oar.logsumexp(oar.to_tensor(x), axis=-1), ref)
            xt = oar.to_tensor(np.ascontiguousarray(x.T)).transpose([1, 0])  # a transposed view
            check("logsumexp[nan,inf,transposed]", dtype, [8, n], oar.logsumexp(xt, axis=-1), ref)
        if dtype == "float32":
            # tanh within 3 ulp on a dense grid and at the ends (signed zeros, tiny, +-inf, NaN)
            g = np.concatenate([np.linspace(-10, 10, 200001), np.geomspace(1e-30, 1e-2, 2001)])
            g = np.concatenate([g, -g]).astype(np.float32)
            got = oar.tanh(oar.to_tensor(g)).numpy().astype(np.float64)
            ref = np.tanh(g.astype(np.float64))
            ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
            worst = np.max(np.abs(got - ref) / ulp)
            checked += 1
            if not worst <= 3:
                failures.append(f"tanh[grid] float32: {worst:.2f} ulp")
            # erf within 1.5 ulp (Note [erf on vectors]): both forms and the switch at |x| = 1,
            # tiny and subnormal x (erf(x) = x + x q keeps them), the clamp at 3.93 and the ends
            g = np.concatenate([np.linspace(-5, 5, 400001), np.geomspace(1e-38, 1, 40001),
                                np.linspace(0.99, 1.01, 20001)])
            g = np.concatenate([g, -g]).astype(np.float32)
            got = oar.erf(oar.to_tensor(g)).numpy().astype(np.float64)
            ref = erf(g.astype(np.float64))
            ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
            worst = np.max(np.abs(got - ref) / ulp)
            checked += 1
            if not worst <= 1.5:
                failures.append(f"erf[grid] float32: {worst:.2f} ulp")
            e = oar.erf(oar.to_tensor(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.93, -20],
                                               np.float32))).numpy()
            if not (np.array_equal(e[:4], [0, 0, 1, -1]) and np.signbit(e[1]) and not np.signbit(e[0])
                    and np.isnan(e[4]) and e[5] == np.float32(1e-45) and e[6] == 1 and e[7] == -1):
                failures.append(f"erf[ends] float32: {e}")
            e = oar.tanh(oar.to_tensor(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 9.5, -44],
                                                np.float32))).numpy()
            if not (np.array_equal(e[:4], [0, 0, 1, -1]) and np.signbit(e[1]) and not np.signbit(e[0])
                    and np.isnan(e[4]) and e[5] == 1 and e[6] == -1):
                failures.append(f"tanh[ends] float32: {e}")
            # exp within 1 ulp (Note [The exp op on vec::exp]): a dense grid over vec::exp's
            # range, random points, and below kExpLo and at the top, where SLEEF takes the vector
            g = np.concatenate([np.linspace(-87.33, 88.72, 2000003), rng.uniform(-104, 88.72, 200001),
                                np.linspace(-104, -87.2, 20001), np.linspace(88.3, 88.72, 20001)]).astype(np.float32)
            got = oar.exp(oar.to_tensor(g)).numpy().astype(np.float64)
            ref = np.exp(g.astype(np.float64))
            ulp = np.ldexp(1.0, np.maximum(np.frexp(ref)[1] - 24, -149))  # float32's, subnormals too
            worst = np.max(np.abs(got - ref) / ulp)
            checked += 1
            if not worst <= 1:
                failures.append(f"exp[grid] float32: {worst:.3f} ulp")
            e = oar.exp(oar.to_tensor(np.array([-np.inf, -1e4, -104, 0.0, -0.0, 88.8, 1e4, np.inf, np.nan],
                                               np.float32))).numpy()
            if not (np.array_equal(e[:8], [0, 0, 0, 1, 1, np.inf, np.inf, np.inf]) and np.isnan(e[8])):
                failures.append(f"exp[ends] float32: {e}")
            # the loop takes two vectors at once and their fast path only when both lie in
            # |x| <= 87.33: one end value in either vector of a pair, each lane position, sends
            # that pair to the one-vector path (SLEEF, or vec::exp's arithmetic for 87.5)
            for v in (np.nan, np.inf, -np.inf, -104.0, 88.8, 87.5):
                for pos in (0, 5, 16, 31, 37):  # the pair's first vector, its second, the next pair
                    x = rng.uniform(-80, 80, 64).astype(np.float32)
                    x[pos] = v
                    with np.errstate(over="ignore", invalid="ignore"):
                        ref = np.exp(x.astype(np.float64))
                    got = oar.exp(oar.to_tensor(x)).numpy().astype(np.float64)
                    with np.errstate(over="ignore"):
                        ref32 = ref.astype(np.float32).astype(np.float64)
                    fin = np.isfinite(ref32)  # inf, NaN and the exact 0 below kExpLo: as they are
                    exact = np.array_equal(got[~fin], ref32[~fin], equal_nan=True)
                    ulp = np.ldexp(1.0, np.maximum(np.frexp(ref[fin])[1] - 24, -149))
                    if not (exact and np.all(np.abs(got[fin] - ref[fin]) <= ulp)):
                        failures.append(f"exp[pair] float32: {v} at lane {pos}")
            # the vector exps never make a subnormal (an Intel microcode assist per vector,
            # Note [Subnormal results on Intel]): exp below kExpLo (-87.33) is exactly 0
            # one 0 (so the sum is 1 and the exps are the outputs), then the range's end
            row = np.array([0] + [-87.2, -87.33, -87.34, -88, -95, -103.5, -120, -np.inf] * 5, np.float32)
            for n in (9, 17, 36):
                got = F.softmax(oar.to_tensor(row[None, :n]), axis=-1).numpy()
                check("softmax[underflow]", dtype, [1, n], got, softmax(row[None, :n].astype(np.float64), -1),
                      (2e-5, 1.2e-38))
                if np.any((got != 0) & (np.abs(got) < np.finfo(np.float32).tiny)):
                    failures.append(f"softmax[underflow] float32 [1, {n}]: subnormal results")
        # backward kernels live in the same sources: d(sum(w * f(x)))/dx
        for name, fn, dref in (
                ("tanh_grad", oar.tanh, lambda x, w: w * (1 - np.tanh(x) ** 2)),
                ("sigmoid_grad", F.sigmoid, lambda x, w: w * sig(x) * (1 - sig(x))),
                ("softmax_grad", lambda t: F.softmax(t, axis=-1),
                 lambda x, w: softmax(x, -1) * (w - (w * softmax(x, -1)).sum(-1, keepdims=True)))):
            for n in (1, 17, 1000):
                x = rng.standard_normal([3, n]).astype(dtype)
                w = rng.standard_normal([3, n]).astype(dtype)
                t = oar.to_tensor(x, stop_gradient=False)
                (fn(t) * oar.to_tensor(w)).sum().backward()
                check(name, dtype, [3, n], t.grad, dref(x.astype(np.float64), w.astype(np.float64)))
        # attention and the fused recurrent ops are ISA copies too (Notes [Fused LSTM],
        # [Packed key/value blocks]): against float64 NumPy, odd sizes, causal or not
        for (bsz, sq, sk, nh, dh) in ((1, 1, 1, 1, 8), (2, 17, 130, 2, 33), (1, 130, 600, 3, 16)):
            q, k, v = (rng.standard_normal([bsz, s_, nh, dh]).astype(dtype) for s_ in (sq, sk, sk))
            for causal in (False, True):
                sc = np.einsum("bqhd,bkhd->bhqk", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(dh)
                if causal:
                    sc = np.where(np.tril(np.ones((sq, sk), bool)), sc, -np.inf)
                ref = np.einsum("bhqk,bkhd->bqhd", softmax(sc, -1), v.astype(np.float64))
                got = F.scaled_dot_product_attention(oar.to_tensor(q), oar.to_tensor(k), oar.to_tensor(v),
                                                     is_causal=causal)
                check(f"sdpa(causal={causal})", dtype, [bsz, sq, sk, nh, dh], got, ref, (1e-4, 1e-5)
                      if dtype == "float32" else None)
        # cumsum / cumprod of rows: the in-register scans and their carry (stats_kernels.cc)
        for n in (1, 3, 4, 7, 8, 9, 17, 1001):
            x = rng.uniform(0.8, 1.25, [3, n]).astype(dtype)
            check("cumsum", dtype, [3, n], oar.cumsum(oar.to_tensor(x), axis=1),
                  np.cumsum(x.astype(np.float64), 1))
            check("cumprod", dtype, [3, n], oar.cumprod(oar.to_tensor(x), dim=1),
                  np.cumprod(x.astype(np.float64), 1))
        for (t_, b_, h_) in ((1, 1, 3), (7, 5, 13), (4, 16, 64)):
            xw = rng.standard_normal([t_, b_, 4 * h_]).astype(dtype)
            w = (rng.standard_normal([4 * h_, h_]) * 0.3).astype(dtype)
            bias = rng.standard_normal([4 * h_]).astype(dtype)
            h = rng.standard_normal([b_, h_]).astype(dtype)
            c = rng.standard_normal([b_, h_]).astype(dtype)
            out, _, _, _, _ = oar._C.ops._lstm_sequence(*(oar.to_tensor(a) for a in (xw, w, bias, h, c)))
            h, c, refs = h.astype(np.float64), c.astype(np.float64), []
            for t in range(t_):
                i, f, g, o = np.split(xw[t] + bias + h @ w.T.astype(np.float64), 4, -1)
                c = sig(f) * c + sig(i) * np.tanh(g)
                h = sig(o) * np.tanh(c)
                refs.append(h)
            check("lstm_sequence", dtype, [t_, b_, h_], out, np.stack(refs), (1e-4, 1e-5)
                  if dtype == "float32" else None)
    print(json.dumps({"capability": active_capability(), "checked": checked,
                      "failures": failures}))
''')


# The binary, comparison, logical and where kernels (binary_kernels.cc on elementwise.h's
# loops) under every capability: every op against float64 NumPy (exact for integers and
# comparisons) on odd sizes and vector tails, broadcast shapes, transposed and strided views,
# scalars, 0-size, NaN/inf, and the integer and 16-bit float dtypes the kernels serve. The
# source is baseline-only today (an AVX-512 copy measured slower, Note [CPU dispatch]); the
# per-capability runs keep covering it if it moves into OAR_ISA_KERNELS.
ELEMENTWISE_CHILD = textwrap.dedent(r'''
    import ctypes, json
    import numpy as np
    import oar

    with open("/proc/self/maps") as f:
        lib = {l.split()[-1] for l in f if "liboar_core" in l}.pop()
    cap = ctypes.CDLL(lib).oar_cpu_capability
    cap.restype = ctypes.c_char_p

    rng = np.random.default_rng(1)
    failures, checked = [], 0
    SIZES = [0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 1000, 4099]
    # The reference is the float64 result of the same (rounded) inputs, rounded to dtype: the
    # kernels compute 16-bit floats in float and round once more, so one ulp apart (float16
    # subnormals: one subnormal step).
    TOL = {"float32": 2e-7, "float64": 1e-15, "float16": 1e-3, "bfloat16": 8e-3}
    ATOL = {"float16": 6e-8}
    ARITH = {"add": (oar.add, np.add), "subtract": (oar.subtract, np.subtract),
             "multiply": (oar.multiply, np.multiply), "divide": (oar.divide, np.divide),
             "maximum": (oar.maximum, np.maximum), "minimum": (oar.minimum, np.minimum)}
    INT_ONLY = {"floor_divide": (oar.floor_divide, np.floor_divide),
                "remainder": (oar.remainder, np.remainder)}
    COMPARE = {"equal": (oar.equal, np.equal), "less_than": (oar.less_than, np.less),
               "greater_equal": (oar.greater_equal, np.greater_equal),
               "not_equal": (oar.not_equal, np.not_equal)}

    def to_oar(a, dtype):
        if dtype == "bfloat16":
            return oar.to_tensor(a.astype(np.float32)).astype("bfloat16")
        return oar.to_tensor(a.astype(dtype))

    def rounded(a, dtype):  # the values the kernel sees: the inputs after rounding to dtype
        if dtype == "bfloat16":
            return to_oar(a, dtype).astype("float32").numpy().astype(np.float64)
        return a.astype(dtype).astype(np.float64) if dtype.startswith("float") else a.astype(dtype)

    def result(t):
        t = t.astype("float32") if str(t.dtype).endswith("bfloat16") else t
        return t.numpy()

    def check(name, dtype, got, ref):
        global checked
        checked += 1
        got = result(got)
        if got.shape != ref.shape:
            failures.append(f"{name} {dtype}: shape {got.shape} != {ref.shape}")
        elif ref.dtype.kind in "biu":
            if not np.array_equal(got, ref):
                failures.append(f"{name} {dtype} {ref.shape}: {np.sum(got != ref)} elements differ")
        elif not np.allclose(got.astype(np.float64), ref, rtol=TOL[dtype], atol=ATOL.get(dtype, 0),
                             equal_nan=True):
            failures.append(f"{name} {dtype} {ref.shape}: max error "
                            f"{np.nanmax(np.abs(got.astype(np.float64) - ref)):.3g}")

    def sample(shape, dtype):
        if dtype.startswith("int"):
            return rng.integers(-50, 50, shape)
        x = rng.standard_normal(shape) * 4
        if x.size >= 8:  # NaN, +-inf and 0 in some lanes
            x.flat[rng.integers(0, x.size, 4)] = [np.nan, np.inf, -np.inf, 0.0]
        return x

    # (x shape, y shape, how x is viewed): same shape, row / column / outer broadcast,
    # a scalar operand, transposed and strided views
    def layouts(n):
        yield [n], [n], None
        yield [3, n], [n], None
        yield [n, 5], [n, 1], None
        yield [4, 1], [1, n], None
        yield [2, 3, n], [3, 1], None
        yield [n], [1], None
        yield [1], [n], None
        yield [n, 6], [6, n], "T"
        yield [3, 2 * n], [3, n], "stride"

    def view(t, a, how):
        if how == "T":
            return t.transpose([1, 0]), a.T
        if how == "stride":
            return t[:, ::2], a[:, ::2]
        return t, a

    with np.errstate(all="ignore"):
        for dtype in ("float32", "float64", "float16", "bfloat16", "int32", "int64"):
            ops = dict(ARITH, **(INT_ONLY if dtype.startswith("int") else {}))
            if dtype.startswith("int"):
                ops.pop("divide")  # true division of integers returns float: not this kernel
            for n in SIZES:
                for xs, ys, how in layouts(n):
                    a, b = rounded(sample(xs, dtype), dtype), rounded(sample(ys, dtype), dtype)
                    if dtype.startswith("int"):
                        b[b == 0] = 7  # integer division by zero raises
                    x, y = to_oar(a, dtype), to_oar(b, dtype)
                    x, a = view(x, a, how)
                    for name, (fn, ref) in ops.items():
                        r = ref(a, b)
                        if name in ("maximum", "minimum") and dtype.startswith("float"):
                            r = np.where(np.isnan(a) | np.isnan(b), np.nan, r)
                        if not dtype.startswith("int"):  # the exact result rounded to dtype
                            r = rounded(r.astype(np.float64), dtype)
                        check(f"{name}{xs}{ys}{how or ''}", dtype, fn(x, y), r)
                    for name, (fn, ref) in COMPARE.items():
                        check(f"{name}{xs}{ys}{how or ''}", dtype, fn(x, y), ref(a, b))
                    cond = rng.standard_normal(a.shape) > 0
                    check(f"where{xs}{ys}{how or ''}", dtype, oar.where(oar.to_tensor(cond), x, y),
                          np.where(cond, a, b))
                    check(f"where(x>0){xs}{ys}{how or ''}", dtype, oar.where(x > 0, x, y),
                          np.where(a > 0, a, b))
            # signed +, -, * wrap like NumPy's integers
            if dtype.startswith("int"):
                info = np.iinfo(dtype)
                a = np.array([info.max, info.min, info.max, -1, 5] * 7, dtype)
                b = np.array([1, -1, info.max, info.min, 3] * 7, dtype)
                for name in ("add", "subtract", "multiply"):
                    check(f"{name}[wrap]", dtype, ARITH[name][0](oar.to_tensor(a), oar.to_tensor(b)),
                          ARITH[name][1](a, b))
        for n in SIZES:  # logical ops on bool, odd sizes and a broadcast
            a, b = rng.standard_normal([3, n]) > 0, rng.standard_normal([n]) > 0
            for name, ref in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                              ("logical_xor", np.logical_xor)):
                check(f"{name}[3,{n}]", "bool", getattr(oar, name)(oar.to_tensor(a), oar.to_tensor(b)),
                      ref(a, b))
    print(json.dumps({"capability": cap().decode(), "checked": checked, "failures": failures}))
''')


# max_pool2d without the argmax, NCHW float32 (Note [Max pooling in registers] in the
# AVX-512 copy, max_plane_rows in both): random windows against a float64 reference, rows
# wide enough for whole-vector steps between the masked ends, and a NaN in one plane.
POOL_CHILD = textwrap.dedent(r"""
    import ctypes, json
    import numpy as np
    import oar
    import oar.nn.functional as F

    with open("/proc/self/maps") as f:
        lib = {l.split()[-1] for l in f if "liboar_core" in l}.pop()
    cap = ctypes.CDLL(lib).oar_cpu_capability
    cap.restype = ctypes.c_char_p

    def ref(x, k, s, p, ceil):  # Paddle's output size (ceil: no last-window correction)
        H, W = x.shape[2:]
        size = lambda n, k, s, p: (n + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
        OH, OW = size(H, k[0], s[0], p[0]), size(W, k[1], s[1], p[1])
        out = np.zeros(x.shape[:2] + (OH, OW))
        for i in range(OH):
            for j in range(OW):
                h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
                hs, he, ws, we = max(h0, 0), min(h0 + k[0], H), max(w0, 0), min(w0 + k[1], W)
                if he > hs and we > ws:
                    out[:, :, i, j] = x[:, :, hs:he, ws:we].max(axis=(2, 3))
        return out

    rng = np.random.default_rng(3)
    failures, checked = [], 0
    cases = [((1, 64, 32, 32), (3, 3), (2, 2), (1, 1), False),  # ResNet's stem pool
             ((1, 3, 9, 112), (3, 3), (2, 2), (1, 1), False), ((2, 2, 6, 100), (5, 5), (1, 1), (2, 2), False),
             ((1, 2, 5, 70), (3, 17), (1, 2), (0, 8), True), ((1, 2, 4, 65), (2, 16), (2, 1), (1, 0), True),
             ((1, 1, 3, 1), (1, 1), (1, 1), (0, 0), False), ((0, 2, 4, 4), (2, 2), (2, 2), (0, 0), False)]
    for _ in range(60):
        k = (int(rng.integers(1, 5)), int(rng.integers(1, 18)))
        s = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        p = (int(rng.integers(0, k[0] // 2 + 1)), int(rng.integers(0, k[1] // 2 + 1)))
        cases.append(((2, 3, int(rng.integers(k[0], 10)), int(rng.integers(k[1], 90))), k, s, p,
                      bool(rng.integers(0, 2))))
    for shape, k, s, p, ceil in cases:
        for fill in ("plain", "ties", "nan"):
            x = rng.standard_normal(shape).astype("float32")
            if fill == "ties":
                x = np.round(x)
            elif fill == "nan" and x.size:
                x[0, 0].flat[int(rng.integers(0, x[0, 0].size))] = np.nan  # one plane redone
            got = F.max_pool2d(oar.to_tensor(x), list(k), list(s), list(p), ceil_mode=ceil).numpy()
            want = ref(x.astype(np.float64), k, s, p, ceil)
            if fill == "nan" and x.size:  # the NaN rule is the indexed kernel's (test_conv_pool.py): compare
                want[0, 0] = F.max_pool2d(oar.to_tensor(x[:1, :1], stop_gradient=False), list(k), list(s),
                                          list(p), ceil_mode=ceil).numpy()[0, 0]
            checked += 1
            if got.shape != want.shape or not np.array_equal(got, want.astype(np.float32), equal_nan=True):
                failures.append(f"max_pool2d {shape} k{k} s{s} p{p} ceil={ceil} {fill}")
    print(json.dumps({"capability": cap().decode(), "checked": checked, "failures": failures}))
""")

def run_child(capability, src=CHILD):
    env = dict(os.environ, OAR_CPU_CAPABILITY=capability, OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


# Each child checks one group of kernels in every ISA copy; "least" guards against a child
# that silently checks nothing.
@pytest.mark.parametrize("child, least", [(CHILD, 900), (ELEMENTWISE_CHILD, 3000), (POOL_CHILD, 200)],
                         ids=["math", "elementwise", "max_pool"])
@pytest.mark.parametrize("capability", SUPPORTED)
def test_isa_copy_matches_float64(capability, child, least):
    res, _ = run_child(capability, child)
    assert res["capability"] == capability
    assert res["checked"] > least
    assert not res["failures"], "\n".join(res["failures"][:40])


def test_default_is_baseline_and_bad_value_warns():
    res, _ = run_child("default")
    assert res["capability"] == "avx2"
    env = dict(os.environ, OAR_CPU_CAPABILITY="sse9")
    src = ("import ctypes, oar\n"
           "libs = {l.split()[-1] for l in open('/proc/self/maps') if 'liboar_core' in l}\n"
           "f = ctypes.CDLL(libs.pop()).oar_cpu_capability\n"
           "f.restype = ctypes.c_char_p\nprint(f().decode())\n")
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "OAR_CPU_CAPABILITY=sse9" in p.stderr and "avx2, avx512, default" in p.stderr
    assert p.stdout.strip() == SUPPORTED[-1]  # falls back to the detected best


# Registers and mnemonics that exist only with AVX-512 (EVEX): zmm, xmm/ymm16-31, mask
# registers, and instructions without a VEX form.
AVX512_RE = re.compile(r"%zmm|%[xy]mm(1[6-9]|2\d|3[01])\b|%k[0-7]\b|\{%k|\bvpternlog|\bvpermt2"
                       r"|\bvpermi2|\bvrndscale|\bvscalef|\bvgetexp|\bvcompress|\bvexpand|\bkmov")


# AMX's mnemonics (tile loads and stores, the dot products, the tile configuration).
AMX_RE = re.compile(r"\btile(loadd|loaddt1|stored|zero|release)\b|\btdp|\b(ld|st)tilecfg\b")

# Sources whose AVX-512 and AMX code sits in functions that run only after a cpuid check
# (target attributes: Note [AMX GEMM], the bf16 probe of Note [bf16 dot or widened float],
# the 16-lane float <-> float16 cast when the AVX-512 copy is active, Note [AVX-512 sgemm]'s
# tiles, which sgemm_rowmajor runs only where the CPU has AVX-512): there only the
# functions of the file's anonymous namespace may use it; the functions the baseline calls
# must not. Each maps to the gated code it must hold.
RUNTIME_GATED = {"amx_gemm.cc.o": AMX_RE, "lowp_gemm.cc.o": re.compile(r"\bvdpbf16ps\b"),
                 "cast_kernels.cc.o": re.compile(r"\bvcvt(ps2ph|ph2ps)\b.*%zmm"),
                 "sgemm_avx512.cc.o": re.compile(r"\bvfmadd231ps\b.*%zmm")}

# Gated functions of a header, in its anonymous namespace, which any baseline object that
# uses them holds (elementwise.h's sixteen-lane float -> bfloat16 rounding, called where the
# AVX-512 copy is the active one, and its lane step if not inlined); the objects that must
# hold each.
HEADER_GATED = {"floats_to_bf16_x16": ("binary_kernels.cc.o", "cast_kernels.cc.o"), "bf16_bits": ()}


def wide_lines(obj):
    """The lines of obj's disassembly that only an AVX-512 (or AMX) CPU runs, outside the
    gated functions of a RUNTIME_GATED object."""
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True,
                         check=True).stdout
    gated = os.path.basename(obj) in RUNTIME_GATED
    hits, fn = [], ""
    for ln in asm.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.+)>:$", ln)
        if head:
            fn = head.group(1)
        elif (AVX512_RE.search(ln) or AMX_RE.search(ln)) and not (
                "_GLOBAL__N_" in fn and (gated or any(h in fn for h in HEADER_GATED))):
            hits.append(f"{fn}: {ln.strip()}")
    return hits


def build_objects(target):
    """The objects of a kernel library in the build tree the running oar was built in
    (build_tree.build_dirs: one tree, not every tree under build/, where another
    configuration may hold its own copies), as its build.ninja lists them (a glob would
    also find objects of sources that moved to another target)."""
    from build_tree import build_dirs

    for d in build_dirs():
        ninja = os.path.join(d, "build.ninja")
        if os.path.exists(ninja):
            with open(ninja) as f:
                text = f.read()
            rx = rf"^build (phi_kernels/CMakeFiles/{target}\.dir/[^:\s]*\.o):"
            return sorted(o for o in (os.path.join(d, m) for m in re.findall(rx, text, re.M))
                          if os.path.exists(o))
    return []


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_baseline_objects_have_no_avx512():
    """The baseline kernels and the avx2 copies must run on an AVX2-only CPU; only the
    avx512 copies may use AVX-512 (and they must, or the copy is not what it claims)."""
    base = build_objects("oar_phi_kernels") + build_objects("oar_phi_kernels_avx2")
    wide = build_objects("oar_phi_kernels_avx512")
    if not base or not wide:
        pytest.skip("no build tree with the per-ISA objects next to the sources")
    offenders = []
    for obj in base:
        hits = wide_lines(obj)
        if hits:
            offenders.append(f"{os.path.basename(obj)}: {hits[:3]}")
    assert not offenders, "\n".join(offenders)
    # each gated file is there and does hold its gated code (else the exception is stale)
    gated = [o for o in base if os.path.basename(o) in RUNTIME_GATED]
    assert len(gated) == len(RUNTIME_GATED), gated
    for obj in gated:
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True,
                             text=True, check=True).stdout
        name = os.path.basename(obj)
        assert RUNTIME_GATED[name].search(asm), f"{name} has no gated code: drop it from RUNTIME_GATED"
    for helper, holders in HEADER_GATED.items():
        for name in holders:
            obj = next(o for o in base if os.path.basename(o) == name)
            asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True,
                                 text=True, check=True).stdout
            body = re.search(rf"<[^>]*_GLOBAL__N_[^>]*{helper}[^>]*>:\n(.*?)\n\n", asm, re.S)
            assert body and "%zmm" in body.group(1), f"{name} has no gated {helper}: update HEADER_GATED"
    wide_hits = 0
    for obj in wide:
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True,
                             text=True, check=True).stdout
        wide_hits += any("%zmm" in ln for ln in asm.splitlines())
    assert wide_hits == len(wide), f"only {wide_hits}/{len(wide)} avx512 objects use zmm"
