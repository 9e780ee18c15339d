"""Pipeline parallelism in dynamic mode (Paddle's paddle.distributed.auto_parallel.pipelining):
a model cut into sequential stages, one per process, run over micro-batches by a schedule
(FThenB or 1F1B) with activations and their gradients sent between neighbouring stages.
Note [Pipeline schedules] in docs/notes/distributed.md."""
from .schedules import Schedule1F1B, ScheduleFThenB
from .stage import PipelineStage

__all__ = ["PipelineStage", "ScheduleFThenB", "Schedule1F1B"]
