"""Math suite: elementwise transcendentals, scans, sorting and reductions on 1M float32.

    python3 bench/bench_math.py [--frameworks oar,torch] [--threads 1]

The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`); each metric is
the median time of one call on the same 1M-element (or 1000 x 1000) input.
"""
import numpy as np

import common

N = 1 << 20
OPS = ["exp", "log1p", "erf", "tanh", "cumsum", "topk100", "sort", "std", "logsumexp",
       "logsumexp_rows", "var_rows", "median"]
METRICS = [(f"{op}_ms", "ms", "low") for op in OPS]

rng = np.random.default_rng(0)
X = rng.standard_normal(N, dtype=np.float32)
XP = np.abs(X)  # log1p's domain
M = rng.standard_normal([1024, 1024], dtype=np.float32)


def _timed(fns):
    return {f"{name}_ms": common.bench(fn) * 1e3 for name, fn in fns.items()}


def torch_cases(torch):
    x, xp, m = torch.from_numpy(X), torch.from_numpy(XP), torch.from_numpy(M)
    fns = {
        "exp": lambda: torch.exp(x), "log1p": lambda: torch.log1p(xp),
        "erf": lambda: torch.erf(x), "tanh": lambda: torch.tanh(x),
        "cumsum": lambda: torch.cumsum(x, 0), "topk100": lambda: torch.topk(x, 100),
        "sort": lambda: torch.sort(x), "std": lambda: torch.std(x),
        "logsumexp": lambda: torch.logsumexp(x, 0),
        "logsumexp_rows": lambda: torch.logsumexp(m, 1), "var_rows": lambda: torch.var(m, 1),
        "median": lambda: torch.quantile(x, 0.5),
    }
    return {name: (lambda name=name: _timed({name: fns[name]})) for name in fns}


def oar_cases(paddle):
    x, xp, m = paddle.to_tensor(X), paddle.to_tensor(XP), paddle.to_tensor(M)
    fns = {
        "exp": lambda: paddle.exp(x), "log1p": lambda: paddle.log1p(xp),
        "erf": lambda: paddle.erf(x), "tanh": lambda: paddle.tanh(x),
        "cumsum": lambda: paddle.cumsum(x, 0), "topk100": lambda: paddle.topk(x, 100),
        "sort": lambda: paddle.sort(x), "std": lambda: paddle.std(x),
        "logsumexp": lambda: paddle.logsumexp(x, 0),
        "logsumexp_rows": lambda: paddle.logsumexp(m, 1), "var_rows": lambda: paddle.var(m, 1),
        "median": lambda: paddle.median(x),
    }
    return {name: (lambda name=name: _timed({name: fns[name]})) for name in fns}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
