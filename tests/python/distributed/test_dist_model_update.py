"""DistModel's update ops (Note [DistModel]): each fused optimizer's step compiled into the
train program (dist.<rule>_update) gives the eager step's parameters, under a learning-rate
schedule, parameter groups, gradient_merge and global-norm clipping; malformed update ops are
errors naming what is wrong. One process: the dist.* ops run locally."""
import re
import warnings

import numpy as np
import pytest

import oar
import oar.distributed as dist

lr_mod = oar.optimizer.lr


def _mlp():
    oar.seed(11)
    return oar.nn.Sequential(oar.nn.Linear(5, 7), oar.nn.Tanh(), oar.nn.Linear(7, 3))


def _mse(o, t):
    return ((o - t) ** 2).mean()


OPTIMIZERS = {
    "sgd": lambda ps, lr: oar.optimizer.SGD(lr, parameters=ps, weight_decay=0.01),
    "momentum": lambda ps, lr: oar.optimizer.Momentum(lr, momentum=0.8, parameters=ps, use_nesterov=True),
    "adam": lambda ps, lr: oar.optimizer.Adam(lr, parameters=ps, weight_decay=0.02),
    "adamw": lambda ps, lr: oar.optimizer.AdamW(lr, parameters=ps, weight_decay=0.05,
                                                 apply_decay_param_fun=lambda n: "bias" not in n),
    "adamax": lambda ps, lr: oar.optimizer.Adamax(lr, parameters=ps),
    "adagrad": lambda ps, lr: oar.optimizer.Adagrad(lr, parameters=ps),
    "adadelta": lambda ps, lr: oar.optimizer.Adadelta(lr, parameters=ps),
    "rmsprop": lambda ps, lr: oar.optimizer.RMSProp(lr, parameters=ps, centered=True, momentum=0.5),
    "lamb": lambda ps, lr: oar.optimizer.Lamb(lr, parameters=ps),
    "nadam": lambda ps, lr: oar.optimizer.NAdam(lr, parameters=ps, weight_decay=0.02, momentum_decay=0.01),
    "radam": lambda ps, lr: oar.optimizer.RAdam(lr, parameters=ps, weight_decay=0.02),
    # Rprop's learning rate is its first step size (a float, no schedule)
    "rprop": lambda ps, lr: oar.optimizer.Rprop(0.01, learning_rate_range=(1e-4, 0.05), parameters=ps),
    "asgd": lambda ps, lr: oar.optimizer.ASGD(lr, batch_num=3, parameters=ps, weight_decay=0.01),
}
# Steps per case: RAdam's rectified (adaptive) step starts at step 6 (beta2 0.999), so the
# program runs both of its branches; ASGD's window (3) wraps.
STEPS = {"radam": 8, "asgd": 7}


def _train(kind, compile_, steps=6, k=1, groups=False, clip=False, strict=True):
    """(losses, parameters, the DistModel) of `steps` calls, the learning rate a schedule
    stepped after each call."""
    net = _mlp()
    sched = lr_mod.StepDecay(learning_rate=0.05, step_size=2, gamma=0.5)
    ps = net.parameters()
    if groups:  # the second layer at 3x the rate
        ps = [{"params": net[0].parameters()}, {"params": net[2].parameters(), "learning_rate": 3.0}]
    opt = OPTIMIZERS[kind](ps, sched)
    if clip:
        opt._grad_clip = oar.nn.ClipGradByGlobalNorm(0.5)
    s = dist.Strategy({"gradient_merge": {"enable": k > 1, "k_steps": k}})
    dm = dist.to_static(net, None, _mse, opt, strategy=s)
    dm._compile = compile_
    rng = np.random.default_rng(3)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error" if strict else "default")  # an eager fallback fails the test
        for _ in range(steps):
            x, y = oar.to_tensor(rng.standard_normal((4, 5))), oar.to_tensor(rng.standard_normal((4, 3)))
            losses.append(float(dm(x, y).numpy()))
            sched.step()
    return losses, [p.numpy().copy() for p in net.parameters()], dm


