"""Ops suite: per-op Oar vs PyTorch CPU time (conv2d at ResNet shapes, norms, softmax,
attention, activations, elementwise and reductions at 1M elements, matmul, manipulation).

    bash bench/run.sh ops [--threads 1,2] [--frameworks oar,torch] [--rounds 3] [--ops relu,add]

Runs at 1 thread unless --threads is given. With --rounds N the oar and torch workers
alternate N times and an op's oar/torch is the median of the N rounds' ratios (its range in
brackets): on a shared machine one round's ratio moves by 2x for memory-bound ops. The oar side is written as PaddlePaddle 3.x
code (`import oar as paddle`); every metric is the median time of one call (warmup, then
median over repeats), float32, on the same NumPy inputs for both frameworks. After the
usual table it prints a Markdown table of oar/torch per op and a summary line: how many
ops are at or below 1.0x and 1.25x, and the worst one. Attention inputs use each
framework's own layout: [batch, seq, heads, dim] for Paddle, [batch, heads, seq, dim]
for torch.
"""
import argparse
import os
import statistics

import numpy as np

import common

# name -> what it measures (shown in the Markdown table). Forward only unless "fwd+bwd".
OPS = {
    "conv3x3_c64_56": "conv2d 3x3 p1, [8,64,56,56] -> 64 (ResNet layer1)",
    "conv3x3_c64_56_fwdbwd": "same, fwd+bwd (input and filter grads)",
    "conv3x3_s2_c128_56": "conv2d 3x3 s2 p1, [8,64,56,56] -> 128",
    "conv3x3_c128_28": "conv2d 3x3 p1, [8,128,28,28] -> 128",
    "conv3x3_c256_14": "conv2d 3x3 p1, [8,256,14,14] -> 256",
    "conv3x3_c256_14_fwdbwd": "same, fwd+bwd",
    "conv3x3_c512_7": "conv2d 3x3 p1, [8,512,7,7] -> 512",
    "conv7x7_s2_stem": "conv2d 7x7 s2 p3, [8,3,224,224] -> 64 (stem)",
    "conv1x1_c64_256_56": "conv2d 1x1, [8,64,56,56] -> 256 (ResNet-50 expand)",
    "conv1x1_s2_c256_512_56": "conv2d 1x1 s2, [8,256,56,56] -> 512 (downsample)",
    "conv1x1_c1024_256_14": "conv2d 1x1, [8,1024,14,14] -> 256 (ResNet-50 reduce)",
    "conv1x1_c1024_256_14_fwdbwd": "same, fwd+bwd",
    "batch_norm_train": "batch_norm training, [8,64,56,56]",
    "batch_norm_eval": "batch_norm inference, [8,64,56,56]",
    "layer_norm": "layer_norm over 768, [1024,768]",
    "layer_norm_fwdbwd": "same, fwd+bwd",
    "softmax": "softmax last axis, [1024,1024]",
    "log_softmax": "log_softmax last axis, [1024,1024]",
    "sdpa": "scaled_dot_product_attention B4 S256 H8 D64",
    "sdpa_causal": "same, is_causal",
    "gelu": "gelu (erf), 1M",
    "gelu_tanh": "gelu (tanh approx), 1M",
    "silu": "silu, 1M",
    "relu": "relu, 1M",
    "add": "x + y, 1M",
    "mul": "x * y, 1M",
    "add_bcast": "[1024,1024] + [1024] (row broadcast)",
    "exp": "exp, 1M",
    "tanh": "tanh, 1M",
    "sigmoid": "sigmoid, 1M",
    "where": "where(x > 0, x, y), 1M",
    "sum": "sum, 1M -> scalar",
    "sum_rows": "sum axis=1, [1024,1024]",
    "sum_cols": "sum axis=0, [1024,1024]",
    "mean": "mean, 1M -> scalar",
    "max": "max, 1M -> scalar",
    "argmax": "argmax, 1M",
    "var": "var, 1M -> scalar",
    "logsumexp": "logsumexp axis=1, [1024,1024]",
    "cumsum": "cumsum, 1M",
    "matmul_512": "matmul [512,512] @ [512,512]",
    "matmul_1024": "matmul [1024,1024] @ [1024,1024]",
    "bmm": "matmul [64,128,64] @ [64,64,128]",
    "transpose2d": "transpose [1024,1024] + contiguous",
    "nchw_to_nhwc": "transpose [8,64,56,56] -> NHWC + contiguous",
    "concat": "concat 4 x [256,1024] axis=1",
    "index_select": "index_select 4096 rows of [8192,256]",
    "gather": "gather 1M random indices of 1M",
}
METRICS = [(f"{op}_ms", "ms", "low") for op in OPS]

