"""Cross-mesh reshard and pipeline stages on sub-meshes, as each rank of a job
(test_pipeline.py): `cross` moves tensors between disjoint, overlapping and differently
shaped meshes (forward and gradient) against NumPy; `pp` trains the small GPT as 2 pipeline
stages (parallelize's pp_config) against one process. A trailing `clip` argument gives every
optimizer (the reference's too) ClipGradByGlobalNorm(CLIP_NORM): the global norm spans the
stages, and the reference must have clipped in some step. A trailing `f32` runs the GPT runs
in float32 (the reference too): losses to 1e-4 relative instead of float64's 1e-10."""
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import Partial, ProcessMesh, Replicate, Shard

CLIP = "clip" in sys.argv[2:]
F32 = "f32" in sys.argv[2:]
DTYPE = "float32" if F32 else "float64"
# Losses: float64 to 1e-10 absolute (the bar), float32 to 1e-4 relative.
LOSS_RTOL = 1e-4 if F32 else 0.0
LOSS_ATOL = 0.0 if F32 else 1e-10
IR_DTYPE = "f32" if F32 else "f64"
# float32 parameters after 20 AdamW steps (lr 1e-3): measured up to 4e-6 absolute (the eager
# schedules) and 5e-4 relative to |p| + 1e-5; see _check_param. Losses: measured up to 1.4e-7
# relative.
PARAM_TOL_F32 = dict(rtol=1e-3, atol=1e-5)
CLIP_NORM = 4.0  # the GPT's gradient norms: ~5.7 at first, under 4 after a few steps (batch 8: ~4.3, then less)
_ref_norms = []  # the reference's global gradient norm at each step


def _clip():
    return oar.nn.ClipGradByGlobalNorm(CLIP_NORM) if CLIP else None


def _check_clipped():
    """With `clip`, the reference clipped in some steps and not in others (else the test
    shows nothing)."""
    if CLIP:
        assert any(n > CLIP_NORM for n in _ref_norms), f"no step clipped: norms {_ref_norms}"
        assert any(n < CLIP_NORM for n in _ref_norms), f"every step clipped: norms {_ref_norms}"


def whole(t):
    """The global value of dist tensor t on every rank (gathered over its mesh, then shared)."""
    mine = dist.unshard_dtensor(t).numpy() if dist.get_rank() in t.process_mesh.process_ids else None
    out = []
    dist.all_gather_object(out, mine)
    return next(v for v in out if v is not None)


