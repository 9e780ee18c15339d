"""fleet: Paddle's fleet entry points: collective training (data parallelism) and the role queries.

    from oar.distributed import fleet
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 1, "pp_degree": 1}
    fleet.init(is_collective=True, strategy=strategy)
    model = fleet.distributed_model(model)
    opt = fleet.distributed_optimizer(opt)

The hybrid degrees are stored and checked against the world size; only dp > 1 is run here
(tensor and pipeline parallelism come with auto-parallel: oar.distributed.auto_parallel).
HybridParallelClipGrad gives global-norm clipping across processes that hold disjoint parts
of a model (the stages of oar.distributed.auto_parallel.pipelining). fleet.init() without
is_collective runs Paddle's non-distributed fallback (one worker, no parameter servers);
a parameter-server job is refused (fleet.py)."""
import math

import numpy as np

from .. import auto_parallel as auto  # noqa: F401  (Paddle's fleet.auto: Strategy, Engine, ...)
from .. import collective
from .base.distributed_strategy import DistributedStrategy
from .base.role_maker import PaddleCloudRoleMaker, Role, RoleMakerBase, UserDefinedRoleMaker
from .dataset import BoxPSDataset, DatasetBase, FileInstantDataset, InMemoryDataset, QueueDataset
from .fleet import Fleet

__all__ = ["DistributedStrategy", "Fleet", "DatasetBase", "InMemoryDataset", "QueueDataset", "FileInstantDataset",
           "BoxPSDataset", "PaddleCloudRoleMaker", "UserDefinedRoleMaker", "Role",
           "RoleMakerBase", "HybridParallelClipGrad", "init", "distributed_model", "distributed_optimizer",
           "worker_index", "worker_num", "node_num", "is_first_worker", "is_worker", "is_server",
           "worker_endpoints", "server_num", "server_index", "server_endpoints", "barrier_worker",
           "all_reduce", "get_strategy", "init_worker", "init_server", "run_server", "stop_worker",
           "load_model", "load_one_table", "load_inference_model", "save_inference_model",
           "save_persistables", "save_one_table", "save_dense_params", "set_date", "collective_perf"]



class HybridParallelClipGrad:
    """Global-norm clipping over a model whose parameters are split across the ranks of
    `group` (a Group, or a list of them: e.g. the pipeline stages' group), as Paddle's
    HybridParallelClipGrad: each rank's squared norm of its own gradients is all-reduced
    (SUM, in float64) over every group in turn, so every rank scales by the same
    clip_norm / max(global_norm, clip_norm) one process would (Note [Pipeline clipping]).
    The ranks of a group must hold disjoint parameters: one replicated across it would be
    counted once per rank. Use it as an optimizer's grad_clip; dist tensors (auto-parallel
    pipelines) need no wrapper, ClipGradByGlobalNorm reduces over their meshes itself."""

    def __init__(self, clip, group=None):
        from ...nn import ClipGradByGlobalNorm
        if not isinstance(clip, ClipGradByGlobalNorm):
            raise TypeError(f"HybridParallelClipGrad: clip must be a ClipGradByGlobalNorm, got {type(clip).__name__}")
        groups = list(group) if isinstance(group, (list, tuple)) else [group]  # None: every rank
        for g in groups:
            if g is not None and not isinstance(g, collective.Group):
                raise TypeError(f"HybridParallelClipGrad: group must be a Group, a list of Groups or None, got "
                                f"{type(g).__name__}")
        self._clip, self._groups = clip, groups

    def __call__(self, params_grads):
        import oar
        from ...nn.clip import _need_clip, _sq_sum
        from ..communication import all_reduce
        params_grads = list(params_grads)
        with oar.no_grad():
            total = oar.to_tensor(np.array(sum(_sq_sum(g) for p, g in params_grads if _need_clip(p)),
                                           dtype=np.float64))
            for g in self._groups:
                if g is not None or collective.is_initialized():  # None without a job: one process
                    all_reduce(total, group=g)
            norm = math.sqrt(float(total.numpy()))
        c = self._clip  # then as ClipGradByGlobalNorm's own float path
        if norm <= c.clip_norm or not math.isfinite(norm) and c.auto_skip_clip:
            return params_grads
        scale = c.clip_norm / norm
        with oar.no_grad():
            return [(p, g * scale if _need_clip(p) else g) for p, g in params_grads]

    def __str__(self):
        ranks = [g.ranks if g is not None else "all" for g in self._groups]
        return f"HybridParallelClipGrad({self._clip}, ranks {ranks})"


_fleet = Fleet()
init = _fleet.init
distributed_model = _fleet.distributed_model
distributed_optimizer = _fleet.distributed_optimizer
worker_index = _fleet.worker_index
worker_num = _fleet.worker_num
node_num = _fleet.node_num
is_first_worker = _fleet.is_first_worker
is_worker = _fleet.is_worker
is_server = _fleet.is_server
worker_endpoints = _fleet.worker_endpoints
server_num = _fleet.server_num
server_index = _fleet.server_index
server_endpoints = _fleet.server_endpoints
barrier_worker = _fleet.barrier_worker
all_reduce = _fleet.all_reduce
get_strategy = _fleet.get_strategy
init_worker = _fleet.init_worker
init_server = _fleet.init_server
run_server = _fleet.run_server
stop_worker = _fleet.stop_worker
load_model = _fleet.load_model
load_one_table = _fleet.load_one_table
load_inference_model = _fleet.load_inference_model
save_inference_model = _fleet.save_inference_model
save_persistables = _fleet.save_persistables
save_one_table = _fleet.save_one_table
save_dense_params = _fleet.save_dense_params
set_date = _fleet.set_date
collective_perf = _fleet.collective_perf

from . import meta_parallel  # noqa: E402 (PipelineLayer builds on nn, imported with fleet)
