"""Auto-parallel (Paddle's paddle.distributed auto-parallel API): meshes, placements, dist
tensors and SPMD rule inference. Note [Placements] and Note [SPMD rules] in
docs/notes/distributed.md."""
from .api import (ShardingStage1, ShardingStage2, ShardingStage3, dtensor_from_fn, dtensor_from_local, infer_spmd,
                  reshard, shard_layer, shard_optimizer, shard_tensor, unshard_dtensor)
from .intermediate import (ColWiseParallel, RowWiseParallel, SequenceParallelBegin, SequenceParallelDisable,
                           SequenceParallelEnable, SequenceParallelEnd, parallelize)
from .pipeline_parallel import SplitPoint
from .placement_type import Partial, Placement, ReduceType, Replicate, Shard
from .process_mesh import DistAttr, ProcessMesh, get_mesh, set_mesh
from .shard_dataloader import shard_dataloader
from .static_mode import DistModel, Strategy, to_static

__all__ = ["ProcessMesh", "DistAttr", "Placement", "Shard", "Replicate", "Partial", "ReduceType", "shard_tensor",
           "dtensor_from_local", "dtensor_from_fn", "set_mesh", "get_mesh", "infer_spmd", "reshard",
           "unshard_dtensor", "shard_layer", "shard_optimizer", "ShardingStage1", "ShardingStage2",
           "ShardingStage3", "parallelize", "ColWiseParallel", "RowWiseParallel", "shard_dataloader", "SplitPoint",
           "Strategy", "DistModel", "to_static", "SequenceParallelBegin", "SequenceParallelEnd",
           "SequenceParallelEnable", "SequenceParallelDisable"]
