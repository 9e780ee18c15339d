"""Static mode beyond the basics: control flow, schedulers, accuracy, parameter sharing,
variables of other programs, the Scope's tensor view."""
import numpy as np
import pytest

import oar
from oar import static


def test_while_loop_and_cond_record_control_flow(progs):
    main, _ = progs
    n = static.data("n", [1], "int64")
    x = static.data("x", [None, 2], "float32")
    i = oar.zeros([1], "int64")
    i, _ = static.nn.while_loop(lambda i, n: i < n, lambda i, n: [i + 1, n], [i, n])
    y = static.nn.cond(oar.sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    text = str(main)
    assert "cf.while" in text and "cf.if" in text
    exe = static.Executor()
    for steps, xs in ((3, np.ones((2, 2), "float32")), (7, -np.ones((3, 2), "float32"))):
        iv, yv = exe.run(main, feed={"n": np.array([steps]), "x": xs}, fetch_list=[i, y])
        assert iv.tolist() == [steps]
        np.testing.assert_allclose(yv, xs * 2 if xs.sum() > 0 else xs - 1)


def test_bool_of_static_variable_raises(progs):
    x = static.data("x", [None, 2], "float32")
    with pytest.raises(RuntimeError, match="no value"):
        bool(oar.sum(x) > 0)


def test_lr_scheduler_steps_between_runs(progs):
    main, startup = progs
    x = static.data("x", [None, 2], "float32")
    w = static.create_parameter([2, 1], "float32", default_initializer=oar.nn.initializer.Constant(1.0))
    loss = oar.sum(oar.matmul(x, w))
    sched = oar.optimizer.lr.PiecewiseDecay(boundaries=[1], values=[0.5, 0.1])
    oar.optimizer.SGD(learning_rate=sched).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    ones = np.ones((1, 2), "float32")
    scope = static.global_scope()
    exe.run(main, feed={"x": ones}, fetch_list=[loss])  # d loss / d w = 1: w -= lr
    np.testing.assert_allclose(np.array(scope.find_var(w.name).get_tensor()), [[0.5], [0.5]])
    sched.step()
    exe.run(main, feed={"x": ones}, fetch_list=[loss])
    np.testing.assert_allclose(np.array(scope.find_var(w.name).get_tensor()), [[0.4], [0.4]], rtol=1e-6)


def test_accuracy_and_print(progs, capfd):
    main, _ = progs
    x = static.data("p", [None, 4], "float32")
    label = static.data("label", [None, 1], "int64")
    acc = static.accuracy(x, label, k=1)
    shown = static.Print(x, message="probe")
    exe = static.Executor()
    p = np.array([[0.1, 0.9, 0, 0], [0.8, 0.1, 0.1, 0], [0, 0, 0.2, 0.7]], "float32")
    a, s = exe.run(main, feed={"p": p, "label": np.array([[1], [2], [3]])}, fetch_list=[acc, shown])
    np.testing.assert_allclose(a, 2 / 3, rtol=1e-6)
    np.testing.assert_array_equal(s, p)
    assert "probe" in capfd.readouterr().out


def test_parameters_shared_by_name(progs):
    main, _ = progs
    x = static.data("x", [None, 3], "float32")
    attr = oar.ParamAttr(name="shared_fc_w")
    a = static.nn.fc(x, 2, weight_attr=attr, bias_attr=False)
    b = static.nn.fc(x, 2, weight_attr=attr, bias_attr=False)
    assert [p.name for p in main.all_parameters()] == ["shared_fc_w"]
    exe = static.Executor()
    exe.run(static.default_startup_program())
    av, bv = exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[a, b])
    np.testing.assert_array_equal(av, bv)
    with pytest.raises(ValueError, match="shape"):
        static.nn.fc(x, 5, weight_attr=attr)


def test_fetching_a_variable_of_another_program(progs):
    main, _ = progs
    other = static.Program()
    with static.program_guard(other):
        z = static.data("z", [2], "float32") * 3.0
    x = static.data("x", [2], "float32")
    exe = static.Executor()
    with pytest.raises(ValueError, match="this program does not compute"):
        exe.run(main, feed={"x": np.ones(2, "float32")}, fetch_list=[z])
    got, = exe.run(other, feed={"z": np.ones(2, "float32")}, fetch_list=[z])
    np.testing.assert_array_equal(got, [3.0, 3.0])
    assert x.name == "x"


def test_scope_tensor_view():
    scope = static.Scope()
    t = scope.var("data").get_tensor()
    t.set(np.ones((2, 2)), oar.CPUPlace())
    a = np.array(scope.find_var("data").get_tensor())
    a[0, 0] = 5  # a copy
    np.testing.assert_array_equal(np.array(scope.find_var("data").get_tensor()), np.ones((2, 2)))
    assert scope.find_var("missing") is None
    with pytest.raises(ValueError, match=r"shape \[2, 2\].*\[3\]"):
        t.set(np.zeros(3))


def test_static_api_needs_static_mode():
    with pytest.raises(RuntimeError, match="enable_static"):
        static.data("x", [1], "float32")
    with pytest.raises(TypeError, match="program_guard"):
        with static.program_guard("main"):
            pass


def test_dataloader_feeds_a_static_program(progs):
    main, startup = progs

    class Data(oar.io.Dataset):
        def __getitem__(self, i):
            return np.full([3], i, "float32"), np.array([i % 2], "int64")

        def __len__(self):
            return 8

    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "int64")
    s = oar.sum(x) + oar.sum(y.astype("float32"))
    loader = oar.io.DataLoader(Data(), feed_list=[x, y], return_list=False, batch_size=4, shuffle=True)
    exe = static.Executor()
    total = 0.0
    for feed in loader():
        assert isinstance(feed, list) and sorted(feed[0]) == ["x", "y"]
        total += float(exe.run(main, feed=feed, fetch_list=[s])[0])
    assert total == 3 * sum(range(8)) + 4  # shuffling is Python data, never recorded
    assert "randperm" not in str(main)
    with pytest.raises(ValueError, match="one dict per place"):
        exe.run(main, feed=[{}, {}], fetch_list=[s])


def test_training_program_keeps_batch_norm_statistics_updates(progs):
    """The forward's own writes (running mean/variance) happen in the training program
    recorded per fed shape, as in eager batch_norm."""
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    loss = oar.mean(static.nn.fc(static.nn.batch_norm(x), 1))
    oar.optimizer.SGD(0.1).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    a = np.random.default_rng(0).standard_normal((5, 3)).astype("float32") + 3
    exe.run(main, feed={"x": a}, fetch_list=[loss])
    scope = static.global_scope()
    names = sorted(n for n in main._params if n.startswith("batch_norm") and n[-4:] in (".w_1", ".w_2"))
    mean, var = (np.array(scope.find_var(n).get_tensor()) for n in names)
    oar.disable_static()
    try:
        rm, rv = oar.zeros([3]), oar.ones([3])
        oar.nn.functional.batch_norm(oar.to_tensor(a), rm, rv, oar.ones([3]), oar.zeros([3]), training=True,
                                     momentum=0.9)
    finally:
        oar.enable_static()
    np.testing.assert_allclose(mean, rm.numpy(), rtol=1e-5)
    np.testing.assert_allclose(var, rv.numpy(), rtol=1e-5)
    assert np.abs(mean).sum() > 0.5
