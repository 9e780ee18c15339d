"""The classic static-graph training script: static.data, static.nn.fc layers,
cross-entropy, Adam.minimize, Executor.run over batches, save_inference_model, then the
predictor and load_inference_model; it must train to the dygraph model's losses."""
import numpy as np
import pytest

import oar
from oar import static

LR, STEPS, BATCH = 0.01, 6, 16


def _batches():
    """Batches of two sizes (the backward is recorded per fed shape); the first batch
    comes back last, so the loss on it must have dropped."""
    rng = np.random.default_rng(7)
    out = [(rng.standard_normal((BATCH + i % 2, 10)).astype("float32"),
            rng.integers(0, 4, (BATCH + i % 2, 1)).astype("int64")) for i in range(STEPS - 1)]
    return out + out[:1]


def _static_run(tmp_path):
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            x = static.data("x", [None, 10], "float32")
            label = static.data("label", [None, 1], "int64")
            h = static.nn.fc(x, 16, activation="relu")
            logits = static.nn.fc(h, 4)
            loss = oar.mean(oar.nn.functional.cross_entropy(logits, label))
            oar.optimizer.Adam(learning_rate=LR).minimize(loss)
            exe = static.Executor(oar.CPUPlace())
            exe.run(startup)
            scope = static.global_scope()
            names = [p.name for p in main.all_parameters()]
            init = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
            losses = [float(exe.run(main, feed={"x": xb, "label": yb}, fetch_list=[loss])[0])
                      for xb, yb in _batches()]
            prefix = str(tmp_path / "mlp")
            static.save_inference_model(prefix, [x], [logits], exe)
            final = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
            probe = _batches()[0][0]
            prog, feeds, fetches = static.load_inference_model(prefix, exe)
            loaded_out, = exe.run(prog, feed={feeds[0]: probe}, fetch_list=fetches)
    finally:
        oar.disable_static()
    return names, init, losses, final, prefix, probe, loaded_out, feeds


def _dygraph_losses(names, init):
    w1, b1, w2, b2 = (init[n] for n in names)
    l1, l2 = oar.nn.Linear(10, 16), oar.nn.Linear(16, 4)
    for layer, w, b in ((l1, w1, b1), (l2, w2, b2)):
        layer.weight.set_value(w)
        layer.bias.set_value(b)
    params = l1.parameters() + l2.parameters()
    opt = oar.optimizer.Adam(learning_rate=LR, parameters=params)
    losses = []
    for xb, yb in _batches():
        logits = l2(oar.nn.functional.relu(l1(oar.to_tensor(xb))))
        loss = oar.mean(oar.nn.functional.cross_entropy(logits, oar.to_tensor(yb)))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss.numpy()))
    return losses, (l1, l2)


def test_static_training_matches_dygraph_and_saves(tmp_path):
    names, init, losses, final, prefix, probe, loaded_out, feeds = _static_run(tmp_path)
    assert len(names) == 4 and names[0].endswith(".w_0") and names[1].endswith(".b_0")
    eager, (l1, l2) = _dygraph_losses(names, init)
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(final[names[0]], l1.weight.numpy(), rtol=1e-5, atol=1e-5)

    expected = l2(oar.nn.functional.relu(l1(oar.to_tensor(probe)))).numpy()
    np.testing.assert_allclose(loaded_out, expected, rtol=1e-5, atol=1e-5)
    assert feeds == ["x"]
    # The same files serve the predictor and jit.load.
    pred = oar.inference.create_predictor(oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams"))
    h = pred.get_input_handle(pred.get_input_names()[0])
    h.copy_from_cpu(probe)
    pred.run()
    out = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    layer = oar.jit.load(prefix)
    np.testing.assert_allclose(layer(oar.to_tensor(probe)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_save_load_parameters(tmp_path):
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            x = static.data("x", [None, 3], "float32")
            y = static.nn.fc(x, 2)
            exe = static.Executor()
            exe.run(startup)
            a = np.ones((1, 3), "float32")
            before, = exe.run(main, feed={"x": a}, fetch_list=[y])
            static.save(main, str(tmp_path / "m"))
            for p in main.all_parameters():
                static.global_scope().find_var(p.name).get_tensor().set(np.zeros(p.shape, "float32"))
            zero, = exe.run(main, feed={"x": a}, fetch_list=[y])
            static.load(main, str(tmp_path / "m"), exe)
            after, = exe.run(main, feed={"x": a}, fetch_list=[y])
    finally:
        oar.disable_static()
    assert not zero.any()
    np.testing.assert_array_equal(before, after)


def test_save_inference_model_errors(tmp_path):
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            x = static.data("x", [None, 3], "float32")
            z = static.data("z", [None, 3], "float32")
            y = static.nn.fc(x, 2)
            exe = static.Executor()
            with pytest.raises(RuntimeError, match="startup"):
                static.save_inference_model(str(tmp_path / "a"), [x], [y], exe)
            exe.run(startup)
            with pytest.raises(ValueError, match=r"do not depend on the feed variables \['z'\]"):
                static.save_inference_model(str(tmp_path / "a"), [x, z], [y], exe)
            with pytest.raises(TypeError, match="fetch_vars"):
                static.save_inference_model(str(tmp_path / "a"), [x], [np.zeros(2)], exe)
    finally:
        oar.disable_static()


def test_pylayer_in_a_static_program_runs_forward_and_refuses_gradients():
    """A PyLayer recorded into a static program keeps its forward (inference runs); its
    custom backward is not recorded, so asking for gradients is an error naming it (before,
    the gradient was the forward ops' own: exp's instead of the custom 2 * exp(dy))."""
    class Custom(oar.autograd.PyLayer):
        @staticmethod
        def forward(ctx, x):
            return oar.exp(x)

        @staticmethod
        def backward(ctx, dy):
            return 2 * oar.exp(dy)

    oar.enable_static()
    try:
        for ask in ("gradients", "minimize"):
            main, startup = static.Program(), static.Program()
            with static.program_guard(main, startup), static.scope_guard(static.Scope()):
                x = static.data("x", [None, 3], "float32")
                x.stop_gradient = False
                w = static.create_parameter([3], "float32")
                y = Custom.apply(x * w)
                exe = static.Executor(oar.CPUPlace())
                exe.run(startup)
                feed = {"x": np.ones((2, 3), "float32")}
                (got,) = exe.run(main, feed=feed, fetch_list=[y])  # the forward runs
                wv = np.array(static.global_scope().find_var(w.name).get_tensor())
                np.testing.assert_allclose(got, np.exp(np.ones((2, 3)) * wv), rtol=1e-6)
                with pytest.raises(NotImplementedError, match=r"PyLayer \['Custom'\].*custom backward"):
                    if ask == "gradients":
                        static.gradients([y], x)
                    else:
                        oar.optimizer.SGD(0.1).minimize(oar.mean(y))
    finally:
        oar.disable_static()