def cross(rank):
    world = dist.get_world_size()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal((4, 6))
    if world == 2:
        cases = [(ProcessMesh([0]), [Replicate()], ProcessMesh([1]), [Replicate()]),
                 (ProcessMesh([0, 1]), [Shard(0)], ProcessMesh([1, 0]), [Shard(1)]),
                 (ProcessMesh([1]), [Replicate()], ProcessMesh([0, 1]), [Partial()]),
                 (ProcessMesh([0, 1]), [Partial()], ProcessMesh([1]), [Replicate()])]
    else:
        cases = [(ProcessMesh([[0, 1]], dim_names=["a", "b"]), [Replicate(), Shard(1)],
                  ProcessMesh([2, 3]), [Shard(0)]),
                 (ProcessMesh([0, 1]), [Shard(1)], ProcessMesh([[0, 1], [2, 3]], dim_names=["a", "b"]),
                  [Shard(0), Shard(1)]),
                 (ProcessMesh([[0, 1], [2, 3]], dim_names=["a", "b"]), [Partial(), Shard(0)],
                  ProcessMesh([3]), [Replicate()])]
    for i, (ma, pa, mb, pb) in enumerate(cases):
        a = dist.shard_tensor(x, ma, pa, stop_gradient=False)
        b = dist.reshard(a, mb, pb)
        assert b.process_mesh == mb and b.placements == pb, (i, b.process_mesh, b.placements)
        assert list(b.shape) == [4, 6]
        np.testing.assert_allclose(whole(b), x, rtol=1e-12, err_msg=f"case {i}")
        # the gradient of sum(b * w) goes back to a's mesh and layout: the ranks of b's mesh
        # compute it; the others only take part in the transfer back (as a pipeline stage
        # that sent b would: b.backward(the gradient the next stage sends))
        if rank in mb.process_ids:
            (b * dist.shard_tensor(w, mb, [Replicate()] * mb.ndim)).sum().backward()
        else:
            b.backward(oar.zeros([0, 0], dtype="float64"))
        assert a.grad.process_mesh == ma, (i, a.grad.process_mesh)
        np.testing.assert_allclose(whole(a.grad), w, rtol=1e-12, err_msg=f"case {i} gradient")
    # Only what each target needs moves (Note [Cross-mesh reshard]): rows split on both sides
    # go piece by piece, [2, 6] float64 = 96 bytes from each source rank, not the whole [4, 6]
    # (a gather would also have sent 192 bytes from each).
    # A Partial source is reduce-scattered first (along the target's split dim when it has
    # one), so it too sends halves.
    ma, mb = (ProcessMesh([0, 1]), ProcessMesh([1, 0])) if world == 2 else (ProcessMesh([0, 1]), ProcessMesh([2, 3]))
    for pa, pb, mb_, sent in [([Shard(0)], [Shard(0)], mb, 96), ([Shard(0)], [Shard(1)], mb, 2 * 48 if world == 4 else 48),
                              ([Replicate()], [Shard(0)], mb, 96 if world == 4 else 0),
                              ([Partial()], [Shard(0)], mb, 96),
                              ([Partial()], [Replicate()], ProcessMesh([1]) if world == 2 else ProcessMesh([3]),
                               {0: 96, 1: 0} if world == 2 else {0: 96, 1: 96})]:
        a = dist.shard_tensor(x, ma, pa)
        before = oar._C.distributed.cross_mesh_sent_bytes()
        b = dist.reshard(a, mb_, pb)
        moved = oar._C.distributed.cross_mesh_sent_bytes() - before
        np.testing.assert_allclose(whole(b), x, rtol=1e-12, err_msg=f"{pa} -> {pb}")
        if rank in ma.process_ids:
            want = sent[rank] if isinstance(sent, dict) else sent
            assert moved == want, (rank, pa, pb, moved, want)
        else:
            assert moved == 0, (rank, moved)
    print(f"cross ok {rank}", flush=True)


class Stage0(oar.nn.Layer):
    def __init__(self, gpt):
        super().__init__()
        self.tok, self.pos, self.block = gpt.tok, gpt.pos, gpt.blocks[0]

    def forward(self, ids):
        return self.block(self.tok(ids) + self.pos, causal_mask(ids.shape[1]))


class Stage1(oar.nn.Layer):
    def __init__(self, gpt):
        super().__init__()
        self.block, self.ln, self.head = gpt.blocks[1], gpt.ln, gpt.head

    def forward(self, x):
        return self.head(self.ln(self.block(x, causal_mask(x.shape[1]))))


def causal_mask(s):
    return oar.to_tensor(np.triu(np.full((s, s), -1e9), 1).astype(DTYPE))


def _check_param(got, want, name):
    """A trained parameter against the reference's: float64 to 1e-10. float32 to PARAM_TOL_F32,
    except the attention's key biases: softmax over the keys is invariant to them, so their
    gradient is 0 plus rounding, which AdamW (dividing by the gradient's own scale) turns into
    steps of +-lr whose sign depends on the summation order: float64's rounding is identical on
    both sides, float32's micro-batch sums are not (the loss does not depend on them)."""
    if not F32:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=name)
    elif not name.endswith(".k.bias"):
        np.testing.assert_allclose(got, want, **PARAM_TOL_F32, err_msg=name)


def _loss_diff(loss, ref_loss):
    """How far `loss` is from the reference's, in the units of the run's tolerance (<= 1 passes)."""
    got, want = float(loss.numpy()), float(ref_loss.numpy())
    return abs(got - want) / (LOSS_ATOL + LOSS_RTOL * abs(want))


