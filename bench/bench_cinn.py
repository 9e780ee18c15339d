"""The fusion compiler on CPU (docs/notes/cinn.md), fp32 [4096, 4096], Oar and torch in
one run (bench/common.py). Rows:

  rmsnorm_*     fused (to_static backend='CINN'), composed (Oar eager ops), hand (the C++
                kernel bench/rmsnorm_hand.cc, g++ -O3 -march=native, called with ctypes on
                NumPy buffers), torch eager (composed), torch.compile (inductor, if it works)
  layernorm_*, softmax_*, gelu_bias_*: fused vs Oar's own kernel (F.layer_norm,
                F.softmax, F.gelu after the add) vs composed
  adam_*        an Adam step written as ops (new p, m, v from p, g, m, v; adam_inplace: the
                same written into p, m, v with copy_, Note [Input writes]) fused vs Oar's
                multi-tensor Adam kernel (_C._adam_update, in place) vs composed
  block_*       a Transformer encoder block (d=256, 4 heads, ff 1024, L=128, b=8, GELU,
                no dropout) forward + backward under to_static with and without CINN,
                and the first call of each (trace, passes, compile)
  copy_gbs      one-thread copy bandwidth (x.clone()) that the fused rows compare with
  compile_*_ms  cold compile per group (LLVM) and the load from the disk cache
  nvrtc_*_ms    the same groups' CUDA C compiled by NVRTC (median per kernel) to PTX and
                to an sm_90 CUBIN (no GPU needed; absent when built without NVRTC)

Usage: bash bench/run.sh cinn [--threads 1]
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

N = 4096
METRICS = [
    ("rmsnorm_fused_ms", "ms", "low"), ("rmsnorm_composed_ms", "ms", "low"),
    ("rmsnorm_hand_ms", "ms", "low"), ("rmsnorm_compile_ms", "ms", "low"),
    ("layernorm_fused_ms", "ms", "low"), ("layernorm_kernel_ms", "ms", "low"),
    ("layernorm_composed_ms", "ms", "low"),
    ("softmax_fused_ms", "ms", "low"), ("softmax_kernel_ms", "ms", "low"), ("softmax_composed_ms", "ms", "low"),
    ("gelu_bias_fused_ms", "ms", "low"), ("gelu_bias_kernel_ms", "ms", "low"),
    ("gelu_bias_composed_ms", "ms", "low"),
    ("adam_inplace_ms", "ms", "low"), ("adam_fused_ms", "ms", "low"), ("adam_kernel_ms", "ms", "low"), ("adam_composed_ms", "ms", "low"),
    ("block_cinn_ms", "ms", "low"), ("block_static_ms", "ms", "low"),
    ("block_first_call_cinn_s", "s", "low"), ("block_first_call_static_s", "s", "low"),
    ("copy_gbs", "GB/s", "high"), ("rmsnorm_fused_gbs", "GB/s", "high"),
    ("compile_cold_ms", "ms", "low"), ("compile_disk_ms", "ms", "low"),
    ("nvrtc_ptx_ms", "ms", "low"), ("nvrtc_cubin_ms", "ms", "low"),
]


def hand_library():
    """bench/rmsnorm_hand.cc built for this machine: rmsnorm_f32 (the `hand` row), its
    non-temporal-store twin rmsnorm_f32_nt, and copy_f32 / copy_f32_nt (ordinary and
    non-temporal stores; Note [Streaming stores] in docs/notes/cinn.md), adam_f32 /
    stream7_f32 (Adam in place by hand, and its streams with the least arithmetic)."""
    src = os.path.join(common.BENCH, "rmsnorm_hand.cc")
    out = os.path.join(tempfile.mkdtemp(prefix="oar_hand_"), "librmsnorm_hand.so")
    # -fno-math-errno: adam_f32's sqrt vectorizes (the others call no libm function per element)
    subprocess.run(["g++", "-O3", "-march=native", "-fno-math-errno", "-shared", "-fPIC", src, "-o", out], check=True)
    lib = ctypes.CDLL(out)
    for f in (lib.rmsnorm_f32, lib.rmsnorm_f32_nt):
        f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_int64, ctypes.c_float]
    for f in (lib.copy_f32, lib.copy_f32_nt):
        f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64]
    for f in (lib.adam_f32, lib.stream7_f32):  # the Adam floor: p, g, m, v, n
        f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64]
    return lib


def adam_inputs(oar, n=4096):
    """The Adam benches' tensors, [n, n] float32: p (standard normal), g (standard normal),
    m = 0 and v = 0.01 (cinn_adam_forms.py, cinn_adam_floor.py)."""
    import numpy as np
    rng = np.random.default_rng(0)
    p = oar.to_tensor(rng.standard_normal((n, n)).astype("float32"))
    g = oar.to_tensor(rng.standard_normal((n, n)).astype("float32"))
    return p, g, oar.zeros([n, n]), oar.ones([n, n]) * 0.01


def hand_kernel():
    return hand_library().rmsnorm_f32


def models(m):
    def rms(x, w):
        return x * m.rsqrt(m.mean(x * x, axis=-1, keepdim=True) + 1e-6) * w

    def ln(x, w):
        mu = m.mean(x, axis=-1, keepdim=True)
        d = x - mu
        return d * m.rsqrt(m.mean(d * d, axis=-1, keepdim=True) + 1e-5) * w + w

    def rowmax(x):  # torch.max(x, dim) returns (values, indices)
        return m.amax(x, -1, keepdim=True) if m.__name__ == "torch" else m.max(x, axis=-1, keepdim=True)

    def sm(x, w):
        e = m.exp(x - rowmax(x))
        return e / m.sum(e, axis=-1, keepdim=True)

    def gb(x, b):
        y = x + b
        return y * 0.5 * (m.erf(y * 0.7071067811865476) + 1.0)

    return {"rmsnorm": rms, "layernorm": ln, "softmax": sm, "gelu_bias": gb}


def adam_ops(p, g, m, v, sqrt):
    """One Adam step (lr 1e-3, betas 0.9/0.999, eps 1e-8, step 10) written as elementwise ops."""
    m2 = m * 0.9 + g * 0.1
    v2 = v * 0.999 + g * g * 0.001
    mh = m2 * (1.0 / (1.0 - 0.9 ** 10))
    vh = v2 * (1.0 / (1.0 - 0.999 ** 10))
    return p - mh * 1e-3 / (sqrt(vh) + 1e-8), m2, v2


def adam_ops_inplace(p, g, m, v, sqrt):
    """adam_ops written as Paddle users update in place: p, m and v hold the new values
    (Note [Input writes] in docs/notes/jit.md: the fused group computes them in place)."""
    m.copy_(m * 0.9 + g * 0.1)
    v.copy_(v * 0.999 + g * g * 0.001)
    mh = m * (1.0 / (1.0 - 0.9 ** 10))
    vh = v * (1.0 / (1.0 - 0.999 ** 10))
    p.copy_(p - mh * 1e-3 / (sqrt(vh) + 1e-8))


def oar_cases(oar):
    import numpy as np
    F = oar.nn.functional
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((N, N)).astype("float32")
    wn = rng.standard_normal(N).astype("float32")
    x, w = oar.to_tensor(xn), oar.to_tensor(wn)
    ms = models(oar)
    own = {"layernorm": lambda: F.layer_norm(x, [N], w, w, 1e-5), "softmax": lambda: F.softmax(x, -1),
           "gelu_bias": lambda: F.gelu(x + w)}
    cache = tempfile.mkdtemp(prefix="oar_cinn_bench_")
    oar.set_flags({"FLAGS_cinn_cache_dir": cache})

    def row(name):
        def run():
            from oar import _C
            _C.cinn.reset_cache_stats()
            fused = oar.jit.to_static(ms[name], backend="CINN")
            t0 = time.perf_counter()
            fused(x, w)
            first = time.perf_counter() - t0
            s = _C.cinn.cache_stats()
            out = {f"{name}_fused_ms": common.bench(lambda: fused(x, w)) * 1e3,
                   f"{name}_composed_ms": common.bench(lambda: ms[name](x, w)) * 1e3}
            if name in own:
                out[f"{name}_kernel_ms"] = common.bench(own[name]) * 1e3
            if name == "rmsnorm":
                out["rmsnorm_compile_ms"] = s["compile_seconds"] * 1e3 / max(1, s["compiles"])
                out["rmsnorm_fused_gbs"] = 2 * N * N * 4 / (out["rmsnorm_fused_ms"] * 1e-3) / 1e9
                print(f"rmsnorm first call {first * 1e3:.1f} ms", file=sys.stderr)
            return out
        return run

    def hand():
        fn = hand_kernel()
        o = np.empty_like(xn)
        args = (xn.ctypes.data, wn.ctypes.data, o.ctypes.data, N, N, 1e-6)
        fn(*args)
        ref = ms["rmsnorm"](x, w).numpy()
        assert np.allclose(o, ref, rtol=1e-4, atol=1e-4)
        return {"rmsnorm_hand_ms": common.bench(lambda: fn(*args)) * 1e3}

    def copy():
        t = common.bench(lambda: x.clone())
        return {"copy_gbs": 2 * N * N * 4 / t / 1e9}

    def adam():
        from oar import _C
        p, g = oar.to_tensor(xn), oar.to_tensor(rng.standard_normal((N, N)).astype("float32"))
        m1, m2 = oar.zeros([N, N]), oar.ones([N, N]) * 0.01

        def step(p, g, m, v):
            return adam_ops(p, g, m, v, oar.sqrt)

        fused = oar.jit.to_static(step, backend="CINN")
        ref = step(p, g, m1, m2)
        for a, b in zip(fused(p, g, m1, m2), ref):
            assert np.allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
        kp, km1, km2 = p.clone(), m1.clone(), m2.clone()
        ip, im1, im2 = p.clone(), m1.clone(), m2.clone()
        inplace = oar.jit.to_static(lambda p, g, m, v: adam_ops_inplace(p, g, m, v, oar.sqrt), backend="CINN")
        return {"adam_inplace_ms": common.bench(lambda: inplace(ip, g, im1, im2)) * 1e3,
                "adam_fused_ms": common.bench(lambda: fused(p, g, m1, m2)) * 1e3,
                "adam_composed_ms": common.bench(lambda: step(p, g, m1, m2)) * 1e3,
                "adam_kernel_ms": common.bench(lambda: _C._adam_update(
                    [kp], [g], [km1], [km2], [1e-3], [0.0], 0.9, 0.999, 1e-8, False, 10)) * 1e3}

    def block():
        from oar import _C
        _C.cinn.forget_memory_cache()
        xb = oar.to_tensor(rng.standard_normal((8, 128, 256)).astype("float32"))
        out = {}
        for mode in ("static", "cinn"):
            oar.seed(0)
            net = oar.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu")
            fn = oar.jit.to_static(net, backend="CINN" if mode == "cinn" else None)

            def step():
                fn(xb).mean().backward()
                net.clear_gradients()

            t0 = time.perf_counter()
            step()
            out[f"block_first_call_{mode}_s"] = time.perf_counter() - t0
            out[f"block_{mode}_ms"] = common.bench(step) * 1e3
        return out

    def compile_times():
        # Cold: a fresh cache folder per group; disk: the same groups in a child process.
        from oar import _C
        cold = tempfile.mkdtemp(prefix="oar_cinn_cold_")
        oar.set_flags({"FLAGS_cinn_cache_dir": cold})
        _C.cinn.forget_memory_cache()
        _C.cinn.reset_cache_stats()
        small = oar.to_tensor(xn[:8])
        for f in ms.values():
            oar.jit.to_static(f, backend="CINN")(small, w)
        s = _C.cinn.cache_stats()
        out = {"compile_cold_ms": s["compile_seconds"] * 1e3 / max(1, s["compiles"])}
        _C.cinn.forget_memory_cache()
        _C.cinn.reset_cache_stats()
        for f in ms.values():
            oar.jit.to_static(f, backend="CINN")(small, w)
        s = _C.cinn.cache_stats()
        out["compile_disk_ms"] = s["load_seconds"] * 1e3 / max(1, s["disk_hits"])
        shutil.rmtree(cold, ignore_errors=True)
        if _C.cinn.compiled_with_nvrtc():
            ks = _C.cinn.cuda_kernels()
            for kind, cubin in (("ptx", False), ("cubin", True)):
                t = sorted(_C.cinn.nvrtc_compile(k["source"], k["name"], cubin)["seconds"] for k in ks)
                out[f"nvrtc_{kind}_ms"] = t[len(t) // 2] * 1e3
        return out

    cases = {n: row(n) for n in ms}
    cases.update({"hand": hand, "copy": copy, "adam": adam, "block": block, "compile": compile_times})
    return cases


def torch_cases(torch):
    x = torch.randn(N, N)
    w = torch.randn(N)
    ms = models(torch)
    F = torch.nn.functional
    own = {"layernorm": lambda: F.layer_norm(x, [N], w, w, 1e-5), "softmax": lambda: F.softmax(x, -1),
           "gelu_bias": lambda: F.gelu(x + w)}

    def row(name):
        def run():
            out = {f"{name}_composed_ms": common.bench(lambda: ms[name](x, w)) * 1e3}
            if name in own:
                out[f"{name}_kernel_ms"] = common.bench(own[name]) * 1e3
            try:
                c = torch.compile(ms[name])
                c(x, w)
                out[f"{name}_fused_ms"] = common.bench(lambda: c(x, w)) * 1e3
            except Exception as e:  # inductor needs a C++ toolchain and may be missing
                print(f"torch.compile {name}: {type(e).__name__}: {e}", file=sys.stderr)
            return out
        return run

    def copy():
        t = common.bench(lambda: x.clone())
        return {"copy_gbs": 2 * N * N * 4 / t / 1e9}

    cases = {n: row(n) for n in ms}
    cases["copy"] = copy
    return cases


def cases(fw, mod):
    return oar_cases(mod) if fw == "oar" else torch_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