@pytest.fixture
def float64():
    oar.set_default_dtype("float64")
    yield
    oar.set_default_dtype("float32")


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_each_fused_update_compiled_equals_eager(kind, float64):
    steps = STEPS.get(kind, 6)
    got, got_p, dm = _train(kind, True, steps=steps, groups=kind in ("sgd", "adamw"))
    want, want_p, _ = _train(kind, False, steps=steps, groups=kind in ("sgd", "adamw"))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    text = str(dm.dist_main_program())
    ops = re.findall(r'"([a-z_]+\.[a-z_0-9]+)"\(', text)
    # one update op per parameter group, each parameter and state written back
    assert ops.count(f"dist.{kind}_update") == (2 if kind in ("sgd", "adamw") else 1), sorted(set(ops))
    n_states = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 3, "nadam": 3}.get(kind, 2)
    assert ops.count("builtin.set_parameter") == 4 * (1 + n_states)
    if kind in ("sgd", "adamw"):  # the second group's rate as a multiple of the lr input
        assert "lr_scale = [3.0, 3.0]" in text.replace(".0e+00", ".0"), re.findall(r"lr_scale = [^]]*]", text)
    lowered = str(dm._last["train"].executed_program)
    assert "dist_update_" in lowered and "builtin.set_parameter" not in lowered  # written in place


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_gradient_merge_compiled_equals_eager(float64):
    """k_steps=3 (2): two calls (one) output the gradients (added into .grad), the next call's
    program adds them to its own and updates."""
    for k in (3, 2):
        got, got_p, dm = _train("adamw", True, steps=7, k=k)
        want, want_p, _ = _train("adamw", False, steps=7, k=k)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        for a, b in zip(got_p, want_p):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        assert sorted({key[2] for key in dm._programs}) == ["grads", "merge"]
        merge = next(e for key, e in dm._programs.items() if key[2] == "merge")
        text = str(merge.program)
        assert text.count('"builtin.input"') == 2 + 2 + 4  # x, y, lr, step, the 4 merged gradients
        assert "dist.adamw_update" in text and "dist.adamw_update" not in str(dm._last["train"].program)


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_global_norm_clipping_is_compiled_into_the_program(float64):
    """ClipGradByGlobalNorm's norm, max(norm, clip_norm) and scaling are ops of the train
    program (no eager fallback: strict turns its warning into an error), equal to eager mode,
    whose norm is a Python float; the clipping acts (the losses differ from unclipped ones)."""
    got, got_p, dm = _train("adamw", True, steps=4, clip=True)
    want, want_p, _ = _train("adamw", False, steps=4, clip=True)
    free, _, _ = _train("adamw", False, steps=4)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert max(abs(a - b) for a, b in zip(got, free)) > 1e-3, "clip_norm 0.5 should clip these gradients"
    ops = re.findall(r'"([a-z_]+\.[a-z_0-9]+)"\(', str(dm.dist_main_program()))
    assert ops.count("pd_op.sqrt") == 1 and ops.count("pd_op.maximum") == 1 and "dist.adamw_update" in ops


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_global_norm_clip_as_ops_equals_the_float_path(dtype, scale):
    """The tensor-op path (what a program records) against the Python-float one on plain
    tensors: below and above clip_norm, a need_clip=False parameter left alone, a 0-size one."""
    rng = np.random.default_rng(int(scale * 10))
    shapes = [(3, 4), (5,), (0, 2), (2, 2)]
    params = [oar.create_parameter(list(s), dtype) for s in shapes]
    params[3].need_clip = False
    pairs = [(p, oar.to_tensor((rng.standard_normal(s) * scale).astype(dtype))) for p, s in zip(params, shapes)]
    clip = oar.nn.ClipGradByGlobalNorm(1.0)
    grads = [g for p, g in pairs if getattr(p, "need_clip", True)]
    want = clip._clip(pairs)
    with oar.no_grad():
        got = clip._clip_ops(pairs, grads)
    tol = 1e-6 if dtype == "float32" else 1e-14
    norm = np.sqrt(sum(float((g.numpy().astype("float64") ** 2).sum()) for g in grads))
    for (_, a), (_, b), (_, g), p in zip(got, want, pairs, params):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=0)
        expect = g.numpy() * (1.0 / max(norm, 1.0) if getattr(p, "need_clip", True) else 1.0)
        np.testing.assert_allclose(a.numpy(), expect, rtol=tol, atol=0)


@pytest.mark.parametrize("skip", [False, True])
def test_global_norm_clip_as_ops_on_a_non_finite_norm(skip):
    """auto_skip_clip=True leaves gradients with an infinite norm unchanged; otherwise the
    scale is clip_norm / inf = 0 (the float path's numbers)."""
    p = oar.create_parameter([3], "float64")
    g = oar.to_tensor(np.array([1.0, np.inf, 2.0]))
    clip = oar.nn.ClipGradByGlobalNorm(1.0, auto_skip_clip=skip)
    with oar.no_grad():
        (_, got), = clip._clip_ops([(p, g)], [g])
    (_, want), = clip._clip([(p, g)])
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    if skip:
        np.testing.assert_array_equal(got.numpy(), g.numpy())