def pp(rank, schedule_name):
    """The small GPT as 2 pipeline stages (embedding + block 0 | block 1 + head), 4
    micro-batches of 2, 20 AdamW steps: equal to one process on the whole batch."""
    from auto_parallel import GPT
    from oar.distributed.auto_parallel.pipelining import PipelineStage, Schedule1F1B, ScheduleFThenB
    oar.seed(9)
    ref = GPT()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters(), grad_clip=_clip())
    n_micro = 4

    def loss_fn(logits, y):  # the whole batch's mean over micro-batches of equal size
        return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1])) / n_micro

    gpt = GPT()
    gpt.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    part = [Stage0, Stage1][rank](gpt)
    # plain tensors: each stage's squared norm is all-reduced over the stages' group (None: all ranks)
    clip = dist.fleet.HybridParallelClipGrad(_clip(), None) if CLIP else None
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=part.parameters(), grad_clip=clip)
    stage = PipelineStage(part, rank, 2)
    sched = {"FThenB": ScheduleFThenB, "1F1B": Schedule1F1B}[schedule_name](stage, n_micro, loss_fn)
    rng = np.random.default_rng(5)
    diffs = []
    for _ in range(20):
        x, y, ref_loss = _reference_step(ref, ref_opt, rng, 8)
        losses = []
        sched.step(*([x] if rank == 0 else []), target=y if rank == 1 else None, losses=losses)
        opt.step()
        opt.clear_grad()
        if rank == 1:
            assert len(losses) == n_micro
            diffs.append(_loss_diff(oar.add_n(losses), ref_loss))
    if rank == 1:
        assert max(diffs) <= 1, f"{schedule_name}: pipeline losses differ by {max(diffs)} x the tolerance"
    mine = dict(part.named_parameters())
    names = {id(p): n for n, p in gpt.named_parameters()}
    ref_params = dict(ref.named_parameters())
    for p in mine.values():
        _check_param(p.numpy(), ref_params[names[id(p)]].numpy(), names[id(p)])
    _check_clipped()
    print(f"pp {schedule_name} ok {rank}", flush=True)


def _twin_gpts(GPT):
    """The one-process reference GPT (seed 9) and a second GPT holding its parameters, each
    with its own AdamW (lr 1e-3): (ref, ref_opt, model, opt)."""
    oar.seed(9)
    ref = GPT()
    state = {k: v.numpy().copy() for k, v in ref.state_dict().items()}
    ref_opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=ref.parameters(), grad_clip=_clip())
    model = GPT()
    model.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    return ref, ref_opt, model, oar.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters(),
                                                     grad_clip=_clip())


def _reference_step(ref, ref_opt, rng, batch):
    """One AdamW step of the single-process reference GPT on a random next-token batch:
    (inputs, targets, loss), for the pipelined run to match."""
    ids = rng.integers(0, 32, size=(batch, 9))
    x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
    ref_loss = oar.nn.functional.cross_entropy(oar.reshape(ref(x), [-1, 32]), oar.reshape(y, [-1]))
    ref_loss.backward()
    if CLIP:
        _ref_norms.append(oar.nn.ClipGradByGlobalNorm(CLIP_NORM).global_norm([(p, p.grad) for p in ref.parameters()]))
    ref_opt.step()
    ref_opt.clear_grad()
    return x, y, ref_loss


def pp_parallelize(rank, split):
    """parallelize's pp_config: the small GPT cut after blocks.0 on a 'pp' axis (2 processes:
    mesh [0, 1]; 4 processes: pp x dp [[0, 1], [2, 3]] with each stage's batch split over
    dp), 20 AdamW steps equal to one process (float64 losses to 1e-10). A process runs only its
    own stage's ops: the dist layer skips the others (checked by the empty local values)."""
    from auto_parallel import GPT
    world = dist.get_world_size()
    ref, ref_opt, model, opt = _twin_gpts(GPT)
    if world == 2:
        mesh = ProcessMesh([0, 1], dim_names=["pp"])
        stages = [ProcessMesh([0], dim_names=["pp"]), ProcessMesh([1], dim_names=["pp"])]
    else:
        mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["pp", "dp"])
        stages = [ProcessMesh([0, 1], dim_names=["dp"]), ProcessMesh([2, 3], dim_names=["dp"])]
    spec = "blocks" if split == "name" else {"blocks.0": dist.SplitPoint.END}
    config = {"pp_config": {"split_spec": spec}}
    if world == 4:
        config["dp_config"] = {"sharding_level": 0}
    model, opt = dist.parallelize(model, opt, mesh, config)
    assert model.tok.weight.process_mesh == stages[0] and model.pos.process_mesh == stages[0]
    assert model.blocks[1].q.weight.process_mesh == stages[1] and model.head.weight.process_mesh == stages[1]
    mine = 0 if rank in stages[0].process_ids else 1
    other = model.head.weight if mine == 0 else model.tok.weight
    assert other._local_value().shape == [0, 0], other._local_value().shape  # holds nothing of the other stage
    rng = np.random.default_rng(5)
    diffs = []
    for _ in range(20):
        x, y, ref_loss = _reference_step(ref, ref_opt, rng, 4)
        if world == 4:  # each stage's batch split over its dp axis
            x = dist.shard_tensor(x, stages[0], [Shard(0)])
            y = dist.shard_tensor(y, stages[1], [Shard(0)])
        logits = model(x)
        assert logits.process_mesh == stages[1] and list(logits.shape) == [4, 8, 32], (logits.process_mesh,
                                                                                     logits.shape)
        loss = oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]),
                                               reduction="none").mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        if mine == 1:
            diffs.append(_loss_diff(dist.unshard_dtensor(loss), ref_loss))
        else:
            assert logits._local_value().shape == [0, 0, 0]
    if mine == 1:
        assert max(diffs) <= 1, f"pp_config losses differ by {max(diffs)} x the tolerance"
    ref_params = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        if rank in p.process_mesh.process_ids:
            _check_param(dist.unshard_dtensor(p).numpy(), ref_params[name].numpy(), name)
    _check_clipped()
    print(f"pp_config ok {rank}", flush=True)


