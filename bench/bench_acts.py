"""Activations suite: nn.functional activations and pointwise math on 1M float32, forward and
forward + backward, against PyTorch.

    python3 bench/bench_acts.py [--frameworks oar,torch] [--threads 1]

The activations of Paddle's nn.functional (leaky_relu, elu, selu, celu, softplus,
log_sigmoid, mish, silu, hard*, soft*, tanhshrink, thresholded_relu) and the pointwise ops
that ran as scalar loops before stop 60 (erf, pow with a scalar exponent, round, remainder,
atan2) or before stop 72 (floor, trunc, frac, copysign, nextafter, float -> integer casts,
int64 floor_divide / remainder / gcd). The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`); each
metric is the median time of one call; "_fb" is the forward and the backward of the sum
with a ones gradient (the input's .grad cleared each call).
"""
import numpy as np

import common

N = 1 << 20
rng = np.random.default_rng(0)
X = rng.standard_normal(N, dtype=np.float32) * 3
Y = rng.uniform(0.5, 2.0, N).astype(np.float32)

# name: (paddle call, torch call), each given (module, nn.functional, x[, y])
ACTS = {
    "leaky_relu": (lambda p, F, x: F.leaky_relu(x, 0.1), lambda t, F, x: F.leaky_relu(x, 0.1)),
    "elu": (lambda p, F, x: F.elu(x), lambda t, F, x: F.elu(x)),
    "selu": (lambda p, F, x: F.selu(x), lambda t, F, x: F.selu(x)),
    "celu": (lambda p, F, x: F.celu(x), lambda t, F, x: F.celu(x)),
    "softplus": (lambda p, F, x: F.softplus(x), lambda t, F, x: F.softplus(x)),
    "log_sigmoid": (lambda p, F, x: F.log_sigmoid(x), lambda t, F, x: F.logsigmoid(x)),
    "mish": (lambda p, F, x: F.mish(x), lambda t, F, x: F.mish(x)),
    "silu": (lambda p, F, x: F.silu(x), lambda t, F, x: F.silu(x)),
    "hardswish": (lambda p, F, x: F.hardswish(x), lambda t, F, x: F.hardswish(x)),
    "hardsigmoid": (lambda p, F, x: F.hardsigmoid(x), lambda t, F, x: F.hardsigmoid(x)),
    "relu6": (lambda p, F, x: F.relu6(x), lambda t, F, x: F.relu6(x)),
    "hardtanh": (lambda p, F, x: F.hardtanh(x), lambda t, F, x: F.hardtanh(x)),
    "softsign": (lambda p, F, x: F.softsign(x), lambda t, F, x: F.softsign(x)),
    "tanhshrink": (lambda p, F, x: F.tanhshrink(x), lambda t, F, x: F.tanhshrink(x)),
    "hardshrink": (lambda p, F, x: F.hardshrink(x), lambda t, F, x: F.hardshrink(x)),
    "softshrink": (lambda p, F, x: F.softshrink(x), lambda t, F, x: F.softshrink(x)),
    "thresholded_relu": (lambda p, F, x: F.thresholded_relu(x, 1.0), lambda t, F, x: F.threshold(x, 1.0, 0.0)),
    "erf": (lambda p, F, x: p.erf(x), lambda t, F, x: t.erf(x)),
    "pow3": (lambda p, F, x: p.pow(x, 3.0), lambda t, F, x: t.pow(x, 3.0)),
}
# forward only: (paddle, torch) given (module, x, y)
MATH = {
    "pow_1_7": (lambda p, x, y: p.pow(y, 1.7), lambda t, x, y: t.pow(y, 1.7)),
    "round": (lambda p, x, y: p.round(x), lambda t, x, y: t.round(x)),
    "remainder": (lambda p, x, y: p.remainder(x, y), lambda t, x, y: t.remainder(x, y)),
    "atan2": (lambda p, x, y: p.atan2(x, y), lambda t, x, y: t.atan2(x, y)),
    # rounding, bits and casts (a survey at stop 72 found them at 1.2-18x torch)
    "floor": (lambda p, x, y: p.floor(x), lambda t, x, y: t.floor(x)),
    "trunc": (lambda p, x, y: p.trunc(x), lambda t, x, y: t.trunc(x)),
    "frac": (lambda p, x, y: p.frac(x), lambda t, x, y: t.frac(x)),
    "copysign": (lambda p, x, y: p.copysign(y, x), lambda t, x, y: t.copysign(y, x)),
    "nextafter": (lambda p, x, y: p.nextafter(x, y), lambda t, x, y: t.nextafter(x, y)),
    "to_int32": (lambda p, x, y: x.astype("int32"), lambda t, x, y: x.to(t.int32)),
    "to_uint8": (lambda p, x, y: y.astype("uint8"), lambda t, x, y: y.to(t.uint8)),
}
# int64 operands (Paddle's default integer): (paddle, torch) given (module, i, j), j > 0
INTS = {
    "floor_divide_i64": (lambda p, i, j: p.floor_divide(i, j), lambda t, i, j: t.floor_divide(i, j)),
    "remainder_i64": (lambda p, i, j: p.remainder(i, j), lambda t, i, j: t.remainder(i, j)),
    "remainder_i64_scalar": (lambda p, i, j: i % 7, lambda t, i, j: i % 7),
    "gcd_i64": (lambda p, i, j: p.gcd(i, j), lambda t, i, j: t.gcd(i, j)),
}
METRICS = ([(f"{a}_ms", "ms", "low") for a in ACTS] + [(f"{a}_fb_ms", "ms", "low") for a in ACTS]
           + [(f"{m}_ms", "ms", "low") for m in MATH] + [(f"{m}_ms", "ms", "low") for m in INTS])
IA = rng.integers(-100000, 100000, N)
IB = rng.integers(1, 1000, N)


def _cases(fw, mod):
    if fw == "torch":
        import torch.nn.functional as F
        x, y = mod.from_numpy(X), mod.from_numpy(Y)
        ia, ib = mod.from_numpy(IA), mod.from_numpy(IB)
        xg = x.clone().requires_grad_()
        ones = mod.ones_like(x)

        def fb(f):
            xg.grad = None
            f(mod, F, xg).backward(ones)
    else:
        F = mod.nn.functional
        x, y = mod.to_tensor(X), mod.to_tensor(Y)
        ia, ib = mod.to_tensor(IA), mod.to_tensor(IB)
        xg = mod.to_tensor(X, stop_gradient=False)
        ones = mod.ones_like(x)

        def fb(f):
            xg.clear_gradient() if xg.grad is not None else None
            f(mod, F, xg).backward(ones)
    i = 0 if fw == "oar" else 1
    out = {}
    for name, fs in ACTS.items():
        f = fs[i]
        out[name] = lambda f=f, name=name: {
            f"{name}_ms": common.bench(lambda: f(mod, F, x)) * 1e3,
            f"{name}_fb_ms": common.bench(lambda: fb(f)) * 1e3}
    for name, fs in MATH.items():
        f = fs[i]
        out[name] = lambda f=f, name=name: {f"{name}_ms": common.bench(lambda: f(mod, x, y)) * 1e3}
    for name, fs in INTS.items():
        f = fs[0 if fw == "oar" else 1]
        out[name] = lambda f=f, name=name: {f"{name}_ms": common.bench(lambda: f(mod, ia, ib)) * 1e3}
    return out


def cases(fw, mod):
    return _cases(fw, mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
