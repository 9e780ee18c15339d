"""Core suite: dispatch overhead, tiny autograd, matmul vs machine peak, MLP training step.

    python3 bench/bench_core.py [--frameworks oar,torch] [--threads 1,2]

The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`).
"""
import os
import statistics

import numpy as np

import common
import peak

METRICS = [
    ("add_1elem_us", "us", "low"),          # Python-to-kernel overhead: add of two [1] float32
    ("fwd_bwd_tiny_us", "us", "low"),       # y = (x*w).sum(); y.backward() on [4,4]
    ("matmul1024_ms", "ms", "low"),         # 1024^3 float32 matmul
    ("matmul1024_gflops", "GFLOP/s", "high"),
    ("sgemm2048_gflops", "GFLOP/s", "high"),  # 2048^3 sgemm
    ("fp32_peak_gflops", "GFLOP/s", "high"),  # the FMA loop of bench/peak.py on `thr` cores
    ("matmul1024_pct_peak", "%", "high"),   # of fp32_peak_gflops
    ("sgemm2048_pct_peak", "%", "high"),
    # the median over the timed repeats of the repeat's GFLOP/s over the FMA loop's, run right
    # after it on as many threads: the share of the peak at the same moment, which a host whose
    # speed drifts within minutes (docs/notes/cpu_speed_steps.md "Stop 73") moves far less
    ("matmul1024_pct_paired", "%", "high"),
    ("sgemm2048_pct_paired", "%", "high"),
    ("mlp_sgd_step_ms", "ms", "low"),       # MLP 784-512-512-10, batch 128, fwd+bwd+SGD step
    # bf16 2048^3 matmul, only where the CPU has bf16 dot products (AVX512-BF16, AMX): torch's
    # bf16 matmul without them runs at ~1 GFLOP/s (minutes a call; docs/notes/gemm_backends.md)
    ("bf16_matmul2048_gflops", "GFLOP/s", "high"),
    ("bf16_peak_gflops", "GFLOP/s", "high"),  # the bf16 loop of bench/peak.py on `thr` cores
    ("bf16_matmul2048_pct_peak", "%", "high"),  # of bf16_peak_gflops
    # bf16 conv2d 3x3 p1 [8,256,14,14] -> 256 (ResNet layer3), same condition
    ("bf16_conv3x3_gflops", "GFLOP/s", "high"),
    ("bf16_conv3x3_pct_peak", "%", "high"),  # of bf16_peak_gflops
    # int8 x int8 -> int32 2048^3, where the CPU has VNNI or AMX-INT8: Oar's internal GEMM
    # (oar_s8gemm_rowmajor through ctypes; no op exposes it yet), torch's torch._int_mm
    ("int8_gemm2048_gops", "GOP/s", "high"),
]
# (a run forced to AVX2, common.py's --isa, has none: neither framework may use them)
BF16_HW = bool({"avx512_bf16", "amx_bf16"} & peak.cpu_flags()) and common.forced_isa() != "avx2"
INT8_HW = bool({"avx512_vnni", "avx_vnni", "amx_int8"} & peak.cpu_flags()) and common.forced_isa() != "avx2"

rng = np.random.default_rng(0)
A1, B1 = rng.standard_normal([1], dtype=np.float32), rng.standard_normal([1], dtype=np.float32)
X4, W4 = rng.standard_normal([4, 4], dtype=np.float32), rng.standard_normal([4, 4], dtype=np.float32)
M1024 = [rng.standard_normal([1024, 1024], dtype=np.float32) for _ in range(2)]
M2048 = [rng.standard_normal([2048, 2048], dtype=np.float32) for _ in range(2)]
XC, WC = rng.standard_normal([8, 256, 14, 14], dtype=np.float32), rng.standard_normal([256, 256, 3, 3], dtype=np.float32)
CONV_FLOP = 2 * 8 * 256 * 14 * 14 * 256 * 9
XB = rng.standard_normal([128, 784], dtype=np.float32)
YB = rng.integers(0, 10, [128], dtype=np.int64)
I8 = [rng.integers(-128, 128, [2048, 2048]).astype(np.int8) for _ in range(2)]


def bench_paired(fn, flops, repeat=7, target=0.1):
    """common.bench's median seconds per call of fn(), and the median over the repeats of the
    repeat's FLOP/s over bench/peak.py's FMA loop run right after it on this worker's threads,
    in %."""
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    n = common._calls_per_repeat(fn, target, 3)
    times, shares = [], []
    for _ in range(repeat):
        t0 = common.CLOCK()
        for _ in range(n):
            fn()
        times.append((common.CLOCK() - t0) / n)
        shares.append(100 * flops / times[-1] / peak.fp32_rate_now(threads))
    return statistics.median(times), statistics.median(shares)