def test_lower_collectives_rejects_malformed_update_ops():
    if not hasattr(oar._C.distributed, "lower_collectives"):
        pytest.skip("built without Gloo")
    base = ('module {\n  %0 = "builtin.input"() {name = "lr"} : () -> (tensor<f64>)\n'
            '  %1 = "builtin.input"() {name = "step"} : () -> (tensor<i64>)\n'
            '  %2 = "builtin.parameter"() {name = "w"} : () -> (tensor<4xf64>)\n'
            '  %3 = "builtin.input"() {name = "g"} : () -> (tensor<4xf64>)\n'
            '  %4 = "dist.sgd_update"(%0, %1, %2, %3) {ATTRS} : (tensor<f64>, tensor<i64>, tensor<4xf64>, '
            'tensor<4xf64>) -> (tensor<4xf64>)\n'
            '  "builtin.set_parameter"(%4) {name = "w"} : (tensor<4xf64>) -> ()\n}\n')
    good = 'flag = false, lr_scale = [1.0], scalars = [], state_lists = #shape[], weight_decay = [0.0]'
    p = oar._C.pir.parse(base.replace("ATTRS", good))
    assert oar._C.distributed.lower_collectives(p) == 1
    text = str(p)
    assert "dist_update_" in text and "set_parameter" not in text  # in place: the copy-back is dropped
    for attrs, words in [(good.replace("lr_scale = [1.0], ", ""), "attribute 'lr_scale' is missing"),
                         (good.replace("scalars = []", "scalars = [0.9]"), "1 scalars .* \\(sgd takes 0 state lists and 0 scalars\\)"),
                         (good.replace("weight_decay = [0.0]", "weight_decay = [0.0, 1.0]"), "2 weight decays"),
                         (good.replace("state_lists = #shape[]", "state_lists = #shape[3]"),
                          "a state list of 3 tensors for 1 parameters")]:
        with pytest.raises(Exception, match=words):
            oar._C.distributed.lower_collectives(oar._C.pir.parse(base.replace("ATTRS", attrs)))


def test_update_step_in_place_or_on_copies():
    """The lowered step: p -= lr * lr_scale * g from the lr input, written into the parameter
    in place when nothing reads it later; when a later op reads the parameter's value the step
    updates a copy and set_parameter writes it back."""
    if not hasattr(oar._C.distributed, "lower_collectives"):
        pytest.skip("built without Gloo")
    body = ('module {\n  %0 = "builtin.input"() {name = "lr"} : () -> (tensor<f64>)\n'
            '  %1 = "builtin.input"() {name = "step"} : () -> (tensor<i64>)\n'
            '  %2 = "builtin.parameter"() {name = "w"} : () -> (tensor<3xf64>)\n'
            '  %3 = "builtin.input"() {name = "g"} : () -> (tensor<3xf64>)\n'
            '  %4 = "dist.sgd_update"(%0, %1, %2, %3) {flag = false, lr_scale = [2.0], scalars = [], '
            'state_lists = #shape[], weight_decay = [0.0]} : (tensor<f64>, tensor<i64>, tensor<3xf64>, '
            'tensor<3xf64>) -> (tensor<3xf64>)\n'
            '  "builtin.set_parameter"(%4) {name = "w"} : (tensor<3xf64>) -> ()\nOUT}\n')
    for out, inplace in (("", True), ('  "builtin.output"(%2) {name = "old"} : (tensor<3xf64>) -> ()\n', False)):
        p = oar._C.pir.parse(body.replace("OUT", out))
        oar._C.distributed.lower_collectives(p)
        assert ("set_parameter" in str(p)) != inplace
        w = oar.to_tensor(np.array([1.0, 2.0, 3.0]))
        g = oar.to_tensor(np.array([0.5, -1.0, 2.0]))
        lr = oar.to_tensor(0.25, dtype="float64")
        step = oar.to_tensor(1, dtype="int64")
        res = oar._C.pir.Executor(p, oar.CPUPlace()).run([lr, step, g], {"w": w})
        np.testing.assert_allclose(w.numpy(), [0.75, 2.5, 2.0])  # 1 - 0.25 * 2 * 0.5 ...
        assert len(res) == (0 if inplace else 1)
        bad = oar.to_tensor(0.25, dtype="float32")
        with pytest.raises(Exception, match="input .lr. expects tensor<f64>, got shape \\[\\] float32"):
            oar._C.pir.Executor(p, oar.CPUPlace()).run([bad, step, g], {"w": w})


