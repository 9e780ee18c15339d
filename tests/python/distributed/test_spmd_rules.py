"""SPMD rules checked with numbers: every case runs sharded, in one process, for every valid
input placement on a 2-process mesh and a sample on 2x2, forward and reverse, against the
unsharded op (spmd_sim.py). Backward is covered through the grad ops' own rules
(softmax_grad, layer_norm_grad, sum_to, the *_grad elementwise ops)."""
import numpy as np
import pytest

import oar
import oar.distributed as dist
from spmd_sim import Case, placement_options, placement_sets, simulate

MESH1 = dist.ProcessMesh([0, 1], dim_names=["x"])
MESH2 = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


def with_out_shape(key):
    """Local attr `key` = the process's output shape (reshape, expand, sum_to)."""
    def f(attrs, out_shapes, offsets, local):
        attrs[key] = list(out_shapes[0])
        return attrs
    return f


def embedding_local(ids, weight, vocab_offset=0):
    """The vocabulary-parallel lookup the embedding rule assumes: ids outside this process's
    rows look up zeros (their owner adds the real row)."""
    ids_np = np.asarray(ids.numpy())
    w = np.asarray(weight.numpy())
    local = ids_np - vocab_offset
    ok = (local >= 0) & (local < w.shape[0])
    out = w[np.where(ok, local, 0)] * ok[..., None]
    return oar.to_tensor(out)


def embedding_attrs(attrs, out_shapes, offsets, local):
    attrs["vocab_offset"] = offsets[1][0]
    return attrs


def ids(shape, high):
    return lambda rng: rng.integers(0, high, shape)


