"""Distributed checkpoints: paddle.distributed.save_state_dict / load_state_dict.

Layout of a checkpoint folder (Note [Distributed checkpoints] in docs/notes/distributed.md):
- `{rank}_{uid}.distcp`: what rank `rank` saved, an oar.save file (safetensors, checksummed,
  written atomically) of the pieces it owns, keyed `name@offset` (the piece's offset in the
  global tensor, e.g. `w@0,4`);
- `{uid}.metadata`: JSON written by the coordinator rank after every rank has written its
  file: for each key its global shape, dtype and the pieces (file, offset, shape) that tile
  it; Python values of the state dict are stored inline. Written last, atomically: it is the
  checkpoint's commit marker, so a save cut short leaves no metadata and is never loaded.

Saving writes each element once: a dist tensor's piece is written by the ranks at coordinate
0 of every mesh axis it is not sharded on (Partial axes are reduced first), a dense tensor by
the coordinator. Loading needs no communication beyond a barrier: each rank reads, from the
pieces that overlap it, the region its target tensor holds under its own mesh and placements,
so a checkpoint loads into another mesh, other placements, another number of processes, or
one process with dense tensors."""
import json
import os
import re

import numpy as np

from .. import _C
from ..framework_io import load as _load_file
from ..framework_io import _write_atomic
from ..framework_io import save as _save_file

__all__ = ["save_state_dict", "load_state_dict"]

_META = re.compile(r"^(\d+)\.metadata$")


def _oar():
    import oar
    return oar


def _flatten(state_dict, op, prefix="", out=None):
    """Nested dicts flattened with '.'-joined keys (as Paddle's optimizer state dicts nest):
    {flat name: (the dict holding it, its key there)}."""
    out = {} if out is None else out
    if not isinstance(state_dict, dict):
        raise TypeError(f"{op}: state_dict must be a dict of Tensors, got {type(state_dict).__name__}")
    for k, v in state_dict.items():
        if not isinstance(k, str):
            raise TypeError(f"{op}: state_dict keys must be str, got {k!r}")
        name = prefix + k
        if isinstance(v, dict):
            _flatten(v, op, name + ".", out)
        else:
            out[name] = (state_dict, k)
    return out


def _group_info(group, op):
    from .collective import get_rank, get_world_size, is_initialized
    if group is None and not is_initialized():
        return None, 0, 1
    return group, get_rank(group), get_world_size(group)


def _gather(obj, group, world):
    if world == 1:
        return [obj]
    from .communication import all_gather_object
    out = []
    all_gather_object(out, obj, group)
    return out


def _barrier(group, world):
    if world > 1:
        from .communication import barrier
        barrier(group)


def _pieces_to_write(t, rank, coordinator):
    """(local value, offset) pairs this rank writes for tensor `t`."""
    if not t.is_dist():
        return [(t, [0] * len(t.shape))] if rank == coordinator else []
    mesh, placements = t.process_mesh, t.placements
    if any(p.is_partial() for p in placements):  # reduce first: a piece is then one value
        from .auto_parallel.api import reshard
        from .auto_parallel.placement_type import Replicate
        t = reshard(t, mesh, [Replicate() if p.is_partial() else p for p in placements])
        placements = t.placements
    if rank not in mesh.process_ids:
        return []
    coord = mesh._coord(rank)
    if any(not p.is_shard() and c != 0 for p, c in zip(placements, coord)):
        return []  # a replica of a piece that coordinate 0 writes
    from .auto_parallel.placement_type import _encode_all
    _, offset = _C.dist.local_shard(list(t.shape), mesh.shape, mesh.process_ids,
                                    _encode_all(placements, "save_state_dict"), rank)
    local = t._local_value()
    if 0 in list(local.shape):
        return []  # an empty shard (uneven split): nothing to write
    return [(local, [int(o) for o in offset])]


def _next_uid(path):
    uids = [int(m.group(1)) for f in os.listdir(path) if (m := _META.match(f))]
    return max(uids) + 1 if uids else 0


