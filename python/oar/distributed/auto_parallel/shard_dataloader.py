"""paddle.distributed.shard_dataloader: a DataLoader whose batches are dist tensors.

With shard_dims (a mesh axis), each rank loads only its part of every global batch (a
DistributedBatchSampler over that axis: batch_size / degree samples per rank) and the parts
become one dist tensor split along dim 0 over that axis (Shard(0) there, Replicate on the
other axes). Without shard_dims every rank loads the whole batch (Replicate)."""
from ... import _C
from .api import _check_mesh, dtensor_from_local
from .placement_type import Replicate, Shard

__all__ = ["shard_dataloader", "ShardDataloader"]


def _axis(mesh, dim, op):
    if dim is None:
        return None
    names = list(mesh.dim_names)
    if isinstance(dim, str):
        if dim not in names:
            raise ValueError(f"{op}: shard_dims {dim!r} is not an axis of the mesh (axes: {names})")
        return names.index(dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -len(names) <= dim < len(names):
        raise ValueError(f"{op}: shard_dims {dim!r} is not an axis index of a mesh of {len(names)} axes")
    return dim % len(names)


class ShardDataloader:
    """Iterates `dataloader`'s batches as dist tensors (see shard_dataloader)."""

    def __init__(self, dataloader, meshes, input_keys=None, shard_dims=None, is_dataset_splitted=False):
        op = "shard_dataloader"
        from ...io import DataLoader, DistributedBatchSampler
        if not isinstance(dataloader, DataLoader):
            raise TypeError(f"{op}: dataloader must be an oar.io.DataLoader, got {type(dataloader).__name__}")
        self._meshes = list(meshes) if isinstance(meshes, (list, tuple)) else [meshes]
        if not self._meshes:
            raise ValueError(f"{op}: meshes must not be empty")
        for m in self._meshes:
            _check_mesh(m, op)
        dims = list(shard_dims) if isinstance(shard_dims, (list, tuple)) else [shard_dims] * len(self._meshes)
        if len(dims) != len(self._meshes):
            raise ValueError(f"{op}: shard_dims has {len(dims)} entries for {len(self._meshes)} meshes")
        if is_dataset_splitted and all(d is None for d in dims):
            raise ValueError(f"{op}: shard_dims must be set when is_dataset_splitted is True")
        self._axes = [_axis(m, d, op) for m, d in zip(self._meshes, dims)]
        self._input_keys = None if input_keys is None else list(input_keys)
        if self._input_keys is not None and len(self._meshes) > 1 and len(self._input_keys) != len(self._meshes):
            raise ValueError(f"{op}: {len(self._input_keys)} input_keys for {len(self._meshes)} meshes")
        from .. import get_rank
        rank = get_rank()
        # The rank's own mesh decides how the data is split for it (the first mesh holding it).
        mine = next((i for i, m in enumerate(self._meshes) if rank in m.process_ids), 0)
        mesh, axis = self._meshes[mine], self._axes[mine]
        self.batch_size = dataloader.batch_size
        if axis is None or is_dataset_splitted or isinstance(dataloader.batch_sampler, DistributedBatchSampler):
            self._dataloader = dataloader
            return
        if dataloader.batch_sampler is None:
            raise ValueError(f"{op}: splitting an IterableDataset's batches is not supported; split the "
                             "dataset per rank and pass is_dataset_splitted=True")
        degree = mesh.shape[axis]
        if self.batch_size is None or self.batch_size % degree:
            raise ValueError(f"{op}: the batch size {self.batch_size} must be a multiple of the "
                             f"{mesh.dim_names[axis]!r} axis size {degree}")
        coord = mesh._coord(rank) if rank in mesh.process_ids else [0] * mesh.ndim
        sampler = DistributedBatchSampler(dataloader.dataset, self.batch_size // degree, num_replicas=degree,
                                          rank=coord[axis], shuffle=getattr(dataloader.batch_sampler, "shuffle", False),
                                          drop_last=getattr(dataloader.batch_sampler, "drop_last", False))
        self._dataloader = DataLoader(
            dataloader.dataset, batch_sampler=sampler, collate_fn=dataloader.collate_fn,
            num_workers=dataloader.num_workers, prefetch_factor=dataloader.prefetch_factor,
            use_shared_memory=dataloader.use_shared_memory, timeout=dataloader.timeout,
            worker_init_fn=dataloader.worker_init_fn, persistent_workers=dataloader.persistent_workers,
            return_list=dataloader.return_list)

    def __len__(self):
        return len(self._dataloader)

    def __iter__(self):
        for batch in self._dataloader:
            yield self._dist(batch)

    def __call__(self):
        return iter(self)

    def _layout(self, i):
        i = i if len(self._meshes) > 1 else 0
        mesh, axis = self._meshes[i], self._axes[i]
        return mesh, [Shard(0) if a == axis else Replicate() for a in range(mesh.ndim)]

    def _one(self, t, i):
        if not isinstance(t, _C.Tensor):
            return t
        mesh, placements = self._layout(i)
        return dtensor_from_local(t, mesh, placements)

    def _dist(self, batch):
        if isinstance(batch, dict):
            keys = self._input_keys if self._input_keys is not None else list(batch)
            out = dict(batch)
            for i, k in enumerate(keys):
                if k not in batch:
                    raise KeyError(f"shard_dataloader: input key {k!r} is not in the batch (keys: {list(batch)})")
                out[k] = self._nested(batch[k], i)
            return out
        if isinstance(batch, (list, tuple)):
            return [self._nested(x, i) for i, x in enumerate(batch)]
        return self._nested(batch, 0)

    def _nested(self, x, i):
        if isinstance(x, (list, tuple)):
            return [self._one(y, i) for y in x]
        return self._one(x, i)


def shard_dataloader(dataloader, meshes, input_keys=None, shard_dims=None, is_dataset_splitted=False):
    """`dataloader` with batches as dist tensors on `meshes` (one mesh, or one per input),
    split along dim 0 over the mesh axis `shard_dims` (name or index; None: replicated)."""
    return ShardDataloader(dataloader, meshes, input_keys, shard_dims, is_dataset_splitted)
