"""Sequence-model suite: fused attention, a Transformer encoder layer and an LSTM,
forward (+ backward), against PyTorch.

    python3 bench/bench_seq.py [--frameworks oar,torch] [--threads 1]

Shapes: batch 8, seq 128, d_model 256, 4 heads (head_dim 64), feed-forward 1024,
dropout 0. The oar side is written as PaddlePaddle 3.x code (`import oar as paddle`);
SDPA gets each framework's native layout ([B, S, H, D] for Paddle, [B, H, S, D] for torch).
"""
import numpy as np

import common

METRICS = [
    ("sdpa_fwd_ms", "ms", "low"),             # B8 S128 H4 D64, no mask
    ("sdpa_causal_fwd_ms", "ms", "low"),
    ("sdpa_fwd_bwd_ms", "ms", "low"),
    ("encoder_layer_fwd_bwd_ms", "ms", "low"),  # TransformerEncoderLayer(256, 4, 1024)
    ("lstm_fwd_bwd_ms", "ms", "low"),         # LSTM(256, 256) on [8, 32, 256]
    ("lstm_cell_step_us", "us", "low"),       # one LSTMCell(256, 256) step, batch 8
]

B, S, H, D = 8, 128, 4, 64
rng = np.random.default_rng(0)
QKV = [rng.standard_normal((B, S, H, D), dtype=np.float32) for _ in range(3)]
X = rng.standard_normal((B, S, H * D), dtype=np.float32)
XL = rng.standard_normal((8, 32, 256), dtype=np.float32)
XC = rng.standard_normal((8, 256), dtype=np.float32)


def torch_cases(torch):
    F, nn = torch.nn.functional, torch.nn
    q, k, v = (torch.from_numpy(a).transpose(1, 2).contiguous() for a in QKV)

    def sdpa():
        return {"sdpa_fwd_ms": common.bench(lambda: F.scaled_dot_product_attention(q, k, v)) * 1e3,
                "sdpa_causal_fwd_ms": common.bench(
                    lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)) * 1e3}

    def sdpa_bwd():
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        return {"sdpa_fwd_bwd_ms": common.bench(
            lambda: F.scaled_dot_product_attention(qg, kg, vg).sum().backward()) * 1e3}

    def encoder():
        layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
        x = torch.from_numpy(X)
        return {"encoder_layer_fwd_bwd_ms": common.bench(lambda: layer(x).sum().backward()) * 1e3}

    def lstm():
        m = nn.LSTM(256, 256, batch_first=True)
        x = torch.from_numpy(XL)
        cell = nn.LSTMCell(256, 256)
        xc = torch.from_numpy(XC)
        h = (torch.zeros(8, 256), torch.zeros(8, 256))
        with torch.no_grad():
            step = common.bench(lambda: cell(xc, h))
        return {"lstm_fwd_bwd_ms": common.bench(lambda: m(x)[0].sum().backward()) * 1e3,
                "lstm_cell_step_us": step * 1e6}

    return {"sdpa": sdpa, "sdpa_bwd": sdpa_bwd, "encoder": encoder, "lstm": lstm}


def oar_cases(paddle):
    F, nn = paddle.nn.functional, paddle.nn
    q, k, v = (paddle.to_tensor(a) for a in QKV)

    def sdpa():
        return {"sdpa_fwd_ms": common.bench(lambda: F.scaled_dot_product_attention(q, k, v)) * 1e3,
                "sdpa_causal_fwd_ms": common.bench(
                    lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)) * 1e3}

    def sdpa_bwd():
        qg, kg, vg = (paddle.to_tensor(a, stop_gradient=False) for a in QKV)
        return {"sdpa_fwd_bwd_ms": common.bench(
            lambda: F.scaled_dot_product_attention(qg, kg, vg).sum().backward()) * 1e3}

    def encoder():
        layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0)
        x = paddle.to_tensor(X)
        return {"encoder_layer_fwd_bwd_ms": common.bench(lambda: layer(x).sum().backward()) * 1e3}

    def lstm():
        m = nn.LSTM(256, 256)
        x = paddle.to_tensor(XL)
        cell = nn.LSTMCell(256, 256)
        xc = paddle.to_tensor(XC)
        h = (paddle.zeros([8, 256]), paddle.zeros([8, 256]))
        with paddle.no_grad():
            step = common.bench(lambda: cell(xc, h))
        return {"lstm_fwd_bwd_ms": common.bench(lambda: m(x)[0].sum().backward()) * 1e3,
                "lstm_cell_step_us": step * 1e6}

    return {"sdpa": sdpa, "sdpa_bwd": sdpa_bwd, "encoder": encoder, "lstm": lstm}


def cases(fw, mod):
    return torch_cases(mod) if fw == "torch" else oar_cases(mod)


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
