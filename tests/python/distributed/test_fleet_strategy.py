"""fleet.DistributedStrategy: Paddle's fields and defaults, typed setters, *_configs merged
key by key with unknown keys refused, and the protobuf text format round trip."""
import pytest

from oar.distributed.fleet import DistributedStrategy


def test_defaults_follow_paddle():
    s = DistributedStrategy()
    assert s.a_sync is True and s.amp is False and s.fuse_grad_size_in_MB == 32
    assert s.conv_workspace_size_limit == 512 and s.last_comm_group_size_MB == 1.0
    assert s.amp_configs["init_loss_scaling"] == 32768.0 and s.amp_configs["custom_white_list"] == []
    assert s.sharding_configs["sharding_degree"] == 8 and s.pipeline_configs["schedule_mode"] == "1F1B"
    assert s.hybrid_configs["dp_degree"] == -1 and s.hybrid_configs["mp_configs"]["sync_param"] is True
    assert s.a_sync_configs["k_steps"] == -1 and s.hybrid_parallel_order == ["dp", "pp", "sharding", "sep", "mp"]


def test_setters_check_types_and_keys():
    s = DistributedStrategy()
    s.recompute = True
    s.fuse_grad_size_in_TFLOPS = 20  # an int is a float
    assert s.recompute is True and s.fuse_grad_size_in_TFLOPS == 20.0
    with pytest.raises(TypeError, match="DistributedStrategy.amp must be a bool, got 1"):
        s.amp = 1
    with pytest.raises(TypeError, match="DistributedStrategy.nccl_comm_num must be a int, got 1.5"):
        s.nccl_comm_num = 1.5
    with pytest.raises(AttributeError, match="DistributedStrategy has no field 'ampp'"):
        s.ampp = True
    s.amp_configs = {"init_loss_scaling": 1024, "custom_black_list": ("pool2d",)}
    s.amp_configs = {"use_pure_fp16": True}  # merged: earlier keys stay
    assert s.amp_configs["init_loss_scaling"] == 1024.0 and s.amp_configs["custom_black_list"] == ["pool2d"]
    assert s.amp_configs["use_pure_fp16"] is True
    with pytest.raises(ValueError, match="DistributedStrategy.amp_configs: unknown key 'loss_scale'"):
        s.amp_configs = {"loss_scale": 2.0}
    with pytest.raises(TypeError, match="DistributedStrategy.recompute_configs.checkpoints must be a list, got 'x'"):
        s.recompute_configs = {"checkpoints": "x"}
    with pytest.raises(TypeError, match="DistributedStrategy.hybrid_configs.mp_configs.sync_param must be a bool"):
        s.hybrid_configs = {"mp_configs": {"sync_param": "yes"}}
    with pytest.raises(ValueError, match="hybrid_configs: pp_degree must be a positive int.*got 0"):
        s.hybrid_configs = {"pp_degree": 0}
    with pytest.raises(ValueError, match="order must be a permutation"):
        s.hybrid_configs = {"order": ["dp", "mp"]}
    s.hybrid_configs = {"order": ["mp", "dp", "pp", "sharding", "sep"], "mp_degree": 1}
    assert s.hybrid_parallel_order[0] == "mp"


def test_getters_return_copies():
    s = DistributedStrategy()
    cfg = s.amp_configs
    cfg["init_loss_scaling"] = 1.0
    assert s.amp_configs["init_loss_scaling"] == 32768.0


def test_build_strategy_from_object():
    from oar.static import BuildStrategy
    b = BuildStrategy()
    b.enable_inplace = True
    s = DistributedStrategy()
    s.build_strategy = b
    assert s.build_strategy["enable_inplace"] is True and s.build_strategy["fuse_bn_act_ops"] is False


def test_prototxt_round_trip(tmp_path):
    s = DistributedStrategy()
    s.dgc = True
    s.a_sync = False
    s.recompute_configs = {"checkpoints": ["x", 'quote"d']}
    s.lars_configs = {"lars_coeff": 0.25}
    s.hybrid_configs = {"dp_degree": 2, "mp_configs": {"sync_mode": "average"}}
    path = tmp_path / "s.prototxt"
    s.save_to_prototxt(str(path))
    text = path.read_text()
    assert "dgc: true\n" in text and "a_sync: false\n" in text and "amp:" not in text  # defaults left out
    assert 'recompute_configs {\n  checkpoints: "x"\n  checkpoints: "quote\\"d"\n}' in text
    t = DistributedStrategy()
    t.amp = True  # a field the file does not name keeps its value
    t.load_from_prototxt(str(path))
    assert t.amp is True
    t.amp = False
    assert t == s


def test_prototxt_bad_files(tmp_path):
    p = tmp_path / "bad.prototxt"
    s = DistributedStrategy()
    for text, msg in [("dgcc: true\n", "bad.prototxt:1: unknown field 'dgcc'"),
                      ("amp: true\nnccl_comm_num: x\n", "bad.prototxt:2: field 'nccl_comm_num' expects a int, got x"),
                      ("amp_configs {\n init_loss_scaling: 2\n", "a message is not closed"),
                      ("amp_configs: 3\n", "field 'amp_configs' is a message"),
                      ("}\n", "unmatched '}'")]:
        p.write_text(text)
        with pytest.raises(ValueError, match=msg):
            s.load_from_prototxt(str(p))
    p.write_text("# a comment\nlamb_configs {\n  exclude_from_weight_decay: 'bias'\n}\n")
    s.load_from_prototxt(str(p))
    assert s.lamb_configs["exclude_from_weight_decay"] == ["bias"]