CASES = [
    # broadcasting n-ary
    Case("add", [(4, 6), (6,)]),
    Case("multiply", [(2, 4, 6), (4, 1)]),
    Case("maximum", [(4, 6), (4, 6)]),
    Case("where", None, make=lambda r: [r.standard_normal((4, 6)) > 0, r.standard_normal((4, 6)),
                                        r.standard_normal((6,))]),
    Case("lerp", [(4, 6), (4, 6), (6,)]),
    Case("relu_grad", [(4, 6), (4, 6)]),
    # unary
    Case("exp", [(4, 6)]),
    Case("scale", [(4, 6)], {"scale": 2.0, "bias": 1.0}),
    Case("gelu", [(2, 4, 6)]),
    Case("cast", [(4, 6)], {"dtype": "float32"}),
    # reductions
    Case("sum", [(4, 6)], {"axis": [1]}, name="sum_axis1"),
    Case("sum", [(2, 4, 6)], {"axis": []}, name="sum_all"),
    Case("mean", [(4, 6)], {"axis": [0], "keepdim": True}, name="mean_keepdim"),
    Case("max", [(4, 6)], {"axis": [1]}),
    Case("amin", [(4, 6)], {"axis": [0, 1]}),
    Case("prod", [(4, 6)], {"axis": [0]}),
    Case("var", [(4, 6)], {"axis": [1]}),
    Case("logsumexp", [(4, 6)], {"axis": [0]}),
    Case("argmax", [(4, 6)], {"axis": 1}),
    Case("cumsum", [(4, 6)], {"axis": 0}),
    Case("flip", [(4, 6)], {"axis": [1]}),
    Case("topk", [(4, 6)], {"k": 2}, nout=2),
    # softmax family, losses, norms
    Case("softmax", [(4, 6)], {"axis": -1}),
    Case("log_softmax", [(2, 4, 6)], {"axis": 1}),
    Case("softmax_grad", [(4, 6), (4, 6)], {"axis": 0}),
    Case("cross_entropy", None, {"reduction": "none"}, make=lambda r: [r.standard_normal((4, 6)),
                                                                      r.integers(0, 6, (4, 1)), None],
         name="cross_entropy_none", grid=[0, 1]),
    Case("cross_entropy", None, {"reduction": "sum"}, make=lambda r: [r.standard_normal((4, 6)),
                                                                     r.integers(0, 6, (4,)), None],
         name="cross_entropy_sum", grid=[0, 1]),
    Case("cross_entropy", None, {"reduction": "mean"}, make=lambda r: [r.standard_normal((4, 6)),
                                                                      r.integers(0, 6, (4, 1)), None],
         name="cross_entropy_mean", grid=[0, 1]),
    Case("layer_norm", None, {"begin_norm_axis": 2}, make=lambda r: [r.standard_normal((2, 4, 6)),
                                                                     r.standard_normal(6), r.standard_normal(6)],
         nout=3),
    Case("layer_norm_grad", None, {"begin_norm_axis": 1}, nout=3,
         make=lambda r: [r.standard_normal((4, 6)), r.standard_normal(6), r.standard_normal(4),
                         np.abs(r.standard_normal(4)) + 0.5, r.standard_normal((4, 6))]),
    # contractions
    Case("matmul", [(4, 6), (6, 8)]),
    Case("matmul", [(2, 4, 6), (8, 6)], {"transpose_y": True}, name="matmul_batch_ty"),
    Case("matmul", [(6, 4), (2, 6, 8)], {"transpose_x": True}, name="matmul_tx_broadcast"),
    Case("matmul", [(6,), (6, 4)], name="matmul_vec"),
    Case("embedding", None, fn=embedding_local, rule="embedding", local_attrs=embedding_attrs,
         make=lambda r: [r.integers(0, 8, (2, 4)), r.standard_normal((8, 6))]),
    Case("scaled_dot_product_attention", [(2, 4, 2, 4), (2, 6, 2, 4), (2, 6, 2, 4)], nout=2,
                  make=lambda r: [r.standard_normal((2, 4, 2, 4)), r.standard_normal((2, 6, 2, 4)),
                         r.standard_normal((2, 6, 2, 4)), r.standard_normal((4, 6))], name="sdpa_mask"),
    Case("scaled_dot_product_attention", None, {"is_causal": True}, nout=2,
         make=lambda r: [r.standard_normal((2, 4, 2, 4)), r.standard_normal((2, 4, 2, 4)),
                         r.standard_normal((2, 4, 2, 4)), None], name="sdpa_causal"),
    Case("conv2d", [(2, 4, 5, 5), (4, 4, 3, 3)], {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1]}),
    # reshape family and transpose
    Case("reshape", [(4, 6)], {"shape": [2, 2, 6]}, local_attrs=with_out_shape("shape")),
    Case("reshape", [(2, 4, 3)], {"shape": [8, 3]}, local_attrs=with_out_shape("shape"), name="reshape_merge"),
    Case("flatten", [(2, 4, 3)], {"start_axis": 0, "stop_axis": 1}),
    Case("squeeze", [(4, 1, 6)], {"axis": [1]}),
    # No axes: every global size-1 dim, which the local call must name (a shard of size 1
    # is not squeezed).
    Case("squeeze", [(3, 1, 6)], {"axis": []}, name="squeeze_all",
         local_attrs=lambda attrs, out_shapes, offsets, local: {**attrs, "axis": [1]}),
    Case("unsqueeze", [(4, 6)], {"axis": [0, 2]}),
    Case("transpose", [(2, 4, 6)], {"perm": [2, 0, 1]}),
    # join / select
    Case("concat", [(4, 6), (2, 6)], {"axis": 0}, listed=True),
    Case("stack", [(4, 6), (4, 6)], {"axis": 1}, listed=True),
    Case("split", [(4, 6)], {"num_or_sections": [2, 4], "axis": 1}, nout=2),
    Case("split_with_num", [(4, 6)], {"num": 2, "axis": 0}, nout=2),
    Case("slice", [(4, 6)], {"axes": [1], "starts": [1], "ends": [5]}),
    Case("gather", None, {"axis": 0}, make=lambda r: [r.standard_normal((5, 6)), r.integers(0, 5, (4,))]),
    Case("index_select", None, {"axis": 1}, make=lambda r: [r.standard_normal((4, 6)), r.integers(0, 6, (4,))]),
    Case("expand", [(4, 1)], {"shape": [2, 4, 6]}, local_attrs=with_out_shape("shape")),
    Case("tile", [(4, 6)], {"repeat_times": [2, 1]}),
    Case("sum_to", [(2, 4, 6)], {"shape": [1, 6]}, local_attrs=with_out_shape("shape")),
]
CASES = [c for c in CASES if c.make or c.shapes]
for c in CASES:
    if c.make is None:
        c.make = normal(*c.shapes)


def case_id(c):
    return c.name


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_every_placement_on_2_processes(case):
    arrays = case.inputs()
    for placements in placement_sets(case, MESH1, arrays, limit=80):
        simulate(case, MESH1, placements)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_sampled_placements_on_2x2(case):
    arrays = case.inputs()
    for placements in placement_sets(case, MESH2, arrays, limit=12, seed=1):
        simulate(case, MESH2, placements)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_reverse_every_output_placement(case):
    """Reverse rule: from each output layout (Shard/Replicate), the input layouts it derives
    must reproduce the op, with the outputs laid out as it says."""
    arrays = case.inputs()
    ref = case.run(arrays, case.attrs)
    replicated = [None if a is None else [dist.Replicate()] for a in arrays]
    tried = 0
    for out0 in placement_options(ref[0].ndim, 1):
        outs = [out0 if r.shape == ref[0].shape else [dist.Replicate()] for r in ref]
        simulate(case, MESH1, replicated, reverse_out=outs)
        tried += 1
    assert tried >= 1


def test_sharded_splits_really_happen():
    """Guards the simulator against a rule that always answers 'replicate'."""
    fwd_in, fwd_out = dist.infer_spmd("matmul", MESH1, [((4, 6), [dist.Shard(1)]), ((6, 8), [dist.Replicate()])])
    assert fwd_in[1] == [dist.Shard(0)] and fwd_out[0] == [dist.Partial()]
    _, out = dist.infer_spmd("softmax", MESH2, [((4, 6), [dist.Shard(0), dist.Shard(1)])], {"axis": 1})
    assert out[0] == [dist.Shard(0), dist.Replicate()]


