"""DataParallel training reproduces single-process training (run as each rank of a job).

argv[1]: "mlp" (several buckets, parameters differently initialised per rank so the broadcast
matters), "no_sync" (gradient accumulation over two micro-batches), "unused" (a branch only
rank 0 uses, with find_unused_parameters=True), "fleet" (through fleet.distributed_model),
"to_static" (the whole step in a to_static function: it runs eagerly with one warning, as
the all-reduce hooks cannot be part of its program), "to_static_forward" (the DataParallel
layer converted: before stop 39 only the first step's gradients were all-reduced)."""
import sys
import warnings

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import fleet

STEPS = 20
BATCH = 8  # per rank


class Net(oar.nn.Layer):
    def __init__(self, with_extra):
        super().__init__()
        self.fc1 = oar.nn.Linear(6, 16)
        self.fc2 = oar.nn.Linear(16, 16)
        self.head = oar.nn.Linear(16, 3)
        # A branch only some calls use ("unused" mode); without find_unused_parameters
        # DataParallel rejects it, so the other modes leave it out.
        self.extra = oar.nn.Linear(16, 3) if with_extra else None

    def forward(self, x, use_extra=False):
        h = oar.tanh(self.fc2(oar.tanh(self.fc1(x))))
        out = self.head(h)
        return out + self.extra(h) if use_extra else out


class GPT(oar.nn.Layer):
    """A small decoder-only transformer: 2 pre-norm blocks, d=64, causal attention."""

    def __init__(self, vocab=32, d=64, layers=2, seq=8):
        super().__init__()
        self.tok = oar.nn.Embedding(vocab, d)
        self.pos = oar.nn.Embedding(seq, d)
        self.blocks = oar.nn.LayerList([
            oar.nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, normalize_before=True)
            for _ in range(layers)])
        self.norm = oar.nn.LayerNorm(d)
        self.head = oar.nn.Linear(d, vocab)
        self.seq = seq
        self.mask = oar.to_tensor(np.triu(np.full((seq, seq), -1e9), 1))

    def forward(self, ids, use_extra=False):
        h = self.tok(ids) + self.pos(oar.arange(self.seq))
        for block in self.blocks:
            h = block(h, self.mask)
        return self.head(self.norm(h))


GPT_MODE = "gpt" in sys.argv[1:]


def make_model():
    return GPT() if GPT_MODE else Net(with_extra="unused" in sys.argv[1:])


def batch(step, n, rank=None):
    """The global batch of `step` (all ranks' samples), or rank `rank`'s slice of it."""
    rng = np.random.default_rng(step)
    if GPT_MODE:
        x = rng.integers(0, 32, (BATCH * n, 8))
        y = (x + 1) % 32  # learnable: the next token id
    else:
        x = rng.standard_normal((BATCH * n, 6))
        y = np.tanh(x @ np.linspace(-1, 1, 18).reshape(6, 3))  # learnable
    if rank is not None:
        x, y = x[rank * BATCH:(rank + 1) * BATCH], y[rank * BATCH:(rank + 1) * BATCH]
    return oar.to_tensor(x), oar.to_tensor(y)


def loss_fn(model, x, y, use_extra=False):
    if GPT_MODE:
        logits = model(x)
        return oar.nn.functional.cross_entropy(logits.reshape([-1, 32]), y.reshape([-1]))
    return ((model(x, use_extra=use_extra) - y) ** 2).mean()


def train_reference(mode, n):
    """Single process on the global batch: the losses DataParallel must reproduce."""
    oar.seed(0)
    model = make_model()
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    losses = []
    for step in range(STEPS):
        if mode == "no_sync":
            total = 0.0
            for micro in range(2):
                x, y = batch(100 * step + micro, n)
                loss = loss_fn(model, x, y) / 2
                loss.backward()
                total += float(loss)
            losses.append(total)
        elif mode == "unused":
            # Rank 0's samples go through the extra branch, the others' do not.
            x, y = batch(step, n)
            loss = sum(loss_fn(model, x[r * BATCH:(r + 1) * BATCH], y[r * BATCH:(r + 1) * BATCH],
                               use_extra=(r == 0)) for r in range(n)) / n
            loss.backward()
            losses.append(float(loss))
        else:
            x, y = batch(step, n)
            loss = loss_fn(model, x, y)
            loss.backward()
            losses.append(float(loss))
        opt.step()
        opt.clear_grad()
    return losses, [p.numpy() for p in model.parameters()]