def test_update_op_skip_input():
    """The optional last operand (attribute skip_input, a GradScaler's found_inf in a
    converted step): true leaves the parameter as it is, false updates it, in place or on
    a copy; a missing operand or one that is not one bool is an error naming it."""
    if not hasattr(oar._C.distributed, "lower_collectives"):
        pytest.skip("built without Gloo")
    body = ('module {\n  %0 = "builtin.input"() {name = "lr"} : () -> (tensor<f64>)\n'
            '  %1 = "builtin.input"() {name = "step"} : () -> (tensor<i64>)\n'
            '  %2 = "builtin.parameter"() {name = "w"} : () -> (tensor<3xf64>)\n'
            '  %3 = "builtin.input"() {name = "g"} : () -> (tensor<3xf64>)\n'
            '  %5 = "builtin.input"() {name = "skip"} : () -> (tensor<SKIP>)\n'
            '  %4 = "dist.sgd_update"(%0, %1, %2, %3OPERAND) {flag = false, lr_scale = [1.0], scalars = [], '
            'skip_input = true, state_lists = #shape[], weight_decay = [0.0]} : (tensor<f64>, tensor<i64>, '
            'tensor<3xf64>, tensor<3xf64>TYPE) -> (tensor<3xf64>)\n'
            '  "builtin.set_parameter"(%4) {name = "w"} : (tensor<3xf64>) -> ()\nOUT}\n')

    def program(skip_type="bool", operand=True, out=""):
        text = body.replace("SKIP", skip_type).replace("OPERAND", ", %5" if operand else "")
        text = text.replace("TYPE", f", tensor<{skip_type}>" if operand else "").replace("OUT", out)
        return oar._C.pir.parse(text)

    lr, step = oar.to_tensor(0.5, dtype="float64"), oar.to_tensor(1, dtype="int64")
    g = oar.to_tensor(np.array([1.0, 2.0, 4.0]))
    for out in ("", '  "builtin.output"(%2) {name = "old"} : (tensor<3xf64>) -> ()\n'):  # in place, on a copy
        for skip, want in ((True, [1.0, 1.0, 1.0]), (False, [0.5, 0.0, -1.0])):
            p = program(out=out)
            oar._C.distributed.lower_collectives(p)
            w = oar.to_tensor(np.ones(3))
            oar._C.pir.Executor(p, oar.CPUPlace()).run([lr, step, g, oar.to_tensor(skip)], {"w": w})
            np.testing.assert_allclose(w.numpy(), want)
    with pytest.raises(Exception, match="4 operands and 1 results for 1 parameters and 0 states and a skip input"):
        oar._C.distributed.lower_collectives(program(operand=False))
    p = program(skip_type="f32")
    oar._C.distributed.lower_collectives(p)
    with pytest.raises(Exception, match="the skip input must be one bool, got 1 elements of float32"):
        oar._C.pir.Executor(p, oar.CPUPlace()).run([lr, step, g, oar.to_tensor(1.0)], {"w": oar.to_tensor(np.ones(3))})


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
@pytest.mark.parametrize("level", ["O1", "O2"])
def test_strategy_amp_autocasts_the_compiled_and_eager_steps(level):
    """Strategy.amp (bfloat16): the forward and the loss run under auto_cast in the compiled
    step as in the eager one; the program holds the casts and bfloat16 products, and the
    compiled step equals the eager step under the same autocast (before, amp was recorded
    and ignored: the step trained in float32)."""
    def train(compile_, amp=True):
        net = _mlp()
        opt = oar.optimizer.AdamW(0.01, parameters=net.parameters())
        s = dist.Strategy({"amp": {"enable": amp, "dtype": "bfloat16", "level": level}})
        dm = dist.to_static(net, None, _mse, opt, strategy=s)
        dm._compile = compile_
        rng = np.random.default_rng(3)
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(4):
                x = oar.to_tensor(rng.standard_normal((4, 5)).astype("float32"))
                y = oar.to_tensor(rng.standard_normal((4, 3)).astype("float32"))
                losses.append(float(dm(x, y).numpy()))
        return losses, [p.numpy() for p in net.parameters()], dm

    got, got_p, dm = train(True)
    want, want_p, _ = train(False)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        assert a.dtype == np.float32  # the parameters stay float32 (the masters)
    text = str(dm.serial_main_program())
    assert "pd_op.cast" in text and "xbf16>" in text
    fp32, _, _ = train(True, amp=False)
    assert not np.allclose(got, fp32, rtol=1e-6)  # bfloat16 products round differently


def test_strategy_amp_float16_warns_that_loss_scaling_is_not_applied():
    net = _mlp()
    opt = oar.optimizer.SGD(0.1, parameters=net.parameters())
    s = dist.Strategy({"amp": {"enable": True, "dtype": "float16"}})
    with pytest.warns(UserWarning, match="without loss scaling"):
        dist.to_static(net, None, _mse, opt, strategy=s)
