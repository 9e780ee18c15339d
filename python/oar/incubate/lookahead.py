"""LookAhead (Zhang et al. 2019): the inner optimizer's fast weights; every k steps the slow
weights move alpha of the way to them and the fast weights restart from there."""
import oar
from oar import _trace_state


class LookAhead:
    """LookAhead(inner_optimizer, alpha=0.5, k=5). Parameters without a gradient in a step are
    left alone, as Paddle does."""

    def __init__(self, inner_optimizer, alpha=0.5, k=5, name=None):
        if inner_optimizer is None or not hasattr(inner_optimizer, "step"):
            raise TypeError("LookAhead: inner_optimizer must be an optimizer, got "
                            f"{type(inner_optimizer).__name__}")
        if not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
            raise ValueError(f"LookAhead: alpha must be in [0, 1], got {alpha!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"LookAhead: k must be a positive int, got {k!r}")
        self.inner_optimizer, self.alpha, self.k = inner_optimizer, float(alpha), k
        self._parameter_list = list(inner_optimizer._parameter_list)
        self._slow = {}
        self._step = 0

    def __getattr__(self, name):  # get_lr, set_lr, state_dict... of the inner optimizer
        if name == "inner_optimizer":
            raise AttributeError(name)
        return getattr(self.inner_optimizer, name)

    @oar.no_grad()
    def _lookahead(self):
        self._step += 1
        sync = self._step % self.k == 0
        for p in self._parameter_list:
            if p.stop_gradient or p.grad is None:
                continue
            key = id(p)
            if self._step == 1 or key not in self._slow:
                self._slow[key] = p.detach().clone()
            if sync:
                slow = self._slow[key]
                new = self.alpha * p + (1.0 - self.alpha) * slow
                slow.set_value(new)
                p.set_value(new)

    @_trace_state.eager_in_conversions
    def step(self):
        self.inner_optimizer.step()
        self._lookahead()

    @_trace_state.eager_in_conversions
    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        out = self.inner_optimizer.minimize(loss, startup_program, parameters, no_grad_set)
        self._lookahead()
        return out

    def clear_grad(self, set_to_zero=True):
        self.inner_optimizer.clear_grad(set_to_zero)