def pp_mp_static(rank):
    """pp x mp 2x2 on 4 processes through dist.to_static: the GPT cut after blocks.0, each
    stage's blocks tensor-parallel over its 'mp' axis, Strategy.pipeline with 2 micro-batches
    per step; 10 AdamW steps equal to one process on the whole batch (1e-10)."""
    from auto_parallel import GPT
    ref, ref_opt, model, opt = _twin_gpts(GPT)
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["pp", "mp"])
    plan = {"blocks.*.q": dist.ColWiseParallel(), "blocks.*.k": dist.ColWiseParallel(),
            "blocks.*.v": dist.ColWiseParallel(), "blocks.*.proj": dist.RowWiseParallel(),
            "blocks.*.fc1": dist.ColWiseParallel(), "blocks.*.fc2": dist.RowWiseParallel()}
    model, opt = dist.parallelize(model, opt, mesh, {"pp_config": {"split_spec": "blocks"},
                                                     "mp_config": {"parallelize_plan": plan}})
    stage1 = ProcessMesh([2, 3], dim_names=["mp"])
    assert model.blocks[1].fc1.weight.process_mesh == stage1 and model.blocks[1].fc1.weight.placements == [Shard(1)]

    def loss_fn(logits, y):
        return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": "FThenB", "accumulate_steps": 2}})
    dm = dist.to_static(model, None, loss_fn, opt, strategy=strategy)
    rng = np.random.default_rng(5)
    diffs = []
    for _ in range(10):
        x, y, ref_loss = _reference_step(ref, ref_opt, rng, 4)
        loss = dm(x, y)
        if rank in stage1.process_ids:
            diffs.append(_loss_diff(dist.unshard_dtensor(loss), ref_loss))
    if rank in stage1.process_ids:
        assert len(diffs) == 10 and max(diffs) <= 1, f"pp x mp DistModel losses differ by {max(diffs)} x the tolerance"
    _check_clipped()
    print(f"pp_mp_static ok {rank}", flush=True)


def _losses_match_one_process(dm, ref, ref_opt, rank, label):
    """20 steps of the DistModel `dm` beside the one-process reference; the last stage (rank 1)
    holds the loss and checks it to 1e-10."""
    rng = np.random.default_rng(5)
    diffs = []
    for _ in range(20):
        x, y, ref_loss = _reference_step(ref, ref_opt, rng, 4)
        loss = dm(x, y)
        if rank == 1:
            diffs.append(_loss_diff(dist.unshard_dtensor(loss), ref_loss))
    if rank == 1:
        assert max(diffs) <= 1, f"{label} DistModel losses differ by {max(diffs)} x the tolerance"
    _check_clipped()


def _check_clip_program(text, ops, rank):
    """With `clip`, the global norm crosses the stages in the program: stage 0's squared sum
    goes to stage 1 (rank 1), which takes the root and the scale and sends the scale back:
    two 0-d dist.send_recv ops, the sqrt on rank 1 only."""
    if CLIP:
        assert text.count("global_shape = #shape[], mesh_ids") == 2, rank
        assert ops.count("pd_op.sqrt") == rank and ops.count("pd_op.maximum") == rank, (rank, sorted(set(ops)))


