"""The global program's annotations (Note [Static auto-parallel passes]): the Python side of
the contract with DistModel's tracer. The passes themselves are tested in C++
(tests/cpp/distributed/test_static_passes.cc)."""
import pytest

import oar
from oar import _C

MESH = ([2], [0, 1], ["mp"])
SHARD1 = [(1, 1, 0)]
REPLICATE = [(0, -1, 0)]


def test_placements_attr_text_and_errors():
    assert (_C.dist.placements_attr([2, 2], [0, 1, 2, 3], ["dp", "mp"], [(1, 0, 0), (2, -1, 4)]) ==
            '#dist.placements<[Shard(0), Partial(avg)], mesh = [2, 2], ids = [0, 1, 2, 3], names = ["dp", "mp"]>')
    with pytest.raises(ValueError, match="1 placements for a mesh of rank 2"):
        _C.dist.placements_attr([2, 2], [0, 1, 2, 3], ["dp", "mp"], SHARD1)
    with pytest.raises(ValueError, match="Shard\\(-1\\) has a negative dim"):
        _C.dist.placements_attr(*MESH, [(1, -1, 0)])
    with pytest.raises(ValueError, match="appears more than once"):
        _C.dist.placements_attr([2], [0, 0], ["mp"], SHARD1)


def test_shard_annotate_records_an_annotation_not_a_write():
    x = oar.ones([4, 8], dtype="float64")
    w = oar.ones([8, 6], dtype="float64")
    assert _C.dist.shard_annotate(w, *MESH, SHARD1) is False  # no trace: validates only
    t = _C.pir.Tracer()
    t.add_input(x, "x", [4, 8])
    t.add_parameter(w, "w")
    t.start()
    assert _C.dist.shard_annotate(w, *MESH, [(1, -1, 0)]) is True  # Shard(-1) -> Shard(1)
    assert _C.dist.shard_annotate(x, *MESH, REPLICATE) is True
    y = oar.matmul(x, w)
    p = t.finish([y])
    names = [op.name for op in p.ops()]
    assert names == ["builtin.input", "builtin.parameter", "dist.shard_annotate", "dist.shard_annotate",
                     "pd_op.matmul", "builtin.output"]  # no set_parameter / write_input output
    text = str(p)
    assert '#dist.placements<[Shard(1)], mesh = [2], ids = [0, 1], names = ["mp"]>' in text
    assert '"pd_op.matmul"(%3, %2)' in text  # the matmul reads the annotated values


def test_shard_annotate_rejects_bad_placements():
    w = oar.ones([8, 6], dtype="float64")
    with pytest.raises(ValueError, match="out of range for a tensor of rank 2"):
        _C.dist.shard_annotate(w, *MESH, [(1, 2, 0)])
    with pytest.raises(ValueError, match="2 placements"):
        _C.dist.shard_annotate(w, *MESH, SHARD1 + REPLICATE)


@pytest.mark.parametrize("case", ["mp", "dp", "pp"])
def test_partitioned_program_on_two_processes_equals_one_process(case, tmp_path):
    """workers/static_passes.py: the global program cut by dist-train, run on 2 ranks."""
    import sys, os
    sys.path.insert(0, os.path.dirname(__file__))
    from _harness import assert_all_ok, run_ranks
    results, _ = run_ranks("static_passes.py", 2, args=[case], timeout=120, tmp_path=tmp_path)
    assert_all_ok(results)
    assert all(f"{case} collectives" in text for _, text in results)
