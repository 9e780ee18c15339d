"""Every op whose rule is derived from its shape behaviour (unary, elementwise, reduction,
softmax, along_axis, arg_reduction), read from the op definitions, run sharded through its
rule for every input placement on a 2-process mesh and from every output placement
(reverse), and a sample on 2x2, against the unsharded op (spmd_sim.py). Ops with hand-written rules have their
cases in test_spmd_rules.py."""
import importlib.util
import pathlib

import numpy as np
import pytest

import oar.distributed as dist
from spmd_sim import Case, placement_options, placement_sets, simulate

OPS_DIR = pathlib.Path(__file__).resolve().parents[3] / "paddle_core" / "ops"
MESH = dist.ProcessMesh([0, 1])
MESH2 = dist.ProcessMesh([[0, 1], [2, 3]])
SHAPE = {"unary": [(4, 6)], "softmax": [(4, 6)], "along_axis": [(4, 6)], "arg_reduction": [(4, 6)],
         "reduction": [(4, 6)]}
# Attributes an op needs beyond its defaults, or inputs it needs in a domain.
ATTRS = {"flip": {"axis": [1]}, "topk": {"k": 2}, "roll": {"shifts": [1], "axis": [1]},
         "sum": {"axis": [1]}, "mean": {"axis": [0]}, "prod": {"axis": [1]}, "max": {"axis": [1]},
         "min": {"axis": [0]}, "amax": {"axis": [1]}, "amin": {"axis": [0]}, "var": {"axis": [1]},
         "std": {"axis": [0]}, "logsumexp": {"axis": [1]}, "p_norm": {"axis": [1]},
         "all": {"axis": [1]}, "any": {"axis": [0]}, "full_like": {"fill_value": 2.0},
         "polygamma": {"n": 1}, "cast": {"dtype": "float32"},
         "nan_to_num": {"nan": 0.0, "posinf": 1e3, "neginf": -1e3}}
# Elementwise ops that take their inputs in one shape (no broadcasting), as the _grad ops.
SHAPES = {"sigmoid_cross_entropy_with_logits": [(4, 6), (4, 6)]}
BOOL_INPUTS = {"logical_and", "logical_or", "logical_xor", "logical_not", "all", "any"}
POSITIVE = {"polygamma", "lgamma", "digamma"}
INT_INPUTS = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
              "bitwise_right_shift", "gcd"}  # int64; a shift's counts in [-2, 66)


def _load_ops():
    spec = importlib.util.spec_from_file_location("op_schema", OPS_DIR / "generator" / "op_schema.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.load_ops(sorted(str(p) for p in OPS_DIR.glob("*.yaml")))


def _case(op):
    n = len(op.tensor_args)
    if op.name in SHAPES:
        shapes = SHAPES[op.name]
    elif op.name.endswith("_grad"):  # (out or x, grad_out): no broadcasting
        shapes = [(4, 6)] * n
    elif op.spmd == "elementwise":
        shapes = [(4, 6), (6,), (4, 1)][:n]
    else:
        shapes = SHAPE[op.spmd] * n
    make_bool = op.name in BOOL_INPUTS

    def make(rng):
        if make_bool:
            return [rng.standard_normal(s) > 0 for s in shapes]
        if op.name in INT_INPUTS:
            xs = [rng.integers(-2**40, 2**40, s) for s in shapes]
            if "shift" in op.name:
                xs[1] = rng.integers(-2, 66, shapes[1])
            return xs
        xs = [rng.standard_normal(s) for s in shapes]
        return [np.abs(x) + 0.5 for x in xs] if op.name in POSITIVE else xs
    nout = len(op.outputs)
    return Case(op.name, shapes, ATTRS.get(op.name, {}), make=make, nout=nout)


OPS = [op for op in _load_ops() if op.spmd in SHAPE or op.spmd == "elementwise"]
MISSING_ATTRS = [op.name for op in OPS
                 if any(a.default is None for a in op.attrs) and op.name not in ATTRS]


def test_every_derived_rule_op_is_simulated():
    assert not MISSING_ATTRS, f"give these ops their attributes in ATTRS: {MISSING_ATTRS}"
    assert len(OPS) >= 130


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_sharded_op_matches_unsharded(op):
    case = _case(op)
    arrays = case.inputs()
    for placements in placement_sets(case, MESH, arrays, limit=60):
        simulate(case, MESH, placements)
    ref = case.run(arrays, case.attrs)
    for out0 in placement_options(ref[0].ndim, 1):
        outs = [out0 if r.shape == ref[0].shape else [dist.Replicate()] for r in ref]
        simulate(case, MESH, [[dist.Replicate()]] * len(arrays), reverse_out=outs)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_sharded_op_matches_unsharded_on_2x2(op):
    case = _case(op)
    for placements in placement_sets(case, MESH2, case.inputs(), limit=6, seed=3):
        simulate(case, MESH2, placements)
