"""LBFGS: the first iteration is the scaled gradient step, quadratics are solved (fixed step
and strong Wolfe), Rosenbrock converges with the line search, history is bounded, bad
arguments raise."""
import numpy as np
import pytest

import oar

RNG = np.random.default_rng(11)
M = RNG.standard_normal((5, 5))
A = M @ M.T + 5 * np.eye(5)
B = RNG.standard_normal(5)


def _quadratic(x):
    return 0.5 * (x * (oar.to_tensor(A) @ x)).sum() - (oar.to_tensor(B) * x).sum()


def _run(opt, x, fn, steps):
    def closure():
        opt.clear_grad()
        loss = fn(x)
        loss.backward()
        return loss
    for _ in range(steps):
        opt.step(closure)


def test_first_iteration_is_a_scaled_gradient_step():
    x = oar.create_parameter([5], "float64")
    x.set_value(np.zeros(5))
    opt = oar.optimizer.LBFGS(learning_rate=0.5, max_iter=1, parameters=[x])
    _run(opt, x, _quadratic, 1)
    g = -B  # gradient at 0
    np.testing.assert_allclose(x.numpy(), -g * min(1.0, 1.0 / np.abs(g).sum()) * 0.5, rtol=1e-12)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_solves_a_quadratic(line_search):
    x = oar.create_parameter([5], "float64")
    x.set_value(np.zeros(5))
    opt = oar.optimizer.LBFGS(learning_rate=1.0, max_iter=50, tolerance_change=1e-15,
                              tolerance_grad=1e-12,
                              history_size=5, line_search_fn=line_search, parameters=[x])
    _run(opt, x, _quadratic, 20)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(A, B), rtol=1e-5, atol=1e-7)
    st = opt.state_dict()["state"]
    assert len(st["old_yk"]) <= 5 and st["n_iter"] >= 1 and st["func_evals"] >= st["n_iter"]


def test_rosenbrock_with_line_search():
    x = oar.create_parameter([2], "float64")
    x.set_value(np.array([-1.2, 1.0]))

    def rosen(v):
        return (1 - v[0]) ** 2 + 100 * (v[1] - v[0] ** 2) ** 2
    opt = oar.optimizer.LBFGS(learning_rate=1.0, max_iter=100, line_search_fn="strong_wolfe",
                              tolerance_change=1e-15, tolerance_grad=1e-12, parameters=[x])
    _run(opt, x, rosen, 1)
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0], atol=1e-6)
    assert opt.state["n_iter"] < 60 and opt.state["func_evals"] < 80  # scipy's L-BFGS: ~35


def test_bad_arguments():
    p = oar.create_parameter([2], "float32")
    with pytest.raises(ValueError, match="LBFGS: line_search_fn must be None or 'strong_wolfe'"):
        oar.optimizer.LBFGS(line_search_fn="armijo", parameters=[p])
    with pytest.raises(ValueError, match="LBFGS: history_size must be a positive int"):
        oar.optimizer.LBFGS(history_size=0, parameters=[p])
    with pytest.raises(ValueError, match="LBFGS: max_iter must be a positive int"):
        oar.optimizer.LBFGS(max_iter=-1, parameters=[p])
    with pytest.raises(TypeError, match="LBFGS: parameters must be an iterable"):
        oar.optimizer.LBFGS(parameters=p)
    with pytest.raises(TypeError, match="LBFGS.step: closure must be a callable"):
        oar.optimizer.LBFGS(parameters=[p]).step(None)
    with pytest.raises(NotImplementedError, match="LBFGS.minimize"):
        oar.optimizer.LBFGS(parameters=[p]).minimize(p.sum())


def test_degenerate_line_search_brackets_do_not_raise():
    from oar.optimizer.lbfgs import _cubic_min
    assert _cubic_min(0.5, 1.0, -1.0, 0.5, 1.0, -1.0) == 0.5  # one point: the bracket's middle
    for seed in range(8):  # the docstring's loop on random data (it once divided by zero)
        oar.seed(seed)
        net = oar.nn.Linear(10, 10)
        opt = oar.optimizer.LBFGS(learning_rate=1, max_iter=1, line_search_fn="strong_wolfe",
                                  parameters=net.parameters())
        x = oar.rand([10, 10])
        y = x * 2

        def closure():
            loss = oar.nn.functional.mse_loss(net(x), y)
            opt.clear_grad()
            loss.backward()
            return loss
        while opt.state_dict()["state"].get("func_evals", 0) < 20:
            opt.step(closure)
