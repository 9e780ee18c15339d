"""fleet: Paddle's collective-training entry points, for data parallelism.

    from oar.distributed import fleet
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 1, "pp_degree": 1}
    fleet.init(is_collective=True, strategy=strategy)
    model = fleet.distributed_model(model)
    opt = fleet.distributed_optimizer(opt)

The hybrid degrees are stored and checked against the world size; only dp > 1 is run here
(tensor and pipeline parallelism come with auto-parallel: oar.distributed.auto_parallel).
HybridParallelClipGrad gives global-norm clipping across processes that hold disjoint parts
of a model (the stages of oar.distributed.auto_parallel.pipelining)."""
import math

import numpy as np

from .. import collective

__all__ = ["DistributedStrategy", "init", "distributed_model", "distributed_optimizer",
           "worker_index", "worker_num", "is_first_worker", "barrier_worker", "get_strategy",
           "HybridParallelClipGrad"]

_DEGREES = ("dp_degree", "mp_degree", "pp_degree", "sharding_degree", "sep_degree")


class DistributedStrategy:
    """Paddle's fleet.DistributedStrategy: the parallel configuration fleet.init reads."""

    def __init__(self):
        self._hybrid = {"dp_degree": -1, "mp_degree": 1, "pp_degree": 1, "sharding_degree": 1,
                        "sep_degree": 1}
        self.amp = False
        self.recompute = False
        self.gradient_merge = False
        self.find_unused_parameters = False
        self.fuse_grad_size_in_MB = 25

    @property
    def hybrid_configs(self):
        return dict(self._hybrid)

    @hybrid_configs.setter
    def hybrid_configs(self, configs):
        if not isinstance(configs, dict):
            raise TypeError(f"DistributedStrategy.hybrid_configs must be a dict, got "
                            f"{type(configs).__name__}")
        for key, value in configs.items():
            if key in _DEGREES:
                if not isinstance(value, int) or (value < 1 and not (key == "dp_degree" and value == -1)):
                    raise ValueError(f"DistributedStrategy.hybrid_configs: {key} must be a positive "
                                     f"int (dp_degree may be -1: the rest of the world), got {value!r}")
            self._hybrid[key] = value

    def __repr__(self):
        return f"DistributedStrategy(hybrid_configs={self._hybrid})"


class _Fleet:
    def __init__(self):
        self.strategy = None
        self.initialized = False

    def init(self, role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
        if not is_collective:
            raise NotImplementedError("fleet.init: only collective training (is_collective=True) is "
                                      "supported; parameter-server mode is not")
        strategy = strategy if strategy is not None else DistributedStrategy()
        if not isinstance(strategy, DistributedStrategy):
            raise TypeError(f"fleet.init: strategy must be a DistributedStrategy, got "
                            f"{type(strategy).__name__}")
        world = collective.get_world_size()
        h = strategy._hybrid
        others = h["mp_degree"] * h["pp_degree"] * h["sharding_degree"] * h["sep_degree"]
        if h["dp_degree"] == -1:
            if world % others:
                raise ValueError(f"fleet.init: world size {world} is not divisible by mp*pp*sharding"
                                 f"*sep = {others}")
            h["dp_degree"] = world // others
        if h["dp_degree"] * others != world:
            raise ValueError(f"fleet.init: dp_degree * mp_degree * pp_degree * sharding_degree * "
                             f"sep_degree = {h['dp_degree'] * others} must equal the world size {world} "
                             f"(hybrid_configs {h})")
        if world > 1 or collective._dist.available:
            collective.init_parallel_env()
        self.strategy = strategy
        self.initialized = True

    def _check(self, op):
        if not self.initialized:
            raise RuntimeError(f"fleet.{op}: call fleet.init(is_collective=True) first")

    def distributed_model(self, model):
        self._check("distributed_model")
        h = self.strategy._hybrid
        if any(h[k] > 1 for k in _DEGREES if k != "dp_degree"):
            raise NotImplementedError(
                f"fleet.distributed_model: hybrid_configs {h} asks for tensor, pipeline, sharding "
                "or sequence parallelism; this fleet runs data parallelism only (use "
                "oar.distributed.auto_parallel for the others)")
        if collective.get_world_size() == 1:
            return model
        from ..parallel import DataParallel
        return DataParallel(model, comm_buffer_size=self.strategy.fuse_grad_size_in_MB,
                            find_unused_parameters=self.strategy.find_unused_parameters)

    def distributed_optimizer(self, optimizer, strategy=None):
        """The optimizer itself: DataParallel already averages gradients before step()."""
        self._check("distributed_optimizer")
        if strategy is not None:
            self.strategy = strategy
        return optimizer

    def worker_index(self):
        return collective.get_rank()

    def worker_num(self):
        return collective.get_world_size()

    def is_first_worker(self):
        return self.worker_index() == 0

    def barrier_worker(self):
        from ..communication import barrier
        if collective.is_initialized():
            barrier()

    def get_strategy(self):
        return self.strategy


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


_fleet = _Fleet()
init = _fleet.init
distributed_model = _fleet.distributed_model
distributed_optimizer = _fleet.distributed_optimizer
worker_index = _fleet.worker_index
worker_num = _fleet.worker_num
is_first_worker = _fleet.is_first_worker
barrier_worker = _fleet.barrier_worker
get_strategy = _fleet.get_strategy

from . import meta_parallel  # noqa: E402 (PipelineLayer builds on nn, imported with fleet)