def pp_static(rank, schedule, micro=2):
    """2 pipeline stages (the GPT cut after blocks.0, pp=2) through dist.to_static with `micro`
    micro-batches per step in `schedule` order, compiled: 20 AdamW steps equal to one process
    (float64 losses and parameters to 1e-10); each rank's program holds its own stage's ops,
    the stage boundary as dist.send_recv ops (activations forward, gradients back) in its
    stage's order, and the AdamW update of its stage's parameters."""
    import re

    from auto_parallel import GPT
    ref, ref_opt, model, opt = _twin_gpts(GPT)
    model, opt = dist.parallelize(model, opt, ProcessMesh([0, 1], dim_names=["pp"]),
                                  {"pp_config": {"split_spec": "blocks"}})

    def loss_fn(logits, y):
        return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": schedule, "accumulate_steps": micro}})
    dm = dist.to_static(model, None, loss_fn, opt, strategy=strategy)
    _losses_match_one_process(dm, ref, ref_opt, rank, f"pp {schedule}")
    ref_params = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        if rank in p.process_mesh.process_ids:
            _check_param(dist.unshard_dtensor(p).numpy(), ref_params[name].numpy(), name)
    text = str(dm.dist_main_program())
    ops = re.findall(r'"([a-z_]+\.[a-z_0-9]+)"\(', text)
    # each micro-batch sends its activations forward and gets their gradient back
    assert ops.count("dist.send_recv") >= 2 * micro, sorted(set(ops))
    rows = 4 // micro
    assert f"global_shape = #shape[{rows}, 8, 64]" in text, f"a micro-batch's [{rows}, 8, 64] activations cross"
    # this stage's order, read from the stage boundary's transfers: F = activations 0 -> 1, B = gradients 1 -> 0
    order = "".join("F" if f == "0" else "B" for f in re.findall(
        rf'"dist.send_recv"\(%\d+\) \{{from = #shape\[-1\], global_shape = #shape\[{rows}, 8, 64\], '
        r'mesh_ids = #shape\[(\d)\]', text))
    warm = {"FThenB": micro, "1F1B": 1 - rank}[schedule]  # 1F1B: stage s of 2 warms up with 1 - s forwards
    want = "F" * warm + "FB" * (micro - warm) + "B" * warm if schedule == "1F1B" else "F" * micro + "B" * micro
    assert order == want, (rank, schedule, order, want)
    _check_clip_program(text, ops, rank)
    n_params = len(list(model.parameters()))  # the other stage's too, empty here (as the eager step)
    assert ops.count("dist.adamw_update") == 1 and ops.count("builtin.set_parameter") == 3 * n_params
    if rank == 1:  # the last stage computes the loss; FThenB runs every forward before the first backward
        ce = [i for i, o in enumerate(ops) if o == "pd_op.cross_entropy"]
        ce_grad = [i for i, o in enumerate(ops) if o == "pd_op.cross_entropy_grad"]
        assert len(ce) == micro and len(ce_grad) == micro, (ce, ce_grad)
        assert (ce[1] < ce_grad[0]) == (schedule == "FThenB"), (schedule, ce, ce_grad)
    else:  # stage 0 holds no op of stage 1
        assert "pd_op.cross_entropy" not in ops and "pd_op.gather" in ops, sorted(set(ops))  # the embedding
    print(f"pp_static {schedule} ok {rank}", flush=True)