rng = np.random.default_rng(0)


def _r(*shape, scale=1.0):
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)


N1M = 1 << 20
X1 = _r(N1M)
Y1 = _r(N1M)
M = _r(1024, 1024)
ROW = _r(1024)
X56 = _r(8, 64, 56, 56)
X56_256 = _r(8, 256, 56, 56)
X28 = _r(8, 128, 28, 28)
X14 = _r(8, 256, 14, 14)
X14_1024 = _r(8, 1024, 14, 14)
X7 = _r(8, 512, 7, 7)
XSTEM = _r(8, 3, 224, 224)
W = {  # conv filters [out, in, kh, kw]
    "3x3_64": _r(64, 64, 3, 3, scale=0.05), "3x3_64_128": _r(128, 64, 3, 3, scale=0.05),
    "3x3_128": _r(128, 128, 3, 3, scale=0.03), "3x3_256": _r(256, 256, 3, 3, scale=0.02),
    "3x3_512": _r(512, 512, 3, 3, scale=0.015), "7x7_3_64": _r(64, 3, 7, 7, scale=0.1),
    "1x1_64_256": _r(256, 64, 1, 1, scale=0.1), "1x1_256_512": _r(512, 256, 1, 1, scale=0.06),
    "1x1_1024_256": _r(256, 1024, 1, 1, scale=0.03),
}
XLN = _r(1024, 768)
B, S, H, D = 4, 256, 8, 64
QKV = [_r(B, S, H, D) for _ in range(3)]  # Paddle layout; torch gets a contiguous [B,H,S,D] copy
A512, B512 = _r(512, 512), _r(512, 512)
A1024, B1024 = _r(1024, 1024), _r(1024, 1024)
BA, BB = _r(64, 128, 64), _r(64, 64, 128)
CATS = [_r(256, 1024) for _ in range(4)]
TABLE = _r(8192, 256)
IDX_ROWS = rng.integers(0, 8192, 4096, dtype=np.int64)
IDX_1M = rng.integers(0, N1M, N1M, dtype=np.int64)

# (name, input, filter key, stride, padding) of the conv cases
CONVS = [
    ("conv3x3_c64_56", X56, "3x3_64", 1, 1), ("conv3x3_s2_c128_56", X56, "3x3_64_128", 2, 1),
    ("conv3x3_c128_28", X28, "3x3_128", 1, 1), ("conv3x3_c256_14", X14, "3x3_256", 1, 1),
    ("conv3x3_c512_7", X7, "3x3_512", 1, 1), ("conv7x7_s2_stem", XSTEM, "7x7_3_64", 2, 3),
    ("conv1x1_c64_256_56", X56, "1x1_64_256", 1, 0),
    ("conv1x1_s2_c256_512_56", X56_256, "1x1_256_512", 2, 0),
    ("conv1x1_c1024_256_14", X14_1024, "1x1_1024_256", 1, 0),
]
CONV_FWDBWD = ["conv3x3_c64_56", "conv3x3_c256_14", "conv1x1_c1024_256_14"]


def ms(fn):
    return common.bench(fn, repeat=7, target=0.05, warmup=2) * 1e3


def _case(name, fn):
    return lambda: {f"{name}_ms": ms(fn)}


