"""Training steps of issue 17's four models, Oar against PyTorch, in interleaved rounds.

    python3 bench/bench_steps.py [--frameworks oar,torch] [--threads 1,2] [--rounds 3]
    BENCH_TORCH_PYTHON=<venv>/bin/python python3 bench/bench_steps.py

One step = forward + cross-entropy + backward + optimizer step + zero grads, float32:
- mlp:  784-512-512-10 (ReLU), SGD lr 0.01, batch 128;
- gpt:  2 pre-LN decoder blocks, d256, 4 heads, seq 128, batch 8, vocab 1000; attention
        written by hand as Paddle model code is (q/k/v Linear, reshape + transpose to
        [B, H, L, Dh], matmul(q, k^T) * scale + additive causal mask, softmax, matmul,
        transpose back), GELU MLP 4x, tied-free LM head; AdamW;
- cnn:  3x (conv3x3-bn-relu-maxpool2) 3->32->64->128 on [32, 3, 32, 32], linear 10; AdamW;
- lstm: embedding(1000, 128), LSTM(128, 256) over L64, batch 16, last state -> linear 10; AdamW;
- mlp_amp, gpt_amp: mlp and gpt under bf16 autocast (Paddle's auto_cast(level="O1",
        dtype="bfloat16"), torch.autocast("cpu", torch.bfloat16)): matmuls and linears in bf16
        (AMX or AVX512-BF16 where the CPU has them), float32 master weights. Only where the
        CPU has bf16 dot products (without them torch's bf16 matmul takes minutes a call).

The oar side is PaddlePaddle 3.x code (`import oar as paddle`). Each round starts one worker
per framework and thread count, alternating oar and torch (so a drift of the shared machine
lands on both); a metric's value is the median of its per-round medians. The CPU model goes
into the table and bench/results/steps.json.
"""
import argparse
import os

import numpy as np

import common
import peak

METRICS = [
    ("mlp_step_ms", "ms", "low"),
    ("gpt_step_ms", "ms", "low"),
    ("cnn_step_ms", "ms", "low"),
    ("lstm_step_ms", "ms", "low"),
    ("mlp_amp_step_ms", "ms", "low"),
    ("gpt_amp_step_ms", "ms", "low"),
]
# as bench_core.py: bf16 cases only where the CPU has bf16 dot products and no AVX2 cap
BF16_HW = bool({"avx512_bf16", "amx_bf16"} & peak.cpu_flags()) and common.forced_isa() != "avx2"

rng = np.random.default_rng(0)
X_MLP = rng.standard_normal((128, 784), dtype=np.float32)
Y_MLP = rng.integers(0, 10, (128,), dtype=np.int64)
VOCAB, D, NH, L, B = 1000, 256, 4, 128, 8
TOK_GPT = rng.integers(0, VOCAB, (B, L), dtype=np.int64)
Y_GPT = rng.integers(0, VOCAB, (B * L,), dtype=np.int64)
X_CNN = rng.standard_normal((32, 3, 32, 32), dtype=np.float32)
Y_CNN = rng.integers(0, 10, (32,), dtype=np.int64)
TOK_LSTM = rng.integers(0, 1000, (16, 64), dtype=np.int64)
Y_LSTM = rng.integers(0, 10, (16,), dtype=np.int64)
MASK = np.triu(np.full((L, L), -1e9, dtype=np.float32), 1)[None, None]


def ms(fn, repeat=5):
    return common.bench(fn, repeat=repeat, target=0.2) * 1e3


def torch_cases(torch):
    nn, F = torch.nn, torch.nn.functional
    t = torch.from_numpy

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))

        def forward(self, x, mask):
            b, n, _ = x.shape
            q = self.q(x).reshape(b, n, NH, D // NH).transpose(1, 2)
            k = self.k(x).reshape(b, n, NH, D // NH).transpose(1, 2)
            v = self.v(x).reshape(b, n, NH, D // NH).transpose(1, 2)
            s = torch.matmul(q, k.transpose(-1, -2)) * (D // NH) ** -0.5 + mask
            a = torch.matmul(F.softmax(s, -1), v)
            return self.o(a.transpose(1, 2).reshape(b, n, D))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.attn = Attn()
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x, mask):
            x = x + self.attn(self.ln1(x), mask)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, D), nn.Embedding(L, D)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB)

        def forward(self, idx, mask):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x, mask)
            return self.head(self.ln(x)).reshape(-1, VOCAB)

    def cnn():
        layers, cin = [], 3
        for cout in (32, 64, 128):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]
            cin = cout
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 4 * 4, 10))

    class LSTMClf(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 128)
            self.rnn = nn.LSTM(128, 256, batch_first=True)
            self.fc = nn.Linear(256, 10)

        def forward(self, idx):
            _, (h, _) = self.rnn(self.emb(idx))
            return self.fc(h[-1])

    def run(model, opt, inputs, y, repeat=5, amp=False):
        inputs = [t(a) for a in inputs]
        yb = t(y)

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                loss = F.cross_entropy(model(*inputs), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return ms(step, repeat)

    def adamw(m):
        return torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)

    def mlp():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        return {"mlp_step_ms": run(m, torch.optim.SGD(m.parameters(), lr=0.01), [X_MLP], Y_MLP)}

    def gpt():
        torch.manual_seed(0)
        m = GPT()
        return {"gpt_step_ms": run(m, adamw(m), [TOK_GPT, MASK], Y_GPT, 3)}

    def cnn_case():
        torch.manual_seed(0)
        m = cnn()
        return {"cnn_step_ms": run(m, adamw(m), [X_CNN], Y_CNN)}

    def lstm():
        torch.manual_seed(0)
        m = LSTMClf()
        return {"lstm_step_ms": run(m, adamw(m), [TOK_LSTM], Y_LSTM)}

    def mlp_amp():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        return {"mlp_amp_step_ms": run(m, torch.optim.SGD(m.parameters(), lr=0.01), [X_MLP], Y_MLP, amp=True)}

    def gpt_amp():
        torch.manual_seed(0)
        m = GPT()
        return {"gpt_amp_step_ms": run(m, adamw(m), [TOK_GPT, MASK], Y_GPT, 3, amp=True)}

    amp = {"mlp_amp": mlp_amp, "gpt_amp": gpt_amp} if BF16_HW else {}
    return {"mlp": mlp, "gpt": gpt, "cnn": cnn_case, "lstm": lstm, **amp}