def pp_merge_static(rank, schedule):
    """2 pipeline stages with 2 micro-batches and Strategy.gradient_merge (k_steps=2, avg)
    through dist.to_static, compiled (a fallback to eager fails the test, see main): 10 merged
    AdamW steps equal to one process stepping on the mean of two batches' losses (float64 to
    1e-10). After a call that only accumulates, another stage's parameters hold empty
    gradients of their own shapes (each output its own dist metadata)."""
    from auto_parallel import GPT
    ref, ref_opt, model, opt = _twin_gpts(GPT)
    model, opt = dist.parallelize(model, opt, ProcessMesh([0, 1], dim_names=["pp"]),
                                  {"pp_config": {"split_spec": "blocks"}})

    def loss_fn(logits, y):
        return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": schedule, "accumulate_steps": 2},
                              "gradient_merge": {"enable": True, "k_steps": 2}})
    dm = dist.to_static(model, None, loss_fn, opt, strategy=strategy)
    rng = np.random.default_rng(5)
    diffs = []
    for step in range(10):
        batches, ref_losses = [], []
        for _ in range(2):
            ids = rng.integers(0, 32, size=(4, 9))
            x, y = oar.to_tensor(ids[:, :-1]), oar.to_tensor(ids[:, 1:])
            ref_losses.append(loss_fn(ref(x), y))
            batches.append((x, y))
        ((ref_losses[0] + ref_losses[1]) / 2).backward()
        if CLIP:
            _ref_norms.append(oar.nn.ClipGradByGlobalNorm(CLIP_NORM).global_norm([(p, p.grad) for p in ref.parameters()]))
        ref_opt.step()
        ref_opt.clear_grad()
        for k, ((x, y), ref_loss) in enumerate(zip(batches, ref_losses)):
            loss = dm(x, y)
            if rank == 1:
                diffs.append(_loss_diff(dist.unshard_dtensor(loss), ref_loss))
            if step == 0 and k == 0:
                for name, p in model.named_parameters():
                    assert p.grad is not None and list(p.grad.shape) == list(p.shape), (name, p.shape)
    if rank == 1:
        assert max(diffs) <= 1, f"pp + gradient_merge losses differ by {max(diffs)} x the tolerance"
    if CLIP:  # some merged steps clipped (the first: norm ~4.3 > 4), others not
        assert any(n > CLIP_NORM for n in _ref_norms) and any(n < CLIP_NORM for n in _ref_norms), _ref_norms
    ref_params = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        if rank in p.process_mesh.process_ids:
            _check_param(dist.unshard_dtensor(p).numpy(), ref_params[name].numpy(), name)
    merge = [e.program for key, e in dm._programs.items() if key[2] == "merge"]
    assert len(merge) == 1 and "dist.adamw_update" in str(merge[0]), "the merged step's update in its program"
    print(f"pp_merge_static {schedule} ok {rank}", flush=True)


