"""Smaller paddle.base / utils / static names: unique_name, lod tensors, as_numpy,
dygraph switches, log_helper, cuda queries, sysconfig, pir_utils, static.amp lists,
control_flow.Assert."""
import logging
import os

import numpy as np
import pytest

import oar
from oar import static


def test_unique_name_generate_guard_switch():
    un = oar.utils.unique_name
    with un.guard():
        assert [un.generate("fc"), un.generate("fc"), un.generate("conv")] == ["fc_0", "fc_1", "conv_0"]
        with un.guard("A"):
            assert un.generate("fc") == "Afc_0"
        assert un.generate("fc") == "fc_2"
        old = un.switch()
        assert un.generate("fc") == "fc_0"
        un.switch(*old)
        assert un.generate("fc") == "fc_3"
    with pytest.raises(TypeError, match="generate: key must be a str"):
        un.generate(3)
    with pytest.raises(TypeError, match="switch: new_generator must be a UniqueNameGenerator"):
        un.switch("x")


def test_static_layer_names_come_from_unique_name():
    oar.enable_static()
    try:
        with static.program_guard(static.Program(), static.Program()):
            k = int(oar.utils.unique_name.generate("fc").split("_")[1])
            x = static.data("x", [None, 2], "float32")
            static.nn.fc(x, 3)
            assert oar.utils.unique_name.generate("fc") == f"fc_{k + 2}"  # fc took fc_{k + 1}
    finally:
        oar.disable_static()


def test_create_lod_tensor():
    base = oar.base
    t = base.create_lod_tensor(np.arange(10.0).reshape(5, 2), [[2, 3]], base.CPUPlace())
    np.testing.assert_array_equal(t.numpy(), np.arange(10.0).reshape(5, 2))
    t2 = base.create_lod_tensor([[1, 2], [3, 4, 5]], [[2, 3]], base.CPUPlace())
    assert t2.numpy().ravel().tolist() == [1, 2, 3, 4, 5]
    r = base.create_random_int_lodtensor([[2, 3]], [4], base.CPUPlace(), 1, 3)
    assert list(r.shape) == [5, 4] and r.numpy().min() >= 1 and r.numpy().max() <= 3
    with pytest.raises(ValueError, match="the lengths \\[2, 2\\] sum to 4, but the data has 5 rows"):
        base.create_lod_tensor(np.zeros([5, 1]), [[2, 2]], base.CPUPlace())
    with pytest.raises(ValueError, match="lengths >= 0"):
        base.create_lod_tensor(np.zeros([1, 1]), [[-1, 2]], base.CPUPlace())
    with pytest.raises(ValueError, match="low must be <= high"):
        base.create_random_int_lodtensor([[1]], [1], base.CPUPlace(), 3, 1)


def test_as_numpy_dygraph_switch_and_logger(capsys):
    base = oar.base
    scope = base.Scope()
    with base.scope_guard(scope):
        base.global_scope().var("d").get_tensor().set(np.ones((2, 2)), base.CPUPlace())
    np.testing.assert_array_equal(base.executor.as_numpy(scope.find_var("d").get_tensor()), np.ones((2, 2)))
    assert base.executor.as_numpy([oar.ones([2])])[0].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="as_numpy: expected a Tensor"):
        base.executor.as_numpy(3)
    base.disable_dygraph()
    try:
        assert not base.dygraph.enabled() and not oar.in_dynamic_mode()
    finally:
        base.enable_dygraph()
    assert base.dygraph.enabled()
    log = base.log_helper.get_logger("oar_test_logger", logging.INFO, fmt="%(levelname)s:%(message)s")
    assert log is static.log_helper.get_logger("oar_test_logger", logging.INFO)
    assert sum(getattr(h, "_oar_log_helper", False) for h in log.handlers) == 1
    log.info("hello")
    assert "INFO:hello" in capsys.readouterr().err
    assert base.is_compiled_with_xpu() is False and base.core.is_compiled_with_rocm() is False


def test_cuda_sysconfig_pir_utils_cpp_extension(tmp_path, monkeypatch):
    assert oar.cuda.is_available() is False and oar.cuda.device_count() == 0
    oar.cuda.manual_seed_all(5)
    s = oar.cuda.get_rng_state()
    a = oar.rand([3]).numpy()
    oar.cuda.set_rng_state(s)
    np.testing.assert_array_equal(oar.rand([3]).numpy(), a)
    with pytest.raises(ValueError, match="device 'gpu:0' is not available"):
        oar.cuda.get_rng_state(0)
    assert os.path.isfile(os.path.join(oar.sysconfig.get_include(), "oar", "device_ext.h"))
    assert any(f.startswith("liboar_inference") for f in os.listdir(oar.sysconfig.get_lib()))
    oar.enable_static()
    try:
        with oar.pir_utils.IrGuard():
            assert oar.framework.in_pir_mode()
    finally:
        oar.disable_static()
    with pytest.raises(NotImplementedError, match="OldIrGuard: Oar builds PIR programs only"):
        with oar.pir_utils.OldIrGuard():
            pass
    monkeypatch.setenv("PADDLE_EXTENSION_DIR", str(tmp_path / "ext"))
    from oar.utils.cpp_extension import get_build_directory, load
    assert get_build_directory() == str(tmp_path / "ext") and os.path.isdir(tmp_path / "ext")
    with pytest.raises(NotImplementedError, match="cpp_extension.load: Oar does not build"):
        load(name="x", sources=[])


