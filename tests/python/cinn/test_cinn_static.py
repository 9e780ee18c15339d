"""Static-mode programs under the fusion compiler (docs/notes/cinn.md, "Switching it on"):
Executor.run of a CompiledProgram whose BuildStrategy sets build_cinn_pass, or of any
program with FLAGS_use_cinn, compiles with the `cinn` pipeline. A static training
program holds the forward, the backward and the optimizer updates as ops (Note [Static
mode], docs/notes/static.md), so each parameter's update is one fused kernel."""
import re

import numpy as np
import pytest

import oar
from oar import _C
import oar.static as static

CINN_FLAGS = ("FLAGS_use_cinn", "FLAGS_prim_all")

OPTIMIZERS = {
    "sgd": lambda: oar.optimizer.SGD(learning_rate=0.1),
    "momentum": lambda: oar.optimizer.Momentum(learning_rate=0.05, momentum=0.9, use_nesterov=True),
    "adam": lambda: oar.optimizer.Adam(learning_rate=1e-2),
    "adamw": lambda: oar.optimizer.AdamW(learning_rate=1e-2, weight_decay=0.05),
}


@pytest.fixture
def static_mode():
    oar.enable_static()
    try:
        yield
    finally:
        oar.disable_static()


def build(opt_name, dtype="float32"):
    oar.seed(3)
    main, start = static.Program(), static.Program()
    with static.program_guard(main, start), oar.utils.unique_name.guard("cinn_static_"):  # same names each build
        x = static.data("x", [None, 24], dtype)
        y = static.data("y", [None, 1], "int64")
        h = oar.nn.functional.gelu(static.nn.fc(x, 48))
        h = oar.nn.functional.layer_norm(h, [48])
        logits = static.nn.fc(h, 40)
        loss = oar.nn.functional.cross_entropy(logits, y).mean()
        OPTIMIZERS[opt_name]().minimize(loss)
    return main, start, loss


def batches(steps, n=16, dtype="float32"):
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((n, 24)).astype(dtype), rng.integers(0, 40, (n, 1))) for _ in range(steps)]


def train(opt_name, cinn, steps=6):
    main, start, loss = build(opt_name)
    exe = static.Executor()
    scope = static.Scope()
    with static.scope_guard(scope):
        exe.run(start)
        strategy = static.BuildStrategy()
        strategy.build_cinn_pass = cinn
        prog = static.CompiledProgram(main, build_strategy=strategy)
        losses = [float(exe.run(prog, feed={"x": x, "y": y}, fetch_list=[loss])[0]) for x, y in batches(steps)]
    state = {n: np.array(scope.find_var(n).get_tensor()) for n in scope.local_var_names()}
    return np.array(losses), state, exe


def compiled_programs(exe):
    return [c.program for key, c in exe._cache.items() if key[-1] is True]


def fused_writes(text):
    """The names of the builtin.set_parameter writes whose value a compiled kernel made."""
    made = set()
    for m in re.finditer(r'^\s*(%[\d, %]+) = "kernel\.compiled_kernel"', text, re.M):
        made.update(v.strip() for v in m.group(1).split(","))
    return {name for value, name in re.findall(r'"builtin\.set_parameter"\((%\d+)\) \{name = "([^"]+)"', text)
            if value in made}


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_static_training_with_cinn_equals_without(static_mode, opt_name):
    ref_losses, ref_state, _ = train(opt_name, cinn=False)
    assert _C.cinn.cache_stats()["kernels"] == 0
    losses, state, exe = train(opt_name, cinn=True)
    stats = _C.cinn.cache_stats()
    assert stats["kernels"] >= 4 and stats["fallbacks"] == 0, stats
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    assert losses[-1] < losses[0]
    assert sorted(state) == sorted(ref_state)
    for name in state:
        np.testing.assert_allclose(state[name], ref_state[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # Every parameter's new value (and its accumulators') comes out of a fused kernel:
    # the update's ops were decomposed and fused, not run one by one.
    (program,) = compiled_programs(exe)
    text = str(program)
    params = ["cinn_static_fc_0.w_0", "cinn_static_fc_0.b_0", "cinn_static_fc_1.w_0", "cinn_static_fc_1.b_0"]
    written = fused_writes(text)
    for p in params:
        assert p in written, (p, sorted(written))
    if opt_name in ("adam", "adamw"):
        assert {f"{p}_moment1_0" for p in params} | {f"{p}_moment2_0" for p in params} <= written
    if opt_name == "momentum":
        assert {f"{p}_velocity_0" for p in params} <= written


def test_flags_use_cinn_compiles_static_programs(static_mode):
    ref_losses, _, _ = train("adam", cinn=False, steps=3)
    oar.set_flags({"FLAGS_use_cinn": True})
    losses, _, exe = train("adam", cinn=False, steps=3)  # the flag alone turns it on
    assert _C.cinn.cache_stats()["kernels"] >= 4
    assert len(compiled_programs(exe)) == 1
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)


def test_plain_program_runs_unfused_and_is_cached_apart(static_mode):
    main, start, loss = build("sgd")
    exe = static.Executor()
    with static.scope_guard(static.Scope()):
        exe.run(start)
        x, y = batches(1)[0]
        exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])
        assert _C.cinn.cache_stats()["kernels"] == 0
        strategy = static.BuildStrategy()
        strategy.build_cinn_pass = True
        exe.run(static.CompiledProgram(main, strategy), feed={"x": x, "y": y}, fetch_list=[loss])
        assert _C.cinn.cache_stats()["kernels"] > 0
        # One entry each: the unfused program is not replaced by the fused one.
        assert sorted(key[-1] for key in exe._cache if key[0] == id(main)) == [False, True]


def test_loaded_inference_program_with_cinn(static_mode, tmp_path):
    oar.seed(5)
    main, start = static.Program(), static.Program()
    with static.program_guard(main, start), oar.utils.unique_name.guard("infer_"):
        x = static.data("x", [None, 32], "float32")
        h = oar.nn.functional.softmax(static.nn.fc(x, 64), axis=-1)
        out = oar.nn.functional.rms_norm(h, [64])
    exe = static.Executor()
    exe.run(start)
    prefix = str(tmp_path / "model")
    static.save_inference_model(prefix, [x], [out], exe, program=main)
    program, feeds, fetches = static.load_inference_model(prefix, exe)
    data = np.random.default_rng(2).standard_normal((8, 32)).astype("float32")
    (ref,) = exe.run(program, feed={feeds[0]: data}, fetch_list=fetches)
    assert _C.cinn.cache_stats()["kernels"] == 0
    strategy = static.BuildStrategy()
    strategy.build_cinn_pass = True
    (got,) = exe.run(static.CompiledProgram(program, strategy), feed={feeds[0]: data}, fetch_list=fetches)
    assert _C.cinn.cache_stats()["kernels"] >= 1
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_compiled_program_bad_arguments(static_mode):
    with pytest.raises(TypeError, match="CompiledProgram: program_or_graph must be an oar.static.Program, got int"):
        static.CompiledProgram(3)
    with pytest.raises(TypeError, match="CompiledProgram: build_strategy must be a static.BuildStrategy"):
        static.CompiledProgram(static.Program(), build_strategy={"build_cinn_pass": True})
    assert "build_cinn_pass=False" in repr(static.CompiledProgram(static.Program(), static.BuildStrategy()))