def save_state_dict(state_dict, path, process_group=None, coordinator_rank=0, unique_id=None, async_save=False):
    """Saves `state_dict` (dict of dist or dense Tensors, nested dicts, Python scalars) into the
    folder `path`, every rank its pieces. A collective: every rank of the group calls it.
    unique_id names the version (default: one more than the newest in `path`)."""
    op = "save_state_dict"
    if async_save:
        raise NotImplementedError(f"{op}: async_save=True is not supported; the save is synchronous")
    flat = _flatten(state_dict, op)
    group, rank, world = _group_info(process_group, op)
    if not isinstance(coordinator_rank, int) or not 0 <= coordinator_rank < world:
        raise ValueError(f"{op}: coordinator_rank must be a rank of the group (0..{world - 1}), "
                         f"got {coordinator_rank!r}")
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{op}: '{path}' exists and is not a folder")
    os.makedirs(path, exist_ok=True)
    # Every rank must use the same id: the coordinator picks it.
    uid = _gather(unique_id if unique_id is not None else (_next_uid(path) if rank == coordinator_rank else None),
                  group, world)[coordinator_rank]
    if not isinstance(uid, int) or isinstance(uid, bool) or uid < 0:
        raise ValueError(f"{op}: unique_id must be a non-negative int, got {uid!r}")
    Tensor = _C.Tensor
    pieces, tensors, values = {}, {}, {}
    for name in sorted(flat):
        holder, key = flat[name]
        v = holder[key]
        if isinstance(v, Tensor):
            tensors[name] = {"shape": [int(s) for s in (v._global_shape if v.is_dist() else v.shape)],
                             "dtype": str(v.dtype).replace("paddle.", "")}
            for local, offset in _pieces_to_write(v, rank, coordinator_rank):
                pieces[f"{name}@{','.join(map(str, offset))}"] = local
        elif v is None or isinstance(v, (bool, int, float, str)):
            values[name] = v
        else:
            raise TypeError(f"{op}: state_dict['{name}'] is a {type(v).__name__}; values must be Tensors, "
                            "nested dicts or Python scalars")
    fname = f"{rank}_{uid}.distcp"
    if pieces:
        _save_file(pieces, os.path.join(path, fname))
    written = {k: (fname, [int(s) for s in t.shape]) for k, t in pieces.items()}
    everyone = _gather(written, group, world)  # returns once every rank has written its file
    if rank == coordinator_rank:
        for name, info in tensors.items():
            info["pieces"] = []
        for per_rank in everyone:
            for key, (f, shape) in per_rank.items():
                name, offset = key.rsplit("@", 1)
                tensors[name]["pieces"].append({"file": f, "key": key, "shape": shape,
                                                "offset": [int(o) for o in offset.split(",") if o != ""]})
        meta = json.dumps({"format": "oar.distcp.v1", "unique_id": uid, "tensors": tensors,
                           "values": values}, sort_keys=True, indent=1).encode()
        _write_atomic(os.path.join(path, f"{uid}.metadata"), [meta])
    _barrier(group, world)  # the checkpoint is committed on every rank when this returns


def _is_ints(v):
    return isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v)


def _check_metadata(meta):
    if meta.get("format") != "oar.distcp.v1" or not isinstance(meta.get("tensors"), dict) \
            or not isinstance(meta.get("values", {}), dict):
        raise ValueError("unknown format")
    for name, info in meta["tensors"].items():
        ok = isinstance(info, dict) and _is_ints(info.get("shape")) and isinstance(info.get("dtype"), str) \
            and isinstance(info.get("pieces"), list)
        for p in info.get("pieces", []) if ok else []:
            ok = ok and isinstance(p, dict) and isinstance(p.get("file"), str) and isinstance(p.get("key"), str) \
                and _is_ints(p.get("shape")) and _is_ints(p.get("offset")) \
                and len(p["shape"]) == len(p["offset"]) == len(info["shape"])
        if not ok:
            raise ValueError(f"malformed entry for '{name}'")


def _read_metadata(path, unique_id, op):
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{op}: checkpoint folder '{path}' does not exist")
    uids = sorted(int(m.group(1)) for f in os.listdir(path) if (m := _META.match(f)))
    if unique_id is None:
        if not uids:
            raise FileNotFoundError(f"{op}: no committed checkpoint in '{path}' (no <id>.metadata file; "
                                    "a save that did not finish writes none)")
        unique_id = uids[-1]
    elif unique_id not in uids:
        raise FileNotFoundError(f"{op}: no committed checkpoint with unique_id={unique_id} in '{path}' "
                                f"(committed ids: {uids})")
    mpath = os.path.join(path, f"{unique_id}.metadata")
    try:
        with open(mpath, "rb") as f:
            meta = json.loads(f.read())
        _check_metadata(meta)
    except (ValueError, UnicodeDecodeError, AttributeError) as e:
        raise ValueError(f"{op}: '{mpath}' is not a valid checkpoint metadata file ({e})") from None
    return meta