def test_static_amp_lists():
    from oar.static.amp import AutoMixedPrecisionLists, bf16
    lists = bf16.AutoMixedPrecisionListsBF16(custom_fp32_list={"matmul"}, custom_bf16_list={"my_op"})
    assert "matmul" in lists.fp32_list and "matmul" not in lists.bf16_list and "my_op" in lists.bf16_list
    fp16 = AutoMixedPrecisionLists(custom_black_list=["conv2d"])
    assert "conv2d" in fp16.black_list and "conv2d" not in fp16.white_list
    with pytest.raises(ValueError, match="ops \\['x'\\] are in both"):
        AutoMixedPrecisionLists(custom_white_list={"x"}, custom_black_list={"x"})
    with pytest.raises(TypeError, match="custom_fp32_list must be a set or list"):
        bf16.AutoMixedPrecisionListsBF16(custom_fp32_list="matmul")
    with bf16.bf16_guard():
        assert oar.static.amp.in_guard() == "bfloat16"
    assert oar.static.amp.in_guard() is None


def test_assert_static_and_eager(capsys):
    from oar.static.nn.control_flow import Assert
    oar.enable_static()
    try:
        with static.program_guard(static.Program(), static.Program()):
            x = static.data("x", [None, 3], "float32")
            Assert(oar.max(x) < 1.0, [x], 2, "small")
            y = x * 2
            exe = static.Executor()
            out = exe.run(feed={"x": np.zeros([2, 3], "float32")}, fetch_list=[y])
            assert out[0].shape == (2, 3)
            with pytest.raises(ValueError, match="Assert 'small' failed"):
                exe.run(feed={"x": np.full([2, 3], 5, "float32")}, fetch_list=[y])
            assert "data: [5. 5.]" in capsys.readouterr().out
    finally:
        oar.disable_static()
    Assert(oar.to_tensor(True))
    with pytest.raises(ValueError, match="Assert failed"):
        Assert(oar.to_tensor([False]))
    with pytest.raises(TypeError, match="cond must be a one-element bool tensor"):
        Assert(oar.ones([2]) > 0)
    assert oar.nn.Linear(2, 2).weight.is_parameter


def test_programs_under_fresh_guards_share_parameters_by_name():
    """Paddle's train/test pattern: each program built under its own unique_name.guard()
    names its parameters alike, and they are one scope variable."""
    oar.enable_static()
    try:
        with static.scope_guard(static.Scope()):
            progs = []
            for _ in range(2):
                main, startup = static.Program(), static.Program()
                with oar.utils.unique_name.guard(), static.program_guard(main, startup):
                    x = static.data("x", [None, 3], "float32")
                    y = static.nn.fc(x, 2)
                    loss = oar.mean(y * y)
                progs.append((main, startup, y, loss))
            (train, train_startup, _, loss), (test, test_startup, y_test, _) = progs
            with static.program_guard(train, train_startup):
                oar.optimizer.SGD(0.5).minimize(loss)
            exe = static.Executor()
            exe.run(test_startup)  # the test program's startup initialises the shared parameters
            feed = {"x": np.ones([4, 3], "float32")}
            before = exe.run(test, feed=feed, fetch_list=[y_test])[0]
            exe.run(train, feed=feed, fetch_list=[loss])
            after = exe.run(test, feed=feed, fetch_list=[y_test])[0]
            assert not np.allclose(before, after)  # the training step updated what the test program reads
        # Another model under a fresh guard: its fc_0.w_0 is its own (Paddle's programs each
        # have their own variables), and the first two programs keep theirs.
        other, other_startup = static.Program(), static.Program()
        with oar.utils.unique_name.guard(), static.program_guard(other, other_startup):
            z = static.nn.fc(static.data("x", [None, 5], "float32"), 4)
        assert [list(p.shape) for p in other.all_parameters()] == [[5, 4], [4]]
        assert [list(p.shape) for p in train.all_parameters()] == [[3, 2], [2]]
        with static.scope_guard(static.Scope()):
            exe = static.Executor()
            exe.run(other_startup)
            assert exe.run(other, feed={"x": np.ones([2, 5], "float32")}, fetch_list=[z])[0].shape == (2, 4)
        # Within one program a name means one parameter.
        with static.program_guard(static.Program(), static.Program()):
            x = static.data("x", [None, 3], "float32")
            static.nn.fc(x, 2, weight_attr=oar.ParamAttr(name="shared_w"))
            with pytest.raises(ValueError, match="'shared_w' exists with shape \\[3, 2\\]"):
                static.nn.fc(x, 4, weight_attr=oar.ParamAttr(name="shared_w"))
    finally:
        oar.disable_static()