def matmul_cases(mm, to_tensor, to_bf16):
    def matmul1024():
        a, b = map(to_tensor, M1024)
        t, share = bench_paired(lambda: mm(a, b), 2 * 1024**3)
        return {"matmul1024_ms": t * 1e3, "matmul1024_gflops": 2 * 1024**3 / t / 1e9, "matmul1024_pct_paired": share}

    def sgemm2048():
        c, d = map(to_tensor, M2048)
        t, share = bench_paired(lambda: mm(c, d), 2 * 2048**3, repeat=5)
        return {"sgemm2048_gflops": 2 * 2048**3 / t / 1e9, "sgemm2048_pct_paired": share}

    def bf16_matmul2048():
        c, d = (to_bf16(to_tensor(m)) for m in M2048)
        return {"bf16_matmul2048_gflops": 2 * 2048**3 / common.bench(lambda: mm(c, d), repeat=5) / 1e9}

    return {"matmul1024": matmul1024, "sgemm2048": sgemm2048, **({"bf16_matmul2048": bf16_matmul2048} if BF16_HW else {})}


def conv_cases(conv, to_tensor, to_bf16):
    def bf16_conv3x3():
        x, w = (to_bf16(to_tensor(m)) for m in (XC, WC))
        return {"bf16_conv3x3_gflops": CONV_FLOP / common.bench(lambda: conv(x, w, padding=1), repeat=5) / 1e9}

    return {"bf16_conv3x3": bf16_conv3x3} if BF16_HW else {}


def torch_cases(torch):
    t = torch.from_numpy

    def add():
        a, b = t(A1), t(B1)
        return {"add_1elem_us": common.bench(lambda: torch.add(a, b)) * 1e6}

    def fwd_bwd():
        x, w = t(X4).requires_grad_(), t(W4).requires_grad_()
        return {"fwd_bwd_tiny_us": common.bench(lambda: (x * w).sum().backward()) * 1e6}

    def mlp_step():
        nn = torch.nn
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        xb, yb = t(XB), t(YB)

        def step():
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return {"mlp_sgd_step_ms": common.bench(step) * 1e3}

    def int8_gemm():
        a, b = t(I8[0]), t(I8[1])
        return {"int8_gemm2048_gops": 2 * 2048**3 / common.bench(lambda: torch._int_mm(a, b), repeat=5) / 1e9}

    to_bf16 = lambda x: x.to(torch.bfloat16)  # noqa: E731
    return {"add": add, "fwd_bwd": fwd_bwd, **matmul_cases(torch.matmul, t, to_bf16),
            **conv_cases(torch.nn.functional.conv2d, t, to_bf16), "mlp_step": mlp_step,
            **({"int8_gemm": int8_gemm} if INT8_HW else {})}


def oar_cases(paddle):
    t = paddle.to_tensor

    def add():
        a, b = t(A1), t(B1)
        return {"add_1elem_us": common.bench(lambda: paddle.add(a, b)) * 1e6}

    def fwd_bwd():
        x, w = t(X4, stop_gradient=False), t(W4, stop_gradient=False)
        return {"fwd_bwd_tiny_us": common.bench(lambda: (x * w).sum().backward()) * 1e6}

    def mlp_step():
        nn = paddle.nn
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        loss_fn = nn.CrossEntropyLoss()
        opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
        xb, yb = t(XB), t(YB)

        def step():
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            opt.clear_grad()
        return {"mlp_sgd_step_ms": common.bench(step) * 1e3}

    def int8_gemm():
        import ctypes
        with open("/proc/self/maps") as f:
            core = next(line.split()[-1] for line in f if "liboar_core" in line)
        fn = ctypes.CDLL(core).oar_s8gemm_rowmajor
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        fn.argtypes = [ctypes.c_int, ctypes.c_int, i64, i64, i64, ptr, i64, ptr, i64, ptr, i64]
        a, b = I8
        c = np.empty((2048, 2048), np.int32)
        args = (0, 0, 2048, 2048, 2048, a.ctypes.data, 2048, b.ctypes.data, 2048, c.ctypes.data, 2048)
        assert fn(*args) == 0
        return {"int8_gemm2048_gops": 2 * 2048**3 / common.bench(lambda: fn(*args), repeat=5) / 1e9}

    to_bf16 = lambda x: x.astype("bfloat16")  # noqa: E731
    return {"add": add, "fwd_bwd": fwd_bwd, **matmul_cases(paddle.matmul, t, to_bf16),
            **conv_cases(paddle.nn.functional.conv2d, t, to_bf16), "mlp_step": mlp_step,
            **({"int8_gemm": int8_gemm} if INT8_HW else {})}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


def derive(runs, threads_list):
    """GEMM throughput as % of the machine's FP32 FMA peak (bf16: its bf16 dot-product peak),
    measured by bench/peak.py on as many cores as the run's threads (not of any framework's
    own sgemm)."""
    for t in threads_list:
        fp32, bf16 = peak.fp32_peak(t), peak.bf16_peak(t)
        for fw in runs:
            r = runs[fw][t]["results"]
            r["fp32_peak_gflops"] = fp32
            for n in ("matmul1024", "sgemm2048"):
                if fp32 and f"{n}_gflops" in r:
                    r[f"{n}_pct_peak"] = 100 * r[f"{n}_gflops"] / fp32
            for n in ("bf16_matmul2048", "bf16_conv3x3"):
                if bf16 and f"{n}_gflops" in r:
                    r["bf16_peak_gflops"] = bf16
                    r[f"{n}_pct_peak"] = 100 * r[f"{n}_gflops"] / bf16


if __name__ == "__main__":
    common.main(__file__, METRICS, cases, derive)
