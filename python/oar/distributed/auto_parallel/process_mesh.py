"""ProcessMesh (Paddle's dist.ProcessMesh): an N-d array of process ids with a name per axis.
Validation lives in the C++ ProcessMesh (distributed/mesh/process_mesh.h), so both sides reject
the same meshes with the same messages."""
import numpy as np

from ... import _C

__all__ = ["ProcessMesh", "DistAttr", "set_mesh", "get_mesh"]


class ProcessMesh:
    """ProcessMesh(mesh, dim_names=None): `mesh` is a nested list / array of process ids
    (ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])); or shape= and process_ids=."""

    def __init__(self, mesh=None, dim_names=None, shape=None, process_ids=None):
        if mesh is None:
            if shape is None or process_ids is None:
                raise ValueError("ProcessMesh: give mesh, or both shape and process_ids")
            arr = np.asarray(process_ids).reshape(shape)
        else:
            arr = np.asarray(mesh)
        if arr.ndim == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"ProcessMesh: mesh must be a (nested) list of integer process ids, got {mesh!r}")
        names = list(dim_names) if dim_names is not None else []
        self._shape = [int(s) for s in arr.shape]
        self._process_ids = [int(i) for i in arr.reshape(-1)]
        self._dim_names = list(_C.dist.check_mesh(self._shape, self._process_ids, names))
        self._mesh = arr.astype(np.int64)

    @property
    def shape(self):
        return list(self._shape)

    @property
    def process_ids(self):
        return list(self._process_ids)

    @property
    def dim_names(self):
        return list(self._dim_names)

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def mesh(self):
        return self._mesh.copy()

    def get_dim_size(self, dim):
        """Size of axis `dim` (a name or an index)."""
        return self._shape[self._axis(dim)]

    def _axis(self, dim):
        if isinstance(dim, str):
            if dim not in self._dim_names:
                raise ValueError(f"ProcessMesh: no axis named {dim!r} (dim_names: {self._dim_names})")
            return self._dim_names.index(dim)
        if not -self.ndim <= dim < self.ndim:
            raise IndexError(f"ProcessMesh: axis {dim} out of range for a {self.ndim}-d mesh")
        return dim % self.ndim

    def get_mesh_with_dim(self, dim_name, index=None):
        """The mesh with axis `dim_name` moved first; with `index`, its sub-mesh at that index."""
        axis = self._axis(dim_name)
        order = [axis] + [i for i in range(self.ndim) if i != axis]
        names = [self._dim_names[i] for i in order]
        arr = self._mesh.transpose(order)
        if index is None:
            return ProcessMesh(arr, names)
        if arr.ndim == 1:
            raise ValueError("ProcessMesh.get_mesh_with_dim: a 1-d mesh has no sub-mesh")
        return ProcessMesh(arr[index], names[1:])

    def get_submesh_with_dim(self, dim_name, index=None):
        """The 1-d sub-mesh along axis `dim_name` that holds this process (the other axes
        fixed at its coordinates; None when the process is not in the mesh), as Paddle's.
        With `index`: the sub-mesh at that index of get_mesh_with_dim(dim_name)."""
        if index is not None:
            return self.get_mesh_with_dim(dim_name, index)
        from ..collective import get_rank
        axis = self._axis(dim_name)
        me = get_rank()
        if me not in self._process_ids:
            return None
        coord = self._coord(me)
        coord[axis] = slice(None)
        return ProcessMesh(self._mesh[tuple(coord)], [self._dim_names[axis]])

    def __getitem__(self, index):
        sub = self._mesh[index]
        if np.ndim(sub) == 0:
            return ProcessMesh([int(sub)], [self._dim_names[-1]])
        kept = [n for n, s in zip(self._dim_names, _kept_axes(self._mesh.shape, index)) if s]
        return ProcessMesh(sub, kept)

    def _coord(self, process_id):
        """`process_id`'s index along each mesh axis (it must be in the mesh)."""
        return [int(c[0]) for c in np.nonzero(self.mesh == process_id)]

    def __contains__(self, process_id):
        return process_id in self._process_ids

    def __eq__(self, other):
        return (isinstance(other, ProcessMesh) and self._shape == other._shape
                and self._process_ids == other._process_ids and self._dim_names == other._dim_names)

    def __hash__(self):
        return hash((tuple(self._shape), tuple(self._process_ids), tuple(self._dim_names)))

    def __repr__(self):
        return f"ProcessMesh(shape={self._shape}, process_ids={self._process_ids}, dim_names={self._dim_names})"


class DistAttr:
    """Paddle's dist.DistAttr(mesh, sharding_specs), the older form of a layout: one entry per
    tensor dimension, the name of the mesh axis it is split over or None (replicated). Each
    mesh axis splits at most one dimension. `dims_mapping` gives the axes' indices (-1 for
    None) and `placements` the same layout as Shard/Replicate per mesh axis."""

    def __init__(self, mesh, sharding_specs):
        if not isinstance(mesh, ProcessMesh):
            raise TypeError(f"DistAttr: mesh must be a ProcessMesh, got {type(mesh).__name__}")
        if not isinstance(sharding_specs, (list, tuple)):
            raise TypeError(f"DistAttr: sharding_specs must be a list of mesh axis names or None, got "
                            f"{type(sharding_specs).__name__}")
        specs = list(sharding_specs)
        for s in specs:
            if s is not None and not isinstance(s, str):
                raise TypeError(f"DistAttr: each sharding spec must be a mesh axis name or None, got {s!r}")
            if s is not None and s not in mesh.dim_names:
                raise ValueError(f"DistAttr: sharding spec {s!r} is not an axis of the mesh (dim_names: "
                                 f"{mesh.dim_names})")
        named = [s for s in specs if s is not None]
        if len(named) != len(set(named)):
            raise ValueError(f"DistAttr: a mesh axis may split one tensor dimension only, got {specs}")
        self.process_mesh = mesh
        self.sharding_specs = specs

    @property
    def dims_mapping(self):
        return [-1 if s is None else self.process_mesh.dim_names.index(s) for s in self.sharding_specs]

    @property
    def placements(self):
        from .placement_type import Replicate, Shard
        out = [Replicate() for _ in range(self.process_mesh.ndim)]
        for dim, axis in enumerate(self.dims_mapping):
            if axis >= 0:
                out[axis] = Shard(dim)
        return out

    def __eq__(self, other):
        return (isinstance(other, DistAttr) and self.process_mesh == other.process_mesh
                and self.sharding_specs == other.sharding_specs)

    __hash__ = None

    def __repr__(self):
        return (f"DistAttr(process_mesh={self.process_mesh!r}, sharding_specs={self.sharding_specs}, "
                f"dims_mapping={self.dims_mapping})")


def _kept_axes(shape, index):
    """Which axes survive numpy indexing by `index` (ints drop an axis, slices keep it)."""
    index = index if isinstance(index, tuple) else (index,)
    kept = []
    for i in range(len(shape)):
        kept.append(not (i < len(index) and isinstance(index[i], (int, np.integer))))
    return kept


_global_mesh = None


def set_mesh(mesh):
    """Sets the mesh that auto-parallel APIs use when none is given."""
    global _global_mesh
    if mesh is not None and not isinstance(mesh, ProcessMesh):
        raise TypeError(f"set_mesh: expected a ProcessMesh, got {type(mesh).__name__}")
    _global_mesh = mesh


def get_mesh():
    """The mesh set by set_mesh (None when unset)."""
    return _global_mesh
