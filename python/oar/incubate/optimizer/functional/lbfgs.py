"""minimize_lbfgs."""
import math
import numbers

from ._common import Objective, check_args, quasi_newton_step, results


def minimize_lbfgs(objective_func, initial_position, history_size=100, max_iters=50, tolerance_grad=1e-8,
                   tolerance_change=1e-8, initial_inverse_hessian_estimate=None, line_search_fn="strong_wolfe",
                   max_line_search_iters=50, initial_step_length=1.0, dtype="float32", name=None):
    """Minimizes objective_func(x) over a 1-D x from initial_position by L-BFGS (the last
    history_size steps). Returns (is_converge, num_func_calls, position, objective_value,
    objective_gradient)."""
    import oar

    who = "minimize_lbfgs"
    x = check_args(who, initial_position, max_iters, tolerance_grad, tolerance_change, line_search_fn,
                   max_line_search_iters, initial_step_length, dtype)
    if isinstance(history_size, bool) or not isinstance(history_size, numbers.Integral) or history_size < 1:
        raise ValueError(f"{who}: history_size must be an int >= 1, got {history_size!r}")
    n = x.shape[0]
    H0 = None
    if initial_inverse_hessian_estimate is not None:
        H0 = oar.cast(initial_inverse_hessian_estimate.detach(), dtype)
        if list(H0.shape) != [n, n]:
            raise ValueError(f"{who}: initial_inverse_hessian_estimate must have shape [{n}, {n}], got "
                             f"{list(H0.shape)}")
    obj = Objective(objective_func, who)
    f, g = obj(x)
    converged = float(g.abs().max()) < tolerance_grad if n else True
    history = []  # (s, y, rho), newest last, at most history_size
    for _ in range(int(max_iters)):
        if converged:
            break
        # two-loop recursion: d = -H g
        q, alphas = g, []
        for s, y, rho in reversed(history):
            a = rho * float((s * q).sum())
            alphas.append(a)
            q = q - a * y
        r = oar.matmul(H0, q) if H0 is not None else q
        for (s, y, rho), a in zip(history, reversed(alphas)):
            b = rho * float((y * r).sum())
            r = r + (a - b) * s
        d = -r
        x, f, g, s, y, rho = quasi_newton_step(obj, x, f, g, d, float(initial_step_length),
                                               max_line_search_iters, tolerance_change)
        history.append((s, y, rho))
        if len(history) > history_size:
            history.pop(0)
        converged = float(g.abs().max()) < tolerance_grad or float(s.abs().max()) < tolerance_change
        if not math.isfinite(f):  # diverged (an unbounded function): stop, not converged
            converged = False
            break
    return results(converged, obj.calls, x, f, g, dtype)
