"""L-BFGS (Paddle's paddle.optimizer.LBFGS): step(closure) runs up to max_iter quasi-Newton
iterations on the flattened parameters, the two-loop recursion over the last history_size
(s, y) pairs giving the direction, with a fixed step or a strong-Wolfe line search
(Nocedal & Wright, Numerical Optimization, 2nd ed., algorithms 3.5/3.6, cubic interpolation
3.59). Every loop is bounded by max_iter, max_eval or max_ls."""
import math
import numbers
from collections import defaultdict

from .. import _C
from ..autograd import no_grad
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _dot(x, y):
    return float((x * y).sum())


def _cubic_min(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to bounds."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    if x1 == x2:  # a degenerate bracket: no cubic through one point
        return (lo + hi) / 2.0
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(d2_square)
    den = (g2 - g1 + 2 * d2) if x1 <= x2 else (g1 - g2 + 2 * d2)
    if den == 0:
        return (lo + hi) / 2.0
    if x1 <= x2:
        pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / den)
    else:
        pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / den)
    return min(max(pos, lo), hi)


def _strong_wolfe(obj, x0, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """(loss, grad, step, evaluations) of a step t along d meeting the strong Wolfe
    conditions: bracketing, then zooming by cubic interpolation (at most max_ls evaluations)."""
    d_norm = float(d.abs().max())
    f_new, g_new = obj(x0, t, d)
    evals, gtd_new = 1, _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter = False, 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, done = [t], [f_new], [g_new], True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        t_next = _cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                            bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new, gtd_new
        t = t_next
        f_new, g_new = obj(x0, t, d)
        evals, gtd_new = evals + 1, _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
        bracket_gtd = [gtd, gtd_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_min(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1],
                       bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = obj(x0, t, d)
        evals, gtd_new = evals + 1, _dot(g_new, d)
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high] = t, f_new, g_new
            bracket_gtd[high] = gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low] = t, f_new, g_new
            bracket_gtd[low] = gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


def _positive_int(v, op, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v <= 0:
        raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    return int(v)


class LBFGS(Optimizer):
    """Limited-memory BFGS. step(closure): closure re-evaluates the model, clears and
    recomputes the gradients (loss.backward()) and returns the loss."""

    def __init__(self, learning_rate=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        op = "LBFGS"
        if isinstance(parameters, _C.Tensor):
            raise TypeError(f"{op}: parameters must be an iterable of Tensors or groups, got a "
                            "Tensor")
        self.max_iter = _positive_int(max_iter, op, "max_iter")
        self.max_eval = max(1, self.max_iter * 5 // 4) if max_eval is None else \
            _positive_int(max_eval, op, "max_eval")
        self.history_size = _positive_int(history_size, op, "history_size")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"{op}: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(tolerance_change)
        self.line_search_fn, self.learning_rate = line_search_fn, float(learning_rate)
        super().__init__(1.0, parameters, weight_decay, grad_clip, name)
        self._params = self._parameter_list
        self.state = defaultdict(dict)

    def state_dict(self):
        """{'state': the iteration state (direction, step, (s, y) history...)}."""
        return {"state": dict(self.state)}

    def set_state_dict(self, state_dict):
        self.state = defaultdict(dict, state_dict.get("state", {}))

    def _flat_grad(self):
        import oar
        return oar.concat([(p.grad if p.grad is not None else oar.zeros_like(p)).reshape([-1])
                           for p in self._params], axis=0)

    def _add_step(self, t, d):
        offset = 0
        for p in self._params:
            n = p.size
            p.copy_(p + d[offset:offset + n].reshape(p.shape).astype(p.dtype) * t)
            offset += n

    def _evaluate_at(self, closure, x0, t, d):
        self._add_step(t, d)
        with _enable_grad():
            loss = float(closure())
        g = self._flat_grad()
        for p, v in zip(self._params, x0):
            p.copy_(v)
        return loss, g

    @no_grad()
    def step(self, closure):
        """Up to max_iter iterations; returns the loss closure gave at the start."""
        if not callable(closure):
            raise TypeError("LBFGS.step: closure must be a callable returning the loss")
        state = self.state
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with _enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if float(g.abs().max()) <= self.tolerance_grad:
            return orig_loss
        d, t = state.get("d"), state.get("alpha")
        old_y, old_s, ro = state.get("old_yk"), state.get("old_sk"), state.get("ro")
        h_diag, prev_g, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), \
            state.get("prev_loss")
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_y, old_s, ro, h_diag = -g, [], [], [], 1.0
            else:
                y, s = g - prev_g, d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_y) == self.history_size:
                        old_y.pop(0), old_s.pop(0), ro.pop(0)
                    old_y.append(y), old_s.append(s), ro.append(1.0 / ys)
                    h_diag = ys / _dot(y, y)
                q, al = -g, [0.0] * len(old_y)
                for i in range(len(old_y) - 1, -1, -1):  # bounded by history_size
                    al[i] = _dot(old_s[i], q) * ro[i]
                    q = q - old_y[i] * al[i]
                d = q * h_diag
                for i in range(len(old_y)):
                    d = d + old_s[i] * (al[i] - _dot(old_y[i], d) * ro[i])
            prev_g, prev_loss = g.clone(), loss
            g_l1 = float(g.abs().sum())
            t = (min(1.0, 1.0 / g_l1 if g_l1 > 0 else math.inf) * self.learning_rate
                 if state["n_iter"] == 1 else self.learning_rate)
            gtd = _dot(g, d)
            if gtd > -self.tolerance_change:
                break
            ls_evals = 0
            if self.line_search_fn == "strong_wolfe":
                x0 = [p.clone() for p in self._params]
                loss, g, t, ls_evals = _strong_wolfe(
                    lambda x, step, dd: self._evaluate_at(closure, x, step, dd), x0, t, d, loss,
                    g, gtd)
                self._add_step(t, d)
                opt_cond = float(g.abs().max()) <= self.tolerance_grad
            else:
                self._add_step(t, d)
                opt_cond = False
                if n_iter != self.max_iter:
                    with _enable_grad():
                        loss = float(closure())
                    g = self._flat_grad()
                    opt_cond = float(g.abs().max()) <= self.tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if opt_cond or float((d * t).abs().max()) <= self.tolerance_change or \
                    abs(loss - prev_loss) < self.tolerance_change or evals >= self.max_eval:
                break
        state.update({"d": d, "alpha": t, "old_yk": old_y, "old_sk": old_s, "ro": ro,
                      "H_diag": h_diag, "prev_flat_grad": prev_g, "prev_loss": prev_loss})
        return orig_loss

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        raise NotImplementedError("LBFGS.minimize: L-BFGS needs a closure; call "
                                  "step(closure) (Paddle's LBFGS does not support minimize)")


def _enable_grad():
    from ..autograd import enable_grad
    return enable_grad()