def vpp_static(rank, kind="sequential"):
    """VPP (interleaved 1F1B) through dist.to_static, compiled: the small GPT as 4 virtual
    stages on 2 ranks (embedding | block 0 | block 1 | head: chunk c on rank c % 2), an
    nn.Sequential whose items sit on their meshes (`sequential`) or a
    fleet.meta_parallel.PipelineLayer cutting the same 4 layers (`pipeline_layer`: uniform
    segments, num_virtual_pipeline_stages=2, the chunks moving their inputs), 4 micro-batches
    per step, 20 AdamW steps equal to one process (float64 losses and parameters to 1e-10); each
    rank's program holds its two chunks' units in its interleaved order, read from the chunks'
    transfers."""
    import re

    from auto_parallel import GPT
    from oar.distributed.auto_parallel.pipeline_parallel import _to_mesh
    ref, ref_opt, model, opt = _twin_gpts(GPT)
    meshes = [ProcessMesh([0], dim_names=["pp"]), ProcessMesh([1], dim_names=["pp"])]

    class Embed(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = model.tok, model.pos

        def forward(self, ids):
            return self.tok(ids) + self.pos

    class Blk(oar.nn.Layer):
        def __init__(self, blk, mesh):
            super().__init__()
            self.blk, self.mesh = blk, mesh

        def forward(self, x):
            return self.blk(_to_mesh(x, self.mesh) if self.mesh else x, causal_mask(x.shape[1]))

    class Head(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.ln, self.head, self.mesh = model.ln, model.head, meshes[1]

        def forward(self, x):
            return self.head(self.ln(_to_mesh(x, self.mesh) if self.mesh else x))
    if kind == "sequential":
        seq = oar.nn.Sequential(Embed(), Blk(model.blocks[0], meshes[1]), Blk(model.blocks[1], meshes[0]), Head())
        for c, item in enumerate(seq):
            dist.shard_layer(item, meshes[c % 2])
    else:  # the PipelineLayer lays chunk c on stage c % 2 and moves each chunk's input itself
        from oar.distributed.fleet.meta_parallel import PipelineLayer
        head = Head()
        head.mesh = None
        seq = PipelineLayer([Embed(), Blk(model.blocks[0], None), Blk(model.blocks[1], None), head], num_stages=2,
                            num_virtual_pipeline_stages=2)
        assert seq.segment_parts == [0, 1, 2, 3, 4] and seq.get_num_virtual_stages() == 2
        assert model.blocks[0].q.weight.process_mesh == meshes[1] and model.tok.weight.process_mesh == meshes[0]
    opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=seq.parameters(), grad_clip=_clip())

    def loss_fn(logits, y):
        return oar.nn.functional.cross_entropy(oar.reshape(logits, [-1, 32]), oar.reshape(y, [-1]))
    strategy = dist.Strategy({"pipeline": {"enable": True, "schedule_mode": "VPP", "accumulate_steps": 4,
                                           "vpp_degree": 2}})
    dm = dist.to_static(seq, None, loss_fn, opt, strategy=strategy)
    _losses_match_one_process(dm, ref, ref_opt, rank, "VPP")
    ref_params = dict(ref.named_parameters())
    names = {id(p): n for n, p in model.named_parameters()}
    for p in seq.parameters():
        if rank in p.process_mesh.process_ids:
            _check_param(dist.unshard_dtensor(p).numpy(), ref_params[names[id(p)]].numpy(), names[id(p)])
    from oar.distributed.auto_parallel.static_pipeline import vpp_order
    text = str(dm.dist_main_program())
    ops = re.findall(r'"([a-z_]+\.[a-z_0-9]+)"\(', text)
    # The order, read from the transfers (S: this rank sends a [1, 8, 64] micro-batch tensor, R: it
    # receives one): a forward of chunk c receives (c > 0) and sends (c < 3), a backward receives
    # (c < 3) and sends (c > 0); in vpp_order: stage 0 warms up with 4 forwards, stage 1 with 2.
    got = "".join("S" if out == "0x0x0" else "R" for out in re.findall(
        r'"dist.send_recv"\(%\d+\) \{[^}]*global_shape = #shape\[1, 8, 64\][^}]*\} : \(tensor<[0-9x]+x' + IR_DTYPE + r'>\) -> '
        rf'\(tensor<([0-9x]+)x{IR_DTYPE}>\)', text))
    units = vpp_order(4, rank, 2, 2)
    want = ""
    for kind, _, j in units:
        c = 2 * j + rank
        want += ("R" if c > 0 else "") + ("S" if c < 3 else "") if kind == "F" else \
            ("R" if c < 3 else "") + ("S" if c > 0 else "")
    assert got == want, (rank, got, want)
    assert [u[0] for u in units[:6]] == (list("FFFFFB") if rank == 0 else list("FFFBFB")), units
    _check_clip_program(text, ops, rank)
    assert ops.count("dist.adamw_update") == 1 and ops.count("dist.send_recv") == len(want) + 2 * CLIP
    if rank == 1:  # chunk 3 (the head and the loss) is rank 1's; its first backward follows 3 forwards
        ce = [i for i, o in enumerate(ops) if o == "pd_op.cross_entropy"]
        ce_grad = [i for i, o in enumerate(ops) if o == "pd_op.cross_entropy_grad"]
        assert len(ce) == 4 and len(ce_grad) == 4 and ce[0] < ce_grad[0] < ce[1], (ce, ce_grad)
    else:  # rank 0 holds chunks 0 and 2: the embedding, no loss
        assert "pd_op.cross_entropy" not in ops and "pd_op.gather" in ops, sorted(set(ops))
    print(f"vpp_static ok {rank}", flush=True)


def main():
    import warnings
    warnings.filterwarnings("error", message="DistModel")  # an eager fallback fails the test
    if sys.argv[1] == "sample":  # on the sample device (OAR_SAMPLE_DEVICE_LIB), over xccl
        import os
        oar.device.load_plugin(os.environ["OAR_SAMPLE_DEVICE_LIB"])
        oar.set_device("sample:0")
        del sys.argv[1]
    dist.init_parallel_env()
    oar.set_default_dtype(DTYPE)
    rank = dist.get_rank()
    if sys.argv[1] == "pp":
        pp(rank, sys.argv[2])
    elif sys.argv[1] == "pp_mp_static":
        pp_mp_static(rank)
    elif sys.argv[1] == "pp_merge_static":
        pp_merge_static(rank, sys.argv[2])
    elif sys.argv[1] == "pp_static":
        pp_static(rank, sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "vpp_static":
        vpp_static(rank, sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else "sequential")
    elif sys.argv[1] == "pp_config":
        pp_parallelize(rank, sys.argv[2])
    else:
        {"cross": cross}[sys.argv[1]](rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
