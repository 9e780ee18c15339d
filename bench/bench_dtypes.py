"""Dtypes suite: pointwise, softmax, reduction, scan, interpolation, matmul and attention calls
in bfloat16, float16 and float64, against PyTorch. A survey at stop 65 found these at 1.3-14x
torch's time where float32 was at parity: 16-bit rows that converted an element at a time, a
scalar clip, libm's double exp (docs/notes/cpu_speed_steps.md, "Stop 65").

    python3 bench/bench_dtypes.py [--frameworks oar,torch] [--threads 1]

[1024, 1024] unless said; the oar side is written as PaddlePaddle 3.x code (`import oar as
paddle`); each metric is the median time of one call; "_fb" is the forward and the backward of
the sum (the input's .grad cleared each call).
"""
import numpy as np

import common

rng = np.random.default_rng(0)
A = rng.standard_normal((1024, 1024)).astype(np.float32)
B = rng.standard_normal((1024, 1024)).astype(np.float32)
IMG = rng.standard_normal((8, 64, 32, 32)).astype(np.float32)
X3 = rng.standard_normal((16, 128, 256)).astype(np.float32)
LW = (rng.standard_normal((256, 256)) * 0.05).astype(np.float32)
Q = rng.standard_normal((8, 4, 128, 64)).astype(np.float32)  # [B, H, S, D]: torch's layout

DTYPES = {"bf16": "bfloat16", "f16": "float16", "f64": "float64"}
CALLS = ["clip", "softmax", "log_softmax", "softmax_fb", "gelu_fb", "max_rows", "cumsum", "interp",
         "matmul", "linear", "sdpa_causal"]
NAMES = [f"{k}_{c}" for k in DTYPES for c in CALLS]
METRICS = [(f"{n}_ms", "ms", "low") for n in NAMES]


def cases(fw, mod):
    t = fw == "torch"
    if t:
        import torch.nn.functional as F
    else:
        F = mod.nn.functional

    def T(a, dtype, grad=False):
        if t:
            x = mod.from_numpy(np.ascontiguousarray(a)).to(getattr(mod, dtype))
            return x.requires_grad_() if grad else x
        x = mod.to_tensor(a).astype(dtype)
        x.stop_gradient = not grad
        return x

    def fb(f, x):
        def run():
            x.grad = None if t else x.clear_gradient()
            f().sum().backward()
        return run

    ax = (lambda k: {"dim": k}) if t else (lambda k: {"axis": k})
    out = {}
    for key, dt in DTYPES.items():
        a, b, img, x3, lw = T(A, dt), T(B, dt), T(IMG, dt), T(X3, dt), T(LW, dt)
        ag = T(A, dt, grad=True)
        q = T(Q, dt) if t else T(Q.transpose(0, 2, 1, 3), dt)  # Paddle's [B, S, H, D]
        calls = {
            "clip": lambda a=a: mod.clip(a, -0.5, 0.5),
            "softmax": lambda a=a: F.softmax(a, **ax(-1)),
            "log_softmax": lambda a=a: F.log_softmax(a, **ax(-1)),
            "softmax_fb": fb(lambda ag=ag: F.softmax(ag, **ax(-1)), ag),
            "gelu_fb": fb(lambda ag=ag: F.gelu(ag), ag),
            "max_rows": (lambda a=a: a.amax(1)) if t else (lambda a=a: a.max(axis=1)),
            "cumsum": lambda a=a: mod.cumsum(a, **ax(1)),
            "interp": lambda img=img: F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False),
            "matmul": lambda a=a, b=b: a @ b,
            "linear": (lambda x3=x3, lw=lw: F.linear(x3, lw.T)) if t else (lambda x3=x3, lw=lw: F.linear(x3, lw)),
            "sdpa_causal": lambda q=q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
        }
        for c, f in calls.items():
            out[f"{key}_{c}"] = (lambda f=f, n=f"{key}_{c}": {f"{n}_ms": common.bench(f) * 1e3})
    return out


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
