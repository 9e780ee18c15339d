"""Static-graph mode: programs, executor, scope, misuse errors (Note [Static mode])."""
import numpy as np
import pytest

import oar
from oar import static


def test_mode_switch():
    assert oar.in_dynamic_mode() and oar.base.framework.in_dygraph_mode()
    oar.enable_static()
    try:
        assert not oar.in_dynamic_mode() and oar.base.in_pir_mode()
        assert isinstance(static.default_main_program(), static.Program)
    finally:
        oar.disable_static()
    assert oar.in_dynamic_mode()
    # Eager tensors are themselves again.
    assert oar.to_tensor([1.0]).numpy().tolist() == [1.0]


def test_data_feed_fetch_dynamic_batch(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    y = oar.exp(x) * 2.0 + x.sum(axis=1, keepdim=True)
    exe = static.Executor(oar.CPUPlace())
    for n in (1, 5):
        a = np.random.default_rng(n).standard_normal((n, 3)).astype("float32")
        got, = exe.run(main, feed={"x": a}, fetch_list=[y])
        np.testing.assert_allclose(got, np.exp(a) * 2 + a.sum(1, keepdims=True), rtol=1e-6)
    # fetch by name
    y.name = "my_y"
    got, = exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=["my_y"])
    np.testing.assert_allclose(got, np.exp(1) * 2 + 3, rtol=1e-6)


def test_static_variable_surface(progs):
    x = static.data("img", [-1, 4], "float32")
    assert x.name == "img" and x.dtype == oar.float32
    assert repr(x) == "var img : DENSE_TENSOR.shape(-1, 4).dtype(float32).stop_gradient(True)"
    with pytest.raises(RuntimeError, match=r"img.*\[-1, 4\].*fetch"):
        x.numpy()
    z = x + 1
    assert z.name  # generated
    with pytest.raises(RuntimeError, match="no value"):
        z.numpy()


