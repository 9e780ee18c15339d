"""paddle.incubate.layers.tdm_sampler: layer-wise positive and negative tree samples."""
import numpy as np
import pytest

import oar
from oar import static
from oar.incubate.layers import tdm_sampler

# Paddle's documented tree: nodes 1..6, layers [1, 2] and [3, 4, 5, 6], leaves 3..6
TRAVEL = np.array([[1, 3], [1, 4], [2, 5], [2, 6]])
LAYER = np.array([[1], [2], [3], [4], [5], [6]])


def _attr(a):
    return oar.ParamAttr(initializer=oar.nn.initializer.Assign(a))


def _sample(x, neg, nodes=(2, 4), travel=TRAVEL, layer=LAYER, leaves=4, **kw):
    return tdm_sampler(oar.to_tensor(np.asarray(x, "int64").reshape(-1, 1)), list(neg), list(nodes), leaves,
                       tree_travel_attr=_attr(travel), tree_layer_attr=_attr(layer), **kw)


def test_without_negatives_is_the_path_as_documented():
    s, lab, m = _sample([0, 1, 2, 3], [0, 0], output_list=False)
    assert s.numpy().tolist() == TRAVEL.tolist()
    assert lab.numpy().tolist() == [[1, 1]] * 4 and m.numpy().tolist() == [[1, 1]] * 4
    assert s.dtype == oar.int32


def test_negatives_are_distinct_other_nodes_of_the_layer():
    x = np.array([3, 0, 2, 1, 1, 3, 0])
    s, lab, m = _sample(x, [1, 3], output_list=True, dtype="int64")
    layers = [LAYER[:2, 0], LAYER[2:, 0]]
    for li, neg in enumerate([1, 3]):
        got = s[li].numpy()
        assert got.shape == (len(x), 1 + neg) and got.dtype == np.int64
        assert (got[:, 0] == TRAVEL[x, li]).all()
        for row in got:
            negs = row[1:]
            assert len(set(negs.tolist())) == neg  # distinct
            assert row[0] not in negs and set(negs.tolist()) <= set(layers[li].tolist())
        np.testing.assert_array_equal(lab[li].numpy(), np.tile([1] + [0] * neg, (len(x), 1)))
        np.testing.assert_array_equal(m[li].numpy(), np.ones((len(x), 1 + neg)))


def test_negatives_cover_the_layer_uniformly():
    # 2 negatives of 3 others per row, many rows: each other node drawn ~2/3 of the time
    x = np.zeros(3000, "int64")  # leaf 0's path: nodes 1, 3
    s, _, _ = _sample(x, [0, 2], output_positive=False, output_list=False)
    counts = {n: int((s.numpy() == n).sum()) for n in (3, 4, 5, 6)}
    assert counts[3] == 0
    for n in (4, 5, 6):
        assert abs(counts[n] / 3000 - 2 / 3) < 0.05, counts


def test_seed_repeats_and_global_generator_varies():
    a = _sample(np.arange(4), [1, 3], seed=7, output_list=False)[0].numpy()
    b = _sample(np.arange(4), [1, 3], seed=7, output_list=False)[0].numpy()
    np.testing.assert_array_equal(a, b)
    draws = {_sample(np.arange(4), [1, 3], output_list=False)[0].numpy().tobytes() for _ in range(8)}
    assert len(draws) > 1


def test_unbalanced_tree_pads_with_mask_zero():
    travel = np.array([[1, 3], [1, 4], [2, 0]])  # leaf 2 stops at layer 0
    layer = np.array([[1], [2], [3], [4]])
    s, lab, m = _sample([2, 0], [1, 1], nodes=(2, 2), travel=travel, layer=layer, leaves=3, output_list=False)
    np.testing.assert_array_equal(s.numpy()[0], [2, 1, 0, 0])
    np.testing.assert_array_equal(lab.numpy()[0], [1, 0, 0, 0])
    np.testing.assert_array_equal(m.numpy()[0], [1, 1, 0, 0])
    np.testing.assert_array_equal(s.numpy()[1], [1, 2, 3, 4])
    np.testing.assert_array_equal(m.numpy()[1], [1, 1, 1, 1])


