"""oar.amp.debugging: check_numerics against float64 NumPy, the tensor checker over eager
ops (forward and backward, modes, op lists, steps, output_dir), operator statistics, and
check_layer_numerics; bad arguments raise naming the function and the argument."""
import numpy as np
import pytest

import oar
from oar import _C
from oar.amp import debugging as dbg

rng = np.random.default_rng(18)


@pytest.fixture(autouse=True)
def _checker_off():
    yield
    dbg.disable_tensor_checker()
    dbg.disable_operator_stats_collection()
    assert not _C._has_op_observer()


def _with_specials(shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    if flat.size >= 4:
        idx = rng.choice(flat.size, size=4, replace=False)
        flat[idx[0]] = np.nan
        flat[idx[1]] = np.inf
        flat[idx[2]] = -np.inf
        flat[idx[3]] = 0
    return a


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (0, 4), (2, 3, 4)])
def test_check_numerics_matches_numpy(dtype, shape, capsys):
    a = _with_specials(shape, dtype)
    stats, values = dbg.check_numerics(oar.to_tensor(a), "my_op", "my_var", dbg.DebugMode.CHECK_NAN_INF)
    assert stats.dtype == oar.int64 and values.dtype == oar.float32
    assert list(stats.shape) == [3] and list(values.shape) == [3]
    r = a.astype(np.float64).ravel()
    np.testing.assert_array_equal(stats.numpy(), [np.isnan(r).sum(), np.isinf(r).sum(), (r == 0).sum()])
    if r.size:
        ref = [np.nanmax(r), np.nanmin(r), r.mean()]
        np.testing.assert_allclose(values.numpy(), np.float32(ref), rtol=1e-6)
        err = capsys.readouterr().err
        assert "op=my_op, tensor=my_var" in err and "num_nan=1, num_inf=2" in err
    else:
        np.testing.assert_array_equal(values.numpy(), [0, 0, 0])


def test_check_numerics_modes_and_errors(capsys):
    good = oar.to_tensor([1.0, 0.0, 3.0])
    stats, _ = dbg.check_numerics(good, "pow", "res")  # abort mode: a finite tensor passes
    np.testing.assert_array_equal(stats.numpy(), [0, 0, 1])
    assert capsys.readouterr().err == ""
    dbg.check_numerics(good, "pow", "res", dbg.DebugMode.CHECK_ALL)
    assert "[PRECISION] [INFO]" in capsys.readouterr().err
    bad = oar.to_tensor([1.0, float("nan")])
    with pytest.raises(RuntimeError, match=r"There are NAN or INF \(num_nan=1, num_inf=0, num_zero=0\).*op=divide"):
        dbg.check_numerics(bad, "divide", "z")
    ints = oar.to_tensor([0, 2, 0])
    stats, values = dbg.check_numerics(ints, "cast", "i")
    np.testing.assert_array_equal(stats.numpy(), [0, 0, 2])
    np.testing.assert_allclose(values.numpy(), [2, 0, 2 / 3], rtol=1e-6)
    with pytest.raises(TypeError, match="check_numerics: tensor must be a Tensor"):
        dbg.check_numerics(np.ones(3), "a", "b")
    with pytest.raises(TypeError, match="check_numerics: op_type must be a str"):
        dbg.check_numerics(good, 3, "b")
    with pytest.raises(TypeError, match="check_numerics: debug_mode must be"):
        dbg.check_numerics(good, "a", "b", 1)


def test_checker_reports_forward_and_backward_and_goes_on(capsys):
    cfg = dbg.TensorCheckerConfig(enable=True, debug_mode=dbg.DebugMode.CHECK_NAN_INF)
    dbg.enable_tensor_checker(cfg)
    x = oar.to_tensor([1.0, 0.0, 3.0], stop_gradient=False)
    y = oar.to_tensor([0.2, 0.0, 0.5])
    res = oar.pow(x, y)
    oar.autograd.backward(res, retain_graph=True)
    dbg.disable_tensor_checker()
    err = capsys.readouterr().err
    # the forward is finite; the backward's 0 * 0**-1 is NaN (pow's gradient formula)
    assert "[PRECISION] [ERROR]" in err and "num_nan=1" in err
    np.testing.assert_equal(np.isnan(x.grad.numpy()), [False, True, False])
    oar.log(oar.to_tensor([-1.0]))  # off again: nothing reported
    assert capsys.readouterr().err == ""


