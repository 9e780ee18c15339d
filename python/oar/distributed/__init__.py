"""oar.distributed: Paddle's paddle.distributed over Oar's process groups (Gloo on CPU).

Without a launcher it is a job of one: get_rank() is 0 and get_world_size() 1, read from
PADDLE_TRAINER_ID / PADDLE_TRAINERS_NUM (ParallelEnv). init_parallel_env() joins the job the
launcher (python -m oar.distributed.launch) or spawn() described. See docs/distributed.md."""
from .parallel_env import ParallelEnv  # noqa: F401
from .collective import (  # noqa: F401
    CommunicationError, Group, ReduceOp, init_parallel_env, is_initialized, is_available, new_group, get_group,
    destroy_process_group, get_rank, get_world_size, get_backend)
from .communication import (  # noqa: F401
    all_reduce, all_gather, all_gather_object, reduce_scatter, broadcast, broadcast_object_list,
    reduce, scatter, alltoall, send, recv, isend, irecv, barrier)
from .spawn import spawn  # noqa: F401
from .checkpoint import load_state_dict, save_state_dict  # noqa: F401

__all__ = [
    "ParallelEnv", "CommunicationError", "Group", "ReduceOp", "init_parallel_env", "is_initialized", "is_available",
    "new_group",
    "get_group", "destroy_process_group", "get_rank", "get_world_size", "get_backend",
    "all_reduce", "all_gather", "all_gather_object", "reduce_scatter", "broadcast",
    "broadcast_object_list", "reduce", "scatter", "alltoall", "send", "recv", "isend", "irecv",
    "barrier", "spawn", "DataParallel", "fleet", "InMemoryDataset", "QueueDataset",
    "ProcessMesh", "DistAttr", "Placement", "Shard", "Replicate", "Partial", "ReduceType", "shard_tensor",
    "dtensor_from_local", "dtensor_from_fn", "set_mesh", "get_mesh", "infer_spmd", "reshard", "unshard_dtensor",
    "shard_layer", "shard_optimizer", "ShardingStage1", "ShardingStage2", "ShardingStage3", "parallelize",
    "ColWiseParallel", "RowWiseParallel", "save_state_dict", "load_state_dict", "shard_dataloader", "SplitPoint",
    "Strategy", "DistModel", "to_static", "SequenceParallelBegin", "SequenceParallelEnd",
    "SequenceParallelEnable", "SequenceParallelDisable", "shard_scaler",
]


def __getattr__(name):
    # DataParallel subclasses nn.Layer and fleet builds on it: imported on first use, since
    # oar.io imports this package before oar.nn exists.
    if name == "DataParallel":
        from .parallel import DataParallel
        return DataParallel
    if name in ("InMemoryDataset", "QueueDataset"):  # Paddle's paddle.distributed.<Dataset>
        from .fleet import dataset
        return getattr(dataset, name)
    if name in ("fleet", "launch", "io"):  # paddle.distributed.fleet / .launch / .io under the alias
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'oar.distributed' has no attribute {name!r}")
from .auto_parallel import (  # noqa: F401  (auto_parallel/: meshes, placements, dist tensors)
    ProcessMesh, DistAttr, Placement, Shard, Replicate, Partial, ReduceType, shard_tensor, dtensor_from_local,
    dtensor_from_fn, set_mesh, get_mesh, infer_spmd, reshard, unshard_dtensor, shard_layer, shard_optimizer,
    ShardingStage1, ShardingStage2, ShardingStage3, parallelize, ColWiseParallel, RowWiseParallel,
    shard_dataloader, SplitPoint, Strategy, DistModel, to_static, SequenceParallelBegin, SequenceParallelEnd,
    SequenceParallelEnable, SequenceParallelDisable)
from .amp_scaler import shard_scaler  # noqa: F401