def test_no_positive_and_no_negative_is_an_empty_block():
    s, lab, m = _sample([0, 1], [0, 1], output_positive=False, output_list=True)
    assert s[0].shape == [2, 0] and s[1].shape == [2, 1]


def test_empty_batch():
    s, lab, m = _sample(np.zeros(0, "int64"), [1, 2], output_list=False)
    assert s.shape == [0, 5]


def test_static_program_runs_with_a_dynamic_batch(progs):
    main, startup = progs
    x = static.data("x", [None, 1], "int32")
    s, lab, m = tdm_sampler(x, [0, 0], [2, 4], 4, tree_travel_attr=_attr(TRAVEL), tree_layer_attr=_attr(LAYER),
                            output_list=False)
    exe = static.Executor()
    exe.run(startup)
    for rows in ([3, 0, 2], [1]):
        got, = exe.run(main, feed={"x": np.array(rows, "int32").reshape(-1, 1)}, fetch_list=[s])
        np.testing.assert_array_equal(got, TRAVEL[rows])


def test_static_negatives_need_a_fixed_batch(progs):
    main, startup = progs
    x = static.data("x", [None, 1], "int32")
    with pytest.raises(NotImplementedError, match="tdm_sampler: negative sampling in a static program"):
        tdm_sampler(x, [1, 1], [2, 4], 4, tree_travel_attr=_attr(TRAVEL), tree_layer_attr=_attr(LAYER))
    y = static.data("y", [5, 1], "int32")
    s, _, _ = tdm_sampler(y, [1, 2], [2, 4], 4, tree_travel_attr=_attr(TRAVEL), tree_layer_attr=_attr(LAYER),
                          output_list=False)
    exe = static.Executor()
    exe.run(startup)
    ys = np.array([0, 1, 2, 3, 0], "int32").reshape(-1, 1)
    got, = exe.run(main, feed={"x": ys, "y": ys}, fetch_list=[s])
    assert got.shape == (5, 5)
    np.testing.assert_array_equal(got[:, 0], TRAVEL[[0, 1, 2, 3, 0], 0])
    np.testing.assert_array_equal(got[:, 2], TRAVEL[[0, 1, 2, 3, 0], 1])


@pytest.mark.parametrize("kw, match", [
    (dict(neg=[0]), ".*must have one entry per layer"),
    (dict(neg=[2, 0]), "layer 0 has 2 nodes and asks for 2 negative samples"),
    (dict(neg=[0, -1]), "layer 1 has 4 nodes and asks for -1"),
    (dict(leaves=6), "leaf_node_num must be an int in \\[1, 6\\)"),
    (dict(dtype="float32"), "dtype must be 'int32' or 'int64', got 'float32'"),
    (dict(tree_dtype="int8"), "tree_dtype must be 'int32' or 'int64'"),
])
def test_bad_arguments_raise_naming_them(kw, match):
    neg = kw.pop("neg", [0, 0])
    with pytest.raises(ValueError, match="tdm_sampler: " + match):
        _sample([0], neg, **kw)


def test_bad_types_and_ids_raise():
    with pytest.raises(TypeError, match="tdm_sampler: x must be an int32/int64 tensor"):
        tdm_sampler(oar.ones([2, 1]), [0, 0], [2, 4], 4)
    with pytest.raises(TypeError, match="tdm_sampler: neg_samples_num_list must be a non-empty list"):
        _sample([0], "0,0")
    with pytest.raises(TypeError, match="tdm_sampler: seed must be an int"):
        _sample([0], [0, 0], seed=1.5)
    with pytest.raises(ValueError, match="tdm_sampler: x's item ids must be in \\[0, 4\\), got values in \\[0, 4\\]"):
        _sample([0, 4], [0, 0])