def torch_cases(torch):
    t = torch.from_numpy
    F = torch.nn.functional
    torch.set_grad_enabled(False)
    fns = {}
    for name, x, wk, s, p in CONVS:
        fns[name] = (lambda x=t(x), w=t(W[wk]), s=s, p=p: F.conv2d(x, w, stride=s, padding=p))

    def conv_fb(x, w, p):
        x, w = t(x).requires_grad_(), t(w).requires_grad_()
        with torch.enable_grad():
            g = torch.ones_like(F.conv2d(x, w, padding=p))

        def fb():
            with torch.enable_grad():
                y = F.conv2d(x, w, padding=p)
                x.grad = w.grad = None
                y.backward(g)
        return fb
    for name, x, wk, s, p in CONVS:
        if name in CONV_FWDBWD:
            fns[name + "_fwdbwd"] = conv_fb(x, W[wk], p)

    x56 = t(X56)
    rm, rv, bw, bb = torch.zeros(64), torch.ones(64), torch.ones(64), torch.zeros(64)
    fns["batch_norm_train"] = lambda: F.batch_norm(x56, rm, rv, bw, bb, training=True, momentum=0.1)
    fns["batch_norm_eval"] = lambda: F.batch_norm(x56, rm, rv, bw, bb, training=False)
    xl = t(XLN)
    lw, lb = torch.ones(768), torch.zeros(768)
    fns["layer_norm"] = lambda: F.layer_norm(xl, [768], lw, lb)
    xlg, lwg, lbg = xl.clone().requires_grad_(), lw.clone().requires_grad_(), lb.clone().requires_grad_()

    def ln_fb():
        with torch.enable_grad():
            y = F.layer_norm(xlg, [768], lwg, lbg)
            xlg.grad = lwg.grad = lbg.grad = None
            y.sum().backward()
    fns["layer_norm_fwdbwd"] = ln_fb
    m = t(M)
    fns["softmax"] = lambda: F.softmax(m, -1)
    fns["log_softmax"] = lambda: F.log_softmax(m, -1)
    q, k, v = (t(a).transpose(1, 2).contiguous() for a in QKV)
    fns["sdpa"] = lambda: F.scaled_dot_product_attention(q, k, v)
    fns["sdpa_causal"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x, y = t(X1), t(Y1)
    fns.update({
        "gelu": lambda: F.gelu(x), "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
        "silu": lambda: F.silu(x), "relu": lambda: F.relu(x),
        "add": lambda: x + y, "mul": lambda: x * y, "add_bcast": (lambda r=t(ROW): m + r),
        "exp": lambda: torch.exp(x), "tanh": lambda: torch.tanh(x),
        "sigmoid": lambda: torch.sigmoid(x), "where": lambda: torch.where(x > 0, x, y),
        "sum": lambda: torch.sum(x), "sum_rows": lambda: torch.sum(m, 1),
        "sum_cols": lambda: torch.sum(m, 0), "mean": lambda: torch.mean(x),
        "max": lambda: torch.max(x), "argmax": lambda: torch.argmax(x),
        "var": lambda: torch.var(x), "logsumexp": lambda: torch.logsumexp(m, 1),
        "cumsum": lambda: torch.cumsum(x, 0),
    })
    a5, b5, a1, b1, ba, bb_ = t(A512), t(B512), t(A1024), t(B1024), t(BA), t(BB)
    fns["matmul_512"] = lambda: torch.matmul(a5, b5)
    fns["matmul_1024"] = lambda: torch.matmul(a1, b1)
    fns["bmm"] = lambda: torch.matmul(ba, bb_)
    fns["transpose2d"] = lambda: m.transpose(0, 1).contiguous()
    fns["nchw_to_nhwc"] = lambda: x56.permute(0, 2, 3, 1).contiguous()
    cats = [t(c) for c in CATS]
    fns["concat"] = lambda: torch.cat(cats, 1)
    tab, ir, i1 = t(TABLE), t(IDX_ROWS), t(IDX_1M)
    fns["index_select"] = lambda: torch.index_select(tab, 0, ir)
    fns["gather"] = lambda: torch.gather(x, 0, i1)
    return {name: _case(name, fns[name]) for name in OPS if name in fns}


def oar_cases(paddle):
    t = paddle.to_tensor
    F = paddle.nn.functional
    fns = {}
    for name, x, wk, s, p in CONVS:
        fns[name] = (lambda x=t(x), w=t(W[wk]), s=s, p=p: F.conv2d(x, w, stride=s, padding=p))

    def conv_fb(x, w, p):
        x, w = t(x, stop_gradient=False), t(w, stop_gradient=False)
        g = paddle.ones_like(F.conv2d(x, w, padding=p))

        def fb():
            y = F.conv2d(x, w, padding=p)
            x.clear_gradient(False)
            w.clear_gradient(False)
            y.backward(g)
        return fb
    for name, x, wk, s, p in CONVS:
        if name in CONV_FWDBWD:
            fns[name + "_fwdbwd"] = conv_fb(x, W[wk], p)

    x56 = t(X56)
    rm, rv, bw, bb = paddle.zeros([64]), paddle.ones([64]), paddle.ones([64]), paddle.zeros([64])
    fns["batch_norm_train"] = lambda: F.batch_norm(x56, rm, rv, bw, bb, training=True)
    fns["batch_norm_eval"] = lambda: F.batch_norm(x56, rm, rv, bw, bb, training=False)
    xl = t(XLN)
    lw, lb = paddle.ones([768]), paddle.zeros([768])
    fns["layer_norm"] = lambda: F.layer_norm(xl, [768], lw, lb)
    xlg = t(XLN, stop_gradient=False)
    lwg = t(np.ones(768, np.float32), stop_gradient=False)
    lbg = t(np.zeros(768, np.float32), stop_gradient=False)

    def ln_fb():
        y = F.layer_norm(xlg, [768], lwg, lbg)
        for p in (xlg, lwg, lbg):
            p.clear_gradient(False)
        y.sum().backward()
    fns["layer_norm_fwdbwd"] = ln_fb
    m = t(M)
    fns["softmax"] = lambda: F.softmax(m, -1)
    fns["log_softmax"] = lambda: F.log_softmax(m, -1)
    q, k, v = (t(a) for a in QKV)
    fns["sdpa"] = lambda: F.scaled_dot_product_attention(q, k, v)
    fns["sdpa_causal"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x, y = t(X1), t(Y1)
    fns.update({
        "gelu": lambda: F.gelu(x), "gelu_tanh": lambda: F.gelu(x, approximate=True),
        "silu": lambda: F.silu(x), "relu": lambda: F.relu(x),
        "add": lambda: x + y, "mul": lambda: x * y, "add_bcast": (lambda r=t(ROW): m + r),
        "exp": lambda: paddle.exp(x), "tanh": lambda: paddle.tanh(x),
        "sigmoid": lambda: F.sigmoid(x), "where": lambda: paddle.where(x > 0, x, y),
        "sum": lambda: paddle.sum(x), "sum_rows": lambda: paddle.sum(m, 1),
        "sum_cols": lambda: paddle.sum(m, 0), "mean": lambda: paddle.mean(x),
        "max": lambda: paddle.max(x), "argmax": lambda: paddle.argmax(x),
        "var": lambda: paddle.var(x), "logsumexp": lambda: paddle.logsumexp(m, 1),
        "cumsum": lambda: paddle.cumsum(x, 0),
    })
    a5, b5, a1, b1, ba, bb_ = t(A512), t(B512), t(A1024), t(B1024), t(BA), t(BB)
    fns["matmul_512"] = lambda: paddle.matmul(a5, b5)
    fns["matmul_1024"] = lambda: paddle.matmul(a1, b1)
    fns["bmm"] = lambda: paddle.matmul(ba, bb_)
    fns["transpose2d"] = lambda: paddle.transpose(m, [1, 0]).contiguous()
    fns["nchw_to_nhwc"] = lambda: paddle.transpose(x56, [0, 2, 3, 1]).contiguous()
    cats = [t(c) for c in CATS]
    fns["concat"] = lambda: paddle.concat(cats, 1)
    tab, ir, i1 = t(TABLE), t(IDX_ROWS), t(IDX_1M)
    fns["index_select"] = lambda: paddle.index_select(tab, ir, 0)
    fns["gather"] = lambda: paddle.gather(x, i1, 0)
    return {name: _case(name, fns[name]) for name in OPS if name in fns}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


def markdown(runs, threads_list, round_ratios=None):
    """Markdown table of oar / torch per op and thread count, and the summary line; with
    round_ratios ({t: {op: [ratio of each round]}}) an op's ratio is the median of its rounds'."""
    if "oar" not in runs or "torch" not in runs:
        return []
    lines = ["| op | what | threads | oar ms | torch ms | oar/torch |", "|---|---|---:|---:|---:|---:|"]
    summary = []
    for t in threads_list:
        ratios = {}
        for op, what in OPS.items():
            o = runs["oar"][t]["results"].get(f"{op}_ms")
            p = runs["torch"][t]["results"].get(f"{op}_ms")
            if o is None and p is None:
                continue
            per_round = (round_ratios or {}).get(t, {}).get(op)
            r = (statistics.median(per_round) if per_round else
                 o / p if o is not None and p else None)
            if r is not None:
                ratios[op] = r
            spread = (f" ({min(per_round):.2f}-{max(per_round):.2f})"
                      if per_round and len(per_round) > 1 else "")
            lines.append(f"| {op} | {what} | {t} | {common.fmt(o)} | {common.fmt(p)} | "
                         + (f"**{r:.2f}**" if r is not None and r > 1.0 else
                            f"{r:.2f}" if r is not None else "-") + spread + " |")
        if ratios:
            worst = max(ratios, key=ratios.get)
            over = sorted((op for op in ratios if ratios[op] > 1.0), key=ratios.get, reverse=True)
            summary.append(
                f"{t} thread(s): {sum(r <= 1.0 for r in ratios.values())}/{len(ratios)} ops <= 1.0x, "
                f"{sum(r <= 1.25 for r in ratios.values())}/{len(ratios)} <= 1.25x; "
                f"worst {worst} {ratios[worst]:.2f}x; geomean "
                f"{float(np.exp(np.mean(np.log(list(ratios.values()))))):.2f}x"
                + (f"; over 1.0x: {', '.join(f'{op} {ratios[op]:.2f}' for op in over)}" if over else ""))
    return ["", *lines, "", *summary]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frameworks", default="oar,torch", help="comma list of oar,torch")
    ap.add_argument("--threads", default="1", help="comma list of thread counts")
    ap.add_argument("--rounds", type=int, default=1,
                    help="interleaved rounds (oar, torch, oar, ...); an op's ratio is the median "
                         "of the rounds' ratios")
    ap.add_argument("--ops", default="", help="comma list of ops (default all; see OPS)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    ap.add_argument("--out", help="result JSON (default bench/results/ops.json)")
    ap.add_argument("--worker", choices=common.FRAMEWORKS, help=argparse.SUPPRESS)
    common.add_isa_argument(ap)
    args = ap.parse_args()
    if args.worker:
        wanted = [c for c in os.environ.get("BENCH_OPS_OPS", "").split(",") if c]

        def chosen(fw, mod):
            return {k: v for k, v in cases(fw, mod).items() if not wanted or k in wanted}
        return common.worker(args.worker, int(args.threads), chosen)

    unknown = [o for o in args.ops.split(",") if o and o not in OPS]
    if unknown:
        ap.error(f"--ops: unknown op(s) {', '.join(unknown)}; known: {', '.join(OPS)}")
    if not 1 <= args.rounds <= 100:
        ap.error(f"--rounds must be in [1, 100], got {args.rounds}")
    os.environ["BENCH_OPS_OPS"] = args.ops
    common.force_isa(args.isa)
    frameworks = [f for f in args.frameworks.split(",") if f]
    threads_list = [int(t) for t in args.threads.split(",")]
    per_round, runs, versions = common.run_rounds(os.path.abspath(__file__), "ops", frameworks, threads_list,
                                                  args.rounds, args.timeout, METRICS)
    round_ratios = {}
    if "oar" in per_round and "torch" in per_round:
        for t in threads_list:
            round_ratios[t] = {}
            for op in OPS:
                rs = [o[f"{op}_ms"] / p[f"{op}_ms"]
                      for o, p in zip(per_round["oar"][t], per_round["torch"][t])
                      if f"{op}_ms" in o and p.get(f"{op}_ms")]
                if rs:
                    round_ratios[t][op] = rs
    common.report("ops", METRICS, runs, threads_list, versions, args.rounds, args.out,
                  {"round_ratios": {str(t): v for t, v in round_ratios.items()}})
    print("\n".join(markdown(runs, threads_list, round_ratios)))


if __name__ == "__main__":
    main()
