"""Sequence parallelism through parallelize's mp_config plan, as each rank of a 2-process
job (test_sequence_parallel.py): a small transformer whose residual stream between the
embedding (SequenceParallelBegin) and the head (SequenceParallelEnd) is [s, b, h] split
along s over `mp`; layer norms run sequence-parallel (SequenceParallelEnable), attention on
the whole sequence (SequenceParallelDisable), the MLP tensor-parallel (Col/RowWiseParallel).
20 AdamW steps in float64 equal one process's training of the same model without plans."""
import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import ProcessMesh, Shard


class Attn(oar.nn.Layer):
    """Causal self-attention on [b, s, d]."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.proj = (oar.nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        b, s, d = x.shape
        mask = oar.to_tensor(np.triu(np.full((s, s), -1e9), 1))

        def heads(t):
            return oar.transpose(oar.reshape(t, [b, s, self.heads, d // self.heads]), [0, 2, 1, 3])
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        att = oar.matmul(q, k, transpose_y=True) * (1.0 / (d // self.heads) ** 0.5) + mask
        y = oar.matmul(oar.nn.functional.softmax(att, axis=-1), v)
        return self.proj(oar.reshape(oar.transpose(y, [0, 2, 1, 3]), [b, s, d]))


class Block(oar.nn.Layer):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = oar.nn.LayerNorm(d), oar.nn.LayerNorm(d)
        self.attn = Attn(d, heads)
        self.fc1, self.fc2 = oar.nn.Linear(d, 4 * d), oar.nn.Linear(4 * d, d)

    def forward(self, x):  # position-wise except attn, so [b, s, h] and [s, b, h] both work
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(oar.nn.functional.gelu(self.fc1(self.ln2(x))))


class Net(oar.nn.Layer):
    def __init__(self, vocab=32, d=32, heads=4, layers=2):
        super().__init__()
        self.emb = oar.nn.Embedding(vocab, d)
        self.blocks = oar.nn.LayerList([Block(d, heads) for _ in range(layers)])
        self.ln = oar.nn.LayerNorm(d)
        self.head = oar.nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def train(model, opt):
    rng = np.random.default_rng(5)
    losses = []
    for _ in range(20):
        ids = rng.integers(0, 32, size=(4, 9))
        x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
        logits = model(x)
        loss = oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(dist.unshard_dtensor(loss).numpy()) if loss.is_dist() else float(loss.numpy()))
    return losses


def main():
    dist.init_parallel_env()
    rank = dist.get_rank()
    oar.set_default_dtype("float64")
    oar.seed(9)
    ref = Net()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_losses = train(ref, oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters()))
    model = Net()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters())
    plan = {"emb": dist.SequenceParallelBegin(), "blocks.*.ln1": dist.SequenceParallelEnable(),
            "blocks.*.ln2": dist.SequenceParallelEnable(), "blocks.*.attn": dist.SequenceParallelDisable(),
            "blocks.*.fc1": dist.ColWiseParallel(), "blocks.*.fc2": dist.RowWiseParallel(),
            "ln": dist.SequenceParallelEnable(), "head": [dist.ColWiseParallel(), dist.SequenceParallelEnd()]}
    mesh = ProcessMesh([0, 1], dim_names=["mp"])
    model, opt = dist.parallelize(model, opt, mesh, {"mp_config": {"parallelize_plan": plan}})
    seen = {}
    model.blocks[0].ln1.register_forward_post_hook(
        lambda layer, inputs, out: seen.update(ln=(inputs[0].placements, list(inputs[0].shape))))
    model.blocks[0].attn.q.register_forward_post_hook(
        lambda layer, inputs, out: seen.update(attn=(inputs[0].placements, list(inputs[0].shape))))
    model.head.register_forward_post_hook(
        lambda layer, inputs, out: seen.update(head=(inputs[0].placements, list(inputs[0].shape))))
    losses = train(model, opt)
    # the region's layout: [s, b, h] split along s; attention and the head see [b, s, h] whole
    assert seen["ln"] == ([Shard(0)], [8, 4, 32]), seen["ln"]
    assert seen["attn"][1] == [4, 8, 32] and not seen["attn"][0][0].is_shard(), seen["attn"]
    assert seen["head"][1] == [4, 8, 32] and not seen["head"][0][0].is_shard(), seen["head"]
    diff = max(abs(a - b) for a, b in zip(losses, ref_losses))
    assert diff <= 1e-10, f"sequence-parallel losses differ by {diff}: {losses} vs {ref_losses}"
    assert losses[-1] < losses[0]
    print(f"sp ok {rank} max loss diff {diff:.3e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