@pytest.mark.parametrize("case, placements", [
    (Case("softmax", [(4, 6)], {"axis": 1}, rule="unary"), [dist.Shard(1)]),
    (Case("cumsum", [(4, 6)], {"axis": 0}, rule="unary"), [dist.Shard(0)]),
    (Case("transpose", [(4, 6)], {"perm": [1, 0]}, rule="unary"), [dist.Shard(0)]),
    (Case("sum", [(4, 6)], {"axis": [1]}, fn=lambda x, **kw: oar.logsumexp(x, **kw)), [dist.Shard(1)]),
], ids=["softmax_as_unary", "cumsum_as_unary", "transpose_as_unary", "logsumexp_as_sum"])
def test_the_simulator_catches_wrong_rules(case, placements):
    """A wrong rule (another op's) must fail the check, or passing it would mean nothing."""
    case.make = normal(*case.shapes)
    if not isinstance(placements[0], list):
        placements = [placements]
    with pytest.raises(AssertionError):
        simulate(case, MESH1, placements)


def _rms_norm(x, w, epsilon=1e-6):
    inv = oar.rsqrt((x * x).mean(axis=-1, keepdim=True) + epsilon)
    return x * inv * w, inv.squeeze(-1)


def _adam(param, grad, m, v, lr, beta1=0.9, beta2=0.99, eps=1e-8):
    """One Adam step (bias correction folded into lr): the update the optimizer rule covers."""
    m2 = m * beta1 + grad * (1 - beta1)
    v2 = v * beta2 + grad * grad * (1 - beta2)
    return param - lr * m2 / (oar.sqrt(v2) + eps), m2, v2


RULE_ONLY_CASES = [
    Case("rms_norm", [(4, 6), (6,)], rule="rms_norm", fn=_rms_norm, nout=2),
    Case("adam", None, rule="optimizer", fn=_adam, nout=3,
         make=lambda r: [r.standard_normal((4, 6)), r.standard_normal((4, 6)), r.standard_normal((4, 6)),
                         np.abs(r.standard_normal((4, 6))), np.array(0.1)]),
]


@pytest.mark.parametrize("case", RULE_ONLY_CASES, ids=case_id)
def test_rules_without_an_op_definition(case):
    """rms_norm and the optimizer update have rules but no op definition yet (the update is a
    C++ call): their rules are checked against a composition of ops."""
    arrays = case.inputs()
    for placements in placement_sets(case, MESH1, arrays, limit=60):
        simulate(case, MESH1, placements)
    for placements in placement_sets(case, MESH2, arrays, limit=12, seed=2):
        simulate(case, MESH2, placements)


PARTIAL_CASES = [
    Case("add", [(4, 6), (4, 6)]), Case("subtract", [(4, 6), (6,)]), Case("neg", [(4, 6)]),
    Case("scale", [(4, 6)], {"scale": 3.0}, name="scale_no_bias"),
    Case("scale", [(4, 6)], {"scale": 3.0, "bias": 1.0}, name="scale_bias"),
    Case("multiply", [(4, 6), (4, 6)]), Case("exp", [(4, 6)]), Case("matmul", [(4, 6), (6, 8)]),
    Case("sum", [(4, 6)], {"axis": [1]}),
    Case("reshape", [(4, 6)], {"shape": [2, 2, 6]}, local_attrs=with_out_shape("shape")),
    Case("transpose", [(4, 6)], {"perm": [1, 0]}),
    Case("concat", [(4, 6), (2, 6)], {"axis": 0}, listed=True),
    Case("split_with_num", [(4, 6)], {"num": 2, "axis": 1}, nout=2),
    Case("slice", [(4, 6)], {"axes": [0], "starts": [1], "ends": [3]}),
]
for c in PARTIAL_CASES:
    c.make = normal(*c.shapes)


@pytest.mark.parametrize("case", PARTIAL_CASES, ids=case_id)
def test_partial_inputs(case):
    """Partial(sum) inputs, spread at random over the processes: linear ops keep them Partial,
    the others ask for them whole; either way the result must be right."""
    n = len(case.shapes)
    simulate(case, MESH1, [[dist.Partial()]] * n)
    simulate(case, MESH2, [[dist.Partial(), dist.Shard(0)]] * n)
    simulate(case, MESH2, [[dist.Replicate(), dist.Partial()]] * n)
    _, outs = dist.infer_spmd(case.op, MESH1, [(s, [dist.Partial()]) for s in case.shapes], case.attrs,
                              num_outputs=case.nout)
    linear = case.name in {"add", "subtract", "neg", "scale_no_bias", "reshape", "transpose", "concat",
                           "split_with_num", "slice"}
    assert (outs[0] == [dist.Partial()]) == linear, outs
