"""What BFGS and L-BFGS share: argument checks, the objective with its gradient, the line
search, the results."""
import numbers

from .... import _C

MAX_ITERS = 1_000_000  # iteration counts are bounded up front (each iteration evaluates the function)


def check_args(who, initial_position, max_iters, tolerance_grad, tolerance_change, line_search_fn,
               max_line_search_iters, initial_step_length, dtype):
    import oar

    if dtype not in ("float32", "float64"):
        raise ValueError(f"{who}: dtype must be 'float32' or 'float64', got {dtype!r}")
    if not isinstance(initial_position, _C.Tensor):
        raise TypeError(f"{who}: initial_position must be a Tensor, got {type(initial_position).__name__}")
    if len(initial_position.shape) != 1:
        raise ValueError(f"{who}: initial_position must be 1-D (flatten it, as the examples do), got shape "
                         f"{list(initial_position.shape)}")
    if not initial_position.dtype.is_floating_point:
        raise TypeError(f"{who}: initial_position must be floating point, got {initial_position.dtype}")
    for name, v in (("max_iters", max_iters), ("max_line_search_iters", max_line_search_iters)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v <= MAX_ITERS:
            raise ValueError(f"{who}: {name} must be an int in [0, {MAX_ITERS}], got {v!r}")
    for name, v in (("tolerance_grad", tolerance_grad), ("tolerance_change", tolerance_change),
                    ("initial_step_length", initial_step_length)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v >= 0:
            raise ValueError(f"{who}: {name} must be a number >= 0, got {v!r}")
    if line_search_fn != "strong_wolfe":
        raise NotImplementedError(f"{who}: line_search_fn must be 'strong_wolfe' (the only one Paddle has), got "
                                  f"{line_search_fn!r}")
    return oar.cast(initial_position.detach(), dtype)


class Objective:
    """f and its gradient at a point, counting the evaluations."""

    def __init__(self, fn, who):
        if not callable(fn):
            raise TypeError(f"{who}: objective_func must be callable, got {type(fn).__name__}")
        self.fn, self.who, self.calls = fn, who, 0

    def __call__(self, x):
        import oar

        self.calls += 1
        x = x.detach()
        x.stop_gradient = False
        with oar.enable_grad():
            f = self.fn(x)
            if not isinstance(f, _C.Tensor) or f.size != 1:
                what = f"shape {list(f.shape)}" if isinstance(f, _C.Tensor) else type(f).__name__
                raise ValueError(f"{self.who}: objective_func must return a one-element tensor, got {what}")
            (g,) = oar.grad([f.reshape([])], [x], allow_unused=True)
        if g is None:
            g = oar.zeros_like(x)
        return float(f), g.detach().astype(x.dtype)

    def along(self, x0, t, d):
        return self(x0 + t * d)


def line_search(obj, x, f, g, d, step, max_ls, tolerance_change):
    """(f, g, step) at a strong-Wolfe step along d."""
    from ....optimizer.lbfgs import _dot, _strong_wolfe

    f_new, g_new, t, _ = _strong_wolfe(obj.along, x, step, d, f, g, _dot(g, d),
                                       tolerance_change=tolerance_change, max_ls=max(1, max_ls))
    return f_new, g_new, t


def quasi_newton_step(obj, x, f, g, d, step, max_ls, tolerance_change):
    """Moves x to a strong-Wolfe point along d: (x, f, g, s, y, rho) with s the step, y the
    gradient's change and rho = 1 / (y . s) (1000 for a flat step, as Paddle guards it)."""
    f, g_new, t = line_search(obj, x, f, g, d, step, max_ls, tolerance_change)
    s = t * d
    y = g_new - g
    ys = float((y * s).sum())
    return x + s, f, g_new, s, y, 1000.0 if ys == 0 else 1.0 / ys


def results(converged, calls, x, f, g, dtype):
    import oar

    return (oar.to_tensor(bool(converged), place=x.place), oar.to_tensor(int(calls), "int64", x.place), x,
            oar.to_tensor(f, dtype, x.place), g)
