"""Distributed checkpoints, run as each rank of a job (test_checkpoint.py): `save` lays a
state dict over a 2x2 (dp x mp) mesh on 4 processes (Shard, Replicate, Partial, uneven
splits, a dense tensor, nested optimizer-like dicts, Python values) and saves it; `load`
loads it on 2 processes into other placements and checks every rank's region against the
global values."""
import sys

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed import Partial, ProcessMesh, Replicate, Shard


def global_values():
    rng = np.random.default_rng(7)
    return {"w": rng.standard_normal((6, 8)), "b": rng.standard_normal(8).astype(np.float32),
            "emb": rng.standard_normal((5, 4)), "p": rng.standard_normal((4, 4)),
            "dense": np.arange(6, dtype=np.int64), "m": rng.standard_normal((6, 8))}


def main(mode, path):
    dist.init_parallel_env()
    rank = dist.get_rank()
    g = global_values()
    if mode == "save":
        mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
        w = dist.shard_tensor(g["w"], mesh, [Replicate(), Shard(1)])
        b = dist.shard_tensor(g["b"], mesh, [Replicate(), Shard(0)])
        emb = dist.shard_tensor(g["emb"], mesh, [Shard(0), Replicate()])  # 5 rows over 2: uneven
        p = dist.reshard(dist.shard_tensor(g["p"], mesh, [Replicate(), Replicate()]), mesh,
                         [Replicate(), Partial()])
        m = dist.shard_tensor(g["m"], mesh, [Shard(0), Shard(1)])
        sd = {"w": w, "b": b, "emb": emb, "p": p, "dense": oar.to_tensor(g["dense"]),
              "opt": {"m": m, "step": 20, "lr": 0.5}}
        dist.save_state_dict(sd, path)
        dist.save_state_dict({"w": w}, path, unique_id=7)  # a second version beside it
    else:
        mesh = ProcessMesh([0, 1], dim_names=["x"])
        sd = {"w": dist.shard_tensor(np.zeros((6, 8)), mesh, [Shard(0)]),
              "b": dist.shard_tensor(np.zeros(8, np.float32), mesh, [Replicate()]),
              "emb": dist.shard_tensor(np.zeros((5, 4)), mesh, [Shard(1)]),
              "p": dist.shard_tensor(np.zeros((4, 4)), mesh, [Shard(0)]),
              "dense": oar.zeros([6], dtype="int64"),
              "opt": {"m": dist.shard_tensor(np.zeros((6, 8)), mesh, [Replicate()]), "step": 0, "lr": 0.0}}
        dist.load_state_dict(sd, path, unique_id=0)
        for name in ("w", "b", "emb", "p", "m"):
            t = sd["opt"]["m"] if name == "m" else sd[name]
            got = dist.unshard_dtensor(t).numpy()
            np.testing.assert_array_equal(got, g[name], err_msg=name)
        np.testing.assert_array_equal(sd["dense"].numpy(), g["dense"])
        assert sd["opt"]["step"] == 20 and sd["opt"]["lr"] == 0.5, sd["opt"]
    print(f"{mode} ok {rank}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