def _target_region(t, rank):
    """(offset, local shape, partial-identity) of the region `t` holds on this rank, or None
    when this rank holds nothing of it."""
    if not t.is_dist():
        return [0] * len(t.shape), [int(s) for s in t.shape], None
    mesh, placements = t.process_mesh, t.placements
    if rank not in mesh.process_ids:
        return None
    from .auto_parallel.placement_type import _encode_all
    local_shape, offset = _C.dist.local_shard(list(t._global_shape), mesh.shape, mesh.process_ids,
                                              _encode_all(placements, "load_state_dict"), rank)
    coord = mesh._coord(rank)
    identity = None
    for p, c in zip(placements, coord):
        if p.is_partial() and c != 0:  # the value lives at coordinate 0; the rest reduce to nothing
            identity = 1 if p.reduce_type() == 3 else 0
    return [int(o) for o in offset], [int(s) for s in local_shape], identity


def _assemble(name, info, offset, shape, dtype, path, files, op):
    oar = _oar()
    buf = oar.zeros(shape, dtype=dtype)
    covered = np.zeros(shape, dtype=bool)
    for piece in info["pieces"]:
        p_off, p_shape = piece["offset"], piece["shape"]
        lo = [max(a, b) for a, b in zip(offset, p_off)]
        hi = [min(a + n, b + m) for a, n, b, m in zip(offset, shape, p_off, p_shape)]
        if any(h <= lo_ for lo_, h in zip(lo, hi)) and shape:
            continue
        fname = piece["file"]
        if fname not in files:
            fpath = os.path.join(path, os.path.basename(fname))
            if not os.path.exists(fpath):
                raise FileNotFoundError(f"{op}: checkpoint file '{fpath}' (pieces of '{name}') is missing")
            files[fname] = _load_file(fpath)
        data = files[fname].get(piece["key"]) if isinstance(files[fname], dict) else None
        if data is None or [int(s) for s in data.shape] != list(p_shape):
            raise ValueError(f"{op}: checkpoint file '{fname}' has no piece '{piece['key']}' of shape {p_shape}")
        src = tuple(slice(a - b, c - b) for a, b, c in zip(lo, p_off, hi))
        dst = tuple(slice(a - b, c - b) for a, b, c in zip(lo, offset, hi))
        if shape:
            buf[dst] = data[src].astype(dtype)
            covered[dst] = True
        else:
            buf = data.astype(dtype)
            covered[...] = True
    if not covered.all():
        miss = np.argwhere(~covered)[0].tolist() if covered.ndim else []
        raise ValueError(f"{op}: the checkpoint's pieces of '{name}' do not cover this rank's region "
                         f"(offset {offset}, shape {shape}); element {[o + m for o, m in zip(offset, miss)]} "
                         "is in no piece")
    return buf


def load_state_dict(state_dict, path, process_group=None, coordinator_rank=0, unique_id=None, offload=False,
                    mw_name_compatibility=True):
    """Loads the checkpoint in `path` (the newest committed one, or `unique_id`) into the
    Tensors of `state_dict` in place: each takes its own layout's region, whatever layout the
    checkpoint was saved from. Keys missing from the checkpoint, or shapes/dtypes that differ,
    are errors naming them. Python values are replaced."""
    op = "load_state_dict"
    flat = _flatten(state_dict, op)
    group, rank, world = _group_info(process_group, op)
    meta = _read_metadata(os.fspath(path), unique_id, op)
    saved, values = meta["tensors"], meta.get("values", {})
    missing = sorted(k for k in flat if k not in saved and k not in values)
    if missing:
        raise KeyError(f"{op}: keys not in the checkpoint '{path}': {missing}")
    Tensor = _C.Tensor
    files = {}
    for name in sorted(flat):
        holder, key = flat[name]
        t = holder[key]
        if name in values:
            holder[key] = values[name]
            continue
        info = saved[name]
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: state_dict['{name}'] must be a Tensor to load into, got {type(t).__name__}")
        gshape = [int(s) for s in (t._global_shape if t.is_dist() else t.shape)]
        if gshape != info["shape"]:
            raise ValueError(f"{op}: '{name}' has shape {gshape} but the checkpoint's is {info['shape']}")
        dtype = str(t.dtype).replace("paddle.", "")
        if dtype != info["dtype"]:
            raise ValueError(f"{op}: '{name}' has dtype {dtype} but the checkpoint's is {info['dtype']}")
        region = _target_region(t, rank)
        if region is None:
            continue
        offset, shape, identity = region
        if identity is not None:
            value = _oar().full(shape, identity, dtype=dtype)
        else:
            value = _assemble(name, info, offset, shape, dtype, os.fspath(path), files, op)
        if t.is_dist():
            _C.dist.set_local_value(t, value)
        else:
            t.set_value(value)
    _barrier(group, world)

