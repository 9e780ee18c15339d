"""Auto-parallel (Paddle's paddle.distributed auto-parallel API): meshes, placements, dist
tensors and SPMD rule inference. Note [Placements] and Note [SPMD rules] in
docs/notes/distributed.md."""
from .api import dtensor_from_fn, dtensor_from_local, infer_spmd, shard_tensor
from .placement_type import Partial, Placement, ReduceType, Replicate, Shard
from .process_mesh import ProcessMesh, get_mesh, set_mesh

__all__ = ["ProcessMesh", "Placement", "Shard", "Replicate", "Partial", "ReduceType", "shard_tensor",
           "dtensor_from_local", "dtensor_from_fn", "set_mesh", "get_mesh", "infer_spmd"]