def oar_cases(paddle):
    nn, F = paddle.nn, paddle.nn.functional
    t = paddle.to_tensor

    class Attn(nn.Layer):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))

        def forward(self, x, mask):
            b, n = x.shape[0], x.shape[1]
            q = self.q(x).reshape([b, n, NH, D // NH]).transpose([0, 2, 1, 3])
            k = self.k(x).reshape([b, n, NH, D // NH]).transpose([0, 2, 1, 3])
            v = self.v(x).reshape([b, n, NH, D // NH]).transpose([0, 2, 1, 3])
            s = paddle.matmul(q, k, transpose_y=True) * (D // NH) ** -0.5 + mask
            a = paddle.matmul(F.softmax(s, -1), v)
            return self.o(a.transpose([0, 2, 1, 3]).reshape([b, n, D]))

    class Block(nn.Layer):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.attn = Attn()
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x, mask):
            x = x + self.attn(self.ln1(x), mask)
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Layer):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, D), nn.Embedding(L, D)
            self.blocks = nn.LayerList([Block(), Block()])
            self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB)

        def forward(self, idx, mask):
            x = self.tok(idx) + self.pos(paddle.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x, mask)
            return self.head(self.ln(x)).reshape([-1, VOCAB])

    def cnn():
        layers, cin = [], 3
        for cout in (32, 64, 128):
            layers += [nn.Conv2D(cin, cout, 3, padding=1), nn.BatchNorm2D(cout), nn.ReLU(), nn.MaxPool2D(2)]
            cin = cout
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(128 * 4 * 4, 10))

    class LSTMClf(nn.Layer):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 128)
            self.rnn = nn.LSTM(128, 256)
            self.fc = nn.Linear(256, 10)

        def forward(self, idx):
            _, (h, _) = self.rnn(self.emb(idx))
            return self.fc(h[-1])

    def run(model, opt, inputs, y, repeat=5, amp=False):
        inputs = [t(a) for a in inputs]
        yb = t(y)

        def step():
            with paddle.amp.auto_cast(enable=amp, level="O1", dtype="bfloat16"):
                loss = F.cross_entropy(model(*inputs), yb)
            loss.backward()
            opt.step()
            opt.clear_grad()
        return ms(step, repeat)

    def adamw(m):
        return paddle.optimizer.AdamW(learning_rate=1e-3, parameters=m.parameters(), weight_decay=0.01)

    def mlp():
        paddle.seed(0)
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        return {"mlp_step_ms": run(m, paddle.optimizer.SGD(learning_rate=0.01, parameters=m.parameters()),
                                   [X_MLP], Y_MLP)}

    def gpt():
        paddle.seed(0)
        m = GPT()
        return {"gpt_step_ms": run(m, adamw(m), [TOK_GPT, MASK], Y_GPT, 3)}

    def cnn_case():
        paddle.seed(0)
        m = cnn()
        return {"cnn_step_ms": run(m, adamw(m), [X_CNN], Y_CNN)}

    def lstm():
        paddle.seed(0)
        m = LSTMClf()
        return {"lstm_step_ms": run(m, adamw(m), [TOK_LSTM], Y_LSTM)}

    def mlp_amp():
        paddle.seed(0)
        m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        return {"mlp_amp_step_ms": run(m, paddle.optimizer.SGD(learning_rate=0.01, parameters=m.parameters()),
                                       [X_MLP], Y_MLP, amp=True)}

    def gpt_amp():
        paddle.seed(0)
        m = GPT()
        return {"gpt_amp_step_ms": run(m, adamw(m), [TOK_GPT, MASK], Y_GPT, 3, amp=True)}

    amp = {"mlp_amp": mlp_amp, "gpt_amp": gpt_amp} if BF16_HW else {}
    return {"mlp": mlp, "gpt": gpt, "cnn": cnn_case, "lstm": lstm, **amp}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frameworks", default="oar,torch")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median of them)")
    ap.add_argument("--cases", default="", help="comma list of mlp,gpt,cnn,lstm,mlp_amp,gpt_amp (default all)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out")
    ap.add_argument("--worker", choices=common.FRAMEWORKS, help=argparse.SUPPRESS)
    common.add_isa_argument(ap)
    args = ap.parse_args()
    if args.worker:
        wanted = [c for c in os.environ.get("BENCH_STEPS_CASES", "").split(",") if c]

        def chosen(fw, mod):
            all_cases = cases(fw, mod)
            return {k: v for k, v in all_cases.items() if not wanted or k in wanted}
        return common.worker(args.worker, int(args.threads), chosen)

    os.environ["BENCH_STEPS_CASES"] = args.cases
    common.force_isa(args.isa)
    frameworks = [f for f in args.frameworks.split(",") if f]
    threads_list = [int(t) for t in args.threads.split(",")]
    per_round, runs, versions = common.run_rounds(os.path.abspath(__file__), "steps", frameworks, threads_list,
                                                  args.rounds, args.timeout, METRICS)
    common.report("steps", METRICS, runs, threads_list, versions, args.rounds, args.out)


if __name__ == "__main__":
    main()
