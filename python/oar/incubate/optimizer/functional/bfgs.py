"""minimize_bfgs."""
import math

from ...._dtype import convert_dtype
from ._common import Objective, check_args, quasi_newton_step, results


def minimize_bfgs(objective_func, initial_position, max_iters=50, tolerance_grad=1e-7, tolerance_change=1e-9,
                  initial_inverse_hessian_estimate=None, line_search_fn="strong_wolfe", max_line_search_iters=50,
                  initial_step_length=1.0, dtype="float32", name=None):
    """Minimizes objective_func(x) over a 1-D x from initial_position by BFGS. Returns
    (is_converge, num_func_calls, position, objective_value, objective_gradient,
    inverse_hessian_estimate); converged means the gradient's or the step's largest
    entry fell below tolerance_grad / tolerance_change."""
    import oar

    who = "minimize_bfgs"
    x = check_args(who, initial_position, max_iters, tolerance_grad, tolerance_change, line_search_fn,
                   max_line_search_iters, initial_step_length, dtype)
    n = x.shape[0]
    eye = oar._C.ops.eye(n, -1, convert_dtype(dtype), x.place)
    if initial_inverse_hessian_estimate is None:
        H = eye
    else:
        H = oar.cast(initial_inverse_hessian_estimate.detach(), dtype)
        if list(H.shape) != [n, n]:
            raise ValueError(f"{who}: initial_inverse_hessian_estimate must have shape [{n}, {n}], got "
                             f"{list(H.shape)}")
        if not oar.allclose(H, H.T) or float(oar.linalg.eigvalsh(H).min()) <= 0:
            raise ValueError(f"{who}: initial_inverse_hessian_estimate must be symmetric positive definite")
    obj = Objective(objective_func, who)
    f, g = obj(x)
    converged = float(g.abs().max()) < tolerance_grad if n else True
    for _ in range(int(max_iters)):
        if converged:
            break
        d = -oar.matmul(H, g)
        x, f, g, s, y, rho = quasi_newton_step(obj, x, f, g, d, float(initial_step_length),
                                               max_line_search_iters, tolerance_change)
        sy = oar.outer(s, y)
        H = oar.matmul(oar.matmul(eye - rho * sy, H), eye - rho * sy.T) + rho * oar.outer(s, s)
        converged = float(g.abs().max()) < tolerance_grad or float(s.abs().max()) < tolerance_change
        if not math.isfinite(f):  # diverged (an unbounded function): stop, not converged
            converged = False
            break
    return results(converged, obj.calls, x, f, g, dtype) + (H,)