def test_checker_abort_raises_at_the_op():
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(enable=True))
    x = oar.to_tensor([1.0, 2.0])
    oar.exp(x)  # finite: fine
    with pytest.raises(RuntimeError, match=r"op=log.*dtype=fp32"):
        oar.log(oar.to_tensor([-1.0, 2.0]))
    with pytest.raises(RuntimeError, match="num_inf=1"):
        oar.divide(x, oar.to_tensor([0.0, 1.0]))
    dbg.disable_tensor_checker()
    out = oar.log(oar.to_tensor([-1.0]))
    assert np.isnan(out.numpy()[0])


def test_checked_and_skipped_op_lists(capsys):
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(
        enable=True, debug_mode=dbg.DebugMode.CHECK_NAN_INF, checked_op_list=["log"]))
    oar.sqrt(oar.to_tensor([-1.0]))
    assert capsys.readouterr().err == ""
    oar.log(oar.to_tensor([-1.0]))
    assert "op=log" in capsys.readouterr().err
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(
        enable=True, debug_mode=dbg.DebugMode.CHECK_NAN_INF, skipped_op_list=("log",)))
    oar.log(oar.to_tensor([-1.0]))
    assert capsys.readouterr().err == ""
    oar.sqrt(oar.to_tensor([-1.0]))
    assert "op=sqrt" in capsys.readouterr().err


def test_debug_step_range(capsys):
    dbg.TensorCheckerConfig.current_step_id = 0
    cfg = dbg.TensorCheckerConfig(enable=True, debug_mode=dbg.DebugMode.CHECK_NAN_INF, debug_step=[1, 3])
    checked = []
    for step in range(5):
        dbg.enable_tensor_checker(cfg)
        oar.log(oar.to_tensor([-1.0]))
        checked.append("op=log" in capsys.readouterr().err)
        dbg.disable_tensor_checker()
    # step 0 is before the range and is not counted, so the count never reaches 1
    assert checked == [False] * 5
    dbg.TensorCheckerConfig.current_step_id = 1
    checked = []
    for step in range(4):
        dbg.enable_tensor_checker(cfg)
        oar.log(oar.to_tensor([-1.0]))
        checked.append("op=log" in capsys.readouterr().err)
    assert checked == [True, True, False, False]
    dbg.TensorCheckerConfig.current_step_id = 0


def test_output_dir_and_check_all_modes(tmp_path, capsys):
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(
        enable=True, debug_mode=dbg.DebugMode.CHECK_ALL, output_dir=str(tmp_path / "logs")))
    oar.add(oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, 4.0]))
    dbg.disable_tensor_checker()
    text = (tmp_path / "logs" / "worker_cpu.log").read_text()
    assert "[PRECISION] [INFO]" in text and "op=add" in text and "max=6.000000e+00" in text
    assert capsys.readouterr().err == ""
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(
        enable=True, debug_mode=dbg.DebugMode.CHECK_ALL_FOR_OVERFLOW))
    oar.multiply(oar.to_tensor([300.0, 1.0]), oar.to_tensor([300.0, 1.0]))
    err = capsys.readouterr().err
    assert "[WARNING]" in err and "num_fp16_overflow=1" in err
    oar.multiply(oar.to_tensor([3.0]), oar.to_tensor([3.0]))
    assert capsys.readouterr().err == ""


def test_checker_with_autocast_keeps_both_behaviours():
    x = oar.to_tensor(rng.standard_normal((4, 4)).astype("float32"))
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(enable=True))
    # the observer turns the amp layer on; without auto_cast nothing is cast
    assert oar.matmul(x, x).dtype == oar.float32
    with oar.amp.auto_cast(level="O1", dtype="bfloat16"):
        assert oar.matmul(x, x).dtype == oar.bfloat16
        dbg.disable_tensor_checker()
        assert oar.matmul(x, x).dtype == oar.bfloat16  # autocast stays on
    assert oar.matmul(x, x).dtype == oar.float32