def test_misuse_errors(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    y = x * 2
    exe = static.Executor()
    with pytest.raises(ValueError, match=r"feed 'x' has shape \[2, 4\].*\[-1, 3\]"):
        exe.run(main, feed={"x": np.zeros((2, 4), "float32")}, fetch_list=[y])
    with pytest.raises(TypeError, match="feed 'x' has dtype float64.*float32"):
        exe.run(main, feed={"x": np.zeros((2, 3))}, fetch_list=[y])
    with pytest.raises(ValueError, match="no variable named 'nope'"):
        exe.run(main, feed={"x": np.zeros((2, 3), "float32")}, fetch_list=["nope"])
    with pytest.raises(ValueError, match="needs the input 'x'"):
        exe.run(main, feed={}, fetch_list=[y])
    with pytest.raises(ValueError, match="'zz', which is no static.data"):
        exe.run(main, feed={"x": np.zeros((2, 3), "float32"), "zz": np.zeros(1)}, fetch_list=[y])


def test_parameters_need_startup(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    y = static.nn.fc(x, 2)
    exe = static.Executor()
    with pytest.raises(RuntimeError, match=r"fc_\d+\.w_0.*startup"):
        exe.run(main, feed={"x": np.zeros((1, 3), "float32")}, fetch_list=[y])
    exe.run(startup)
    wname = [p.name for p in main.all_parameters() if p.name.endswith(".w_0")]
    assert len(wname) == 1
    w = np.asarray(static.global_scope().find_var(wname[0]).get_tensor())
    got, = exe.run(main, feed={"x": np.ones((1, 3), "float32")}, fetch_list=[y])
    np.testing.assert_allclose(got, np.ones((1, 3)) @ w, rtol=1e-6)  # bias starts at zero


def test_layers_in_static_mode_match_eager(progs):
    main, startup = progs
    oar.seed(3)
    lin = oar.nn.Linear(4, 3)
    x = static.data("x", [None, 4], "float32")
    y = oar.nn.functional.relu(lin(x))
    exe = static.Executor()
    exe.run(startup)
    a = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")
    got, = exe.run(main, feed={"x": a}, fetch_list=[y])
    scope = static.global_scope()
    w = np.asarray(scope.find_var(lin.weight.name).get_tensor())
    b = np.asarray(scope.find_var(lin.bias.name).get_tensor())
    np.testing.assert_allclose(got, np.maximum(a @ w + b, 0), rtol=1e-6, atol=1e-7)
    # set a parameter through the scope
    scope.find_var(lin.bias.name).get_tensor().set(np.full([3], 10.0, "float32"), oar.CPUPlace())
    got, = exe.run(main, feed={"x": a}, fetch_list=[y])
    np.testing.assert_allclose(got, np.maximum(a @ w + 10, 0), rtol=1e-6)


def test_gradients_and_append_backward(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    w = static.create_parameter([3, 2], "float32", name="w")
    loss = oar.mean(oar.matmul(x, w) ** 2)
    pairs = static.append_backward(loss)
    assert [p.name for p, _ in pairs] == ["w"] and pairs[0][1].name == "w@GRAD"
    gx, = static.gradients([loss], [x])
    exe = static.Executor()
    exe.run(startup)
    a = np.random.default_rng(1).standard_normal((4, 3)).astype("float32")
    wv = np.asarray(static.global_scope().find_var("w").get_tensor())
    l, gw, gxv = exe.run(main, feed={"x": a}, fetch_list=[loss, pairs[0][1], gx])
    z = a @ wv
    np.testing.assert_allclose(l, (z ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(gw, a.T @ (2 * z / z.size), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gxv, (2 * z / z.size) @ wv.T, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda ps: oar.optimizer.SGD(0.1, parameters=ps),
    lambda ps: oar.optimizer.Momentum(0.05, momentum=0.9, parameters=ps, use_nesterov=True),
    lambda ps: oar.optimizer.Adam(0.01, parameters=ps, weight_decay=0.01),
    lambda ps: oar.optimizer.AdamW(0.01, parameters=ps, weight_decay=0.1),
])
def test_minimize_matches_eager_optimizer(progs, make):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    w = static.create_parameter([3, 2], "float32")
    loss = oar.mean(oar.tanh(oar.matmul(x, w)))
    make(None).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    w0 = np.asarray(static.global_scope().find_var(w.name).get_tensor())
    # batches of different sizes: the backward is recorded per fed shape
    batches = [np.random.default_rng(i).standard_normal((4 + i % 2, 3)).astype("float32") for i in range(4)]
    static_losses = [exe.run(main, feed={"x": b}, fetch_list=[loss])[0] for b in batches]
    w_static = np.asarray(static.global_scope().find_var(w.name).get_tensor())
    oar.disable_static()
    try:
        we = oar.create_parameter([3, 2], "float32")
        we.set_value(w0)
        opt = make([we])
        eager_losses = []
        for b in batches:
            le = oar.mean(oar.tanh(oar.matmul(oar.to_tensor(b), we)))
            le.backward()
            opt.step()
            opt.clear_grad()
            eager_losses.append(le.numpy())
    finally:
        oar.enable_static()
    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(w_static, we.numpy(), rtol=1e-5, atol=1e-7)


def test_clone_for_test_drops_updates(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    y = static.nn.fc(x, 1)
    loss = oar.mean(y)
    test_prog = main.clone(for_test=True)
    oar.optimizer.SGD(0.5).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    a = np.ones((2, 3), "float32")
    l1, = exe.run(test_prog, feed={"x": a}, fetch_list=[loss])
    l2, = exe.run(test_prog, feed={"x": a}, fetch_list=[loss])
    assert l1 == l2  # no update ran
    exe.run(main, feed={"x": a}, fetch_list=[loss])
    l3, = exe.run(test_prog, feed={"x": a}, fetch_list=[loss])
    assert l3 != l1  # the training program updated the shared parameters
    assert "set_parameter" not in str(test_prog)
    ran = [str(c.program) for c in exe._cache.values()]
    assert sum("set_parameter" in text for text in ran) == 1  # the training program's


def test_program_introspection(progs):
    main, _ = progs
    x = static.data("x", [None, 3], "float32")
    oar.nn.functional.relu(x + 1)
    names = [op.name() for op in main.global_block().ops]
    assert "builtin.input" in names and "pd_op.relu" in names and "pd_op.add" in names
    assert main.global_block().var("x") is x


def test_to_static_and_static_mode_share_ir_and_executor(progs):
    """A static program and a to_static program of the same code are the same pd_op
    program and run on the same executor class."""
    main, _ = progs
    x = static.data("x", [None, 3], "float32")
    y = oar.tanh(x) * 3.0
    static_text = str(main.to_pir())
    oar.disable_static()
    try:
        fn = oar.jit.to_static(lambda t: oar.tanh(t) * 3.0, input_spec=[static.InputSpec([None, 3], "float32", "x")])
        fn(oar.ones([2, 3]))
        jit_prog = fn.concrete_programs[0].program
        jit_ops = [op.name for op in jit_prog.ops() if op.dialect == "pd_op"]
        jit_executor = type(fn.concrete_programs[0].executor)
    finally:
        oar.enable_static()
    static_ops = [op.name for op in main.to_pir().ops() if op.dialect == "pd_op"]
    assert static_ops == jit_ops and "pd_op.tanh" in static_text
    exe = static.Executor()
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y])
    assert all(type(c.executor) is jit_executor for c in exe._cache.values())


def test_base_names_and_dygraph_guard():
    from oar import base

    assert base.Program is static.Program and base.program_guard is static.program_guard
    oar.enable_static()
    try:
        with base.dygraph.guard():
            assert oar.in_dynamic_mode()
            assert oar.to_tensor([2.0]).numpy().tolist() == [2.0]
        assert not oar.in_dynamic_mode()
    finally:
        oar.disable_static()
    assert repr(static.InputSpec([None, 3], "float32", "x")) == (
        "InputSpec(shape=(-1, 3), dtype=paddle.float32, name=x, stop_gradient=False)")


def test_clone_without_for_test_trains_like_the_original(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    loss = oar.mean(static.nn.fc(x, 1))
    oar.optimizer.SGD(0.5).minimize(loss)
    same = main.clone()
    exe = static.Executor()
    exe.run(startup)
    a = np.ones((2, 3), "float32")
    l1, = exe.run(same, feed={"x": a}, fetch_list=[loss])
    l2, = exe.run(main, feed={"x": a}, fetch_list=[loss])
    assert l2 < l1  # the clone's run updated the shared parameters


def test_import_oar_loads_no_static_machinery():
    import subprocess
    import sys

    code = ("import sys, oar; print(sorted(m for m in sys.modules if m.startswith('oar.static.') "
            "and m != 'oar.static.nn'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