def train_parallel(mode, rank, n):
    oar.seed(0 if mode == "fleet" else 1234 + rank)  # different inits: DataParallel broadcasts rank 0's
    if rank == 0:
        oar.seed(0)
    model = make_model()
    if mode == "fleet":
        strategy = fleet.DistributedStrategy()
        strategy.hybrid_configs = {"dp_degree": n, "mp_degree": 1, "pp_degree": 1}
        fleet.init(is_collective=True, strategy=strategy)
        assert fleet.worker_index() == rank and fleet.worker_num() == n
        dp = fleet.distributed_model(model)
        opt = fleet.distributed_optimizer(oar.optimizer.SGD(learning_rate=0.1, parameters=dp.parameters()))
    else:
        dp = oar.DataParallel(model, comm_buffer_size=0.0005, last_comm_buffer_size=0.0002,
                              find_unused_parameters=(mode == "unused"))
        opt = oar.optimizer.SGD(learning_rate=0.1, parameters=dp.parameters())
    assert len(dp._reducer.buckets) > 1 or mode == "fleet", dp._reducer.buckets
    if mode == "to_static_forward":
        # the DataParallel layer converted (its forward a program): each run readies the
        # reducer for the backward (_after_converted_forward), which all-reduces as eagerly
        oar.jit.to_static(dp)
    if mode == "mlp":
        # Paddle's rule: a bucket closes once it holds its cap (209 B first, then 524 B),
        # parameters in reverse order: head (408 B), fc2 (2176 B), fc1 (896 B).
        assert dp._reducer.buckets == [[5, 4], [3, 2], [1, 0]], dp._reducer.buckets
    losses, fell_back = [], []

    @oar.jit.to_static
    def converted(x, y):
        loss = loss_fn(dp, x, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    for step in range(STEPS):
        if mode == "no_sync":
            total = 0.0
            x, y = batch(100 * step, n, rank)
            with dp.no_sync():
                loss = loss_fn(dp, x, y) / 2
                loss.backward()
            total += float(loss)
            x, y = batch(100 * step + 1, n, rank)
            loss = loss_fn(dp, x, y) / 2
            loss.backward()
            total += float(loss)
            local = total
        elif mode == "to_static":
            # The whole step converted: DataParallel's all-reduce runs from post-accumulate
            # hooks, which a converted step's traced backward would skip, so the step runs
            # eagerly with one warning (Note [Training steps]): the same training.
            x, y = batch(step, n, rank)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                local = float(converted(x, y))
            fell_back += [str(w.message) for w in caught if "post-accumulate hooks" in str(w.message)]
        else:
            x, y = batch(step, n, rank)
            loss = loss_fn(dp, x, y, use_extra=(mode == "unused" and rank == 0))
            loss.backward()
            local = float(loss)
        if mode != "to_static":  # the converted function steps and clears itself
            opt.step()
            opt.clear_grad()
        t = oar.to_tensor(np.array([local]))
        dist.all_reduce(t, dist.ReduceOp.AVG)
        losses.append(float(t.numpy()[0]))
    if mode == "to_static":
        assert len(fell_back) == 1, fell_back  # one warning for the signature
    return losses, [p.numpy() for p in model.parameters()]


def main():
    mode = sys.argv[1]
    oar.set_default_dtype("float64")
    if mode != "fleet":
        dist.init_parallel_env()
    rank, n = int(dist.ParallelEnv().rank), int(dist.ParallelEnv().world_size)
    got_losses, got_params = train_parallel(mode, rank, n)
    want_losses, want_params = train_reference(mode, n)
    err = max(abs(a - b) for a, b in zip(got_losses, want_losses))
    perr = max(float(np.abs(a - b).max()) for a, b in zip(got_params, want_params))
    print(f"{mode} rank {rank}: max loss diff {err:.3e}, max param diff {perr:.3e}, "
          f"losses {got_losses[0]:.6f} -> {got_losses[-1]:.6f}", flush=True)
    assert got_losses[-1] < got_losses[0] * 0.95, "training did not progress"
    assert err < 1e-10 and perr < 1e-10, (err, perr)


if __name__ == "__main__":
    main()