def test_operator_stats_table(capsys):
    linear = oar.nn.Linear(4, 3)
    x = oar.rand([2, 4])
    dbg.enable_operator_stats_collection()
    with oar.amp.auto_cast(enable=True, level="O2", dtype="bfloat16"):
        linear(x)
    oar.add(oar.to_tensor([1, 2]), oar.to_tensor([3, 4]))
    dbg.disable_operator_stats_collection()
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "<" + " op list ".center(120, "-") + ">"
    assert "FP16 Calls" in lines[1] and "Other Calls" in lines[1]
    rows = {ln.split("|")[0].strip(): [int(c) for c in ln.split("|")[1:]] for ln in lines[2:-2]}
    assert rows["matmul"] == [0, 1, 0, 0]  # its inputs were cast to bfloat16
    assert rows["cast"][2] >= 1  # float32 -> bfloat16 casts
    assert rows["add"][3] == 1  # int64
    assert lines[-2] == "<" + f" op count: {len(rows)} ".center(120, "-") + ">"
    dbg.disable_operator_stats_collection()  # off already: prints nothing
    assert capsys.readouterr().out == ""
    t = oar.to_tensor([1.0])
    with dbg.collect_operator_stats():
        oar.exp(t)
        oar.exp(t)
    out = capsys.readouterr().out
    assert out.splitlines()[2].split() == ["exp", "|", "0", "|", "0", "|", "2", "|", "0"]
    assert "op count: 1 " in out


def test_check_layer_numerics():
    class MyLayer(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([2, 3], dtype="float32")

        @dbg.check_layer_numerics
        def forward(self, x, divide=False):
            return (1 / x) @ self.w if divide else x @ self.w

    layer = MyLayer()
    x = oar.rand([4, 2, 2])
    out = layer(x)
    assert list(out.shape) == [4, 2, 3]
    x[0] = 0.0
    with pytest.raises(RuntimeError, match="There are NAN or INF"):
        layer(x, divide=True)
    assert not _C._has_op_observer()  # off again after the error
    with pytest.raises(RuntimeError, match="first input of the layer must be a Tensor"):
        layer([1.0])
    # a checker the user turned on stays on
    cfg = dbg.TensorCheckerConfig(enable=True, debug_mode=dbg.DebugMode.CHECK_NAN_INF)
    dbg.enable_tensor_checker(cfg)
    layer(oar.rand([1, 2, 2]))
    assert _C._has_op_observer()


def test_config_and_enable_argument_errors():
    with pytest.raises(TypeError, match="TensorCheckerConfig: debug_mode"):
        dbg.TensorCheckerConfig(enable=True, debug_mode=0)
    with pytest.raises(ValueError, match="debug_step must be a list or tuple"):
        dbg.TensorCheckerConfig(enable=False, debug_step=3)
    with pytest.raises(ValueError, match=r"start < end, got \[3, 1\]"):
        dbg.TensorCheckerConfig(enable=False, debug_step=[3, 1])
    with pytest.raises(ValueError, match="checked_op_list must be a list or tuple"):
        dbg.TensorCheckerConfig(enable=False, checked_op_list="add")
    with pytest.raises(ValueError, match="stack_height_limit must be an int"):
        dbg.TensorCheckerConfig(enable=False, stack_height_limit="1")
    with pytest.raises(TypeError, match="output_dir must be a str"):
        dbg.TensorCheckerConfig(enable=False, output_dir=3)
    with pytest.raises(TypeError, match="enable_tensor_checker: checker_config must be a TensorCheckerConfig"):
        dbg.enable_tensor_checker({"enable": True})
    # enable=False: enable_tensor_checker leaves the checker off
    dbg.enable_tensor_checker(dbg.TensorCheckerConfig(enable=False))
    assert not _C._has_op_observer()


def test_config_seeds_like_paddle(capsys):
    oar.seed(7)
    cfg = dbg.TensorCheckerConfig(enable=True)
    assert "AMP Debugging TensorCheckerConfig: seed  7" in capsys.readouterr().out
    a = oar.rand([3]).numpy()
    oar.seed(7)
    np.testing.assert_array_equal(a, oar.rand([3]).numpy())
    assert cfg.seed == 7


def test_is_float16_supported_follows_the_cpu():
    flags = open("/proc/cpuinfo").read()
    native = "avx512_fp16" in flags or "amx_fp16" in flags
    assert oar.amp.is_float16_supported() is native
    assert oar.amp.is_float16_supported("cpu") is native
    with pytest.raises(ValueError, match="is_float16_supported"):
        oar.amp.is_float16_supported("nosuchdevice:0")
