"""NAdam, RAdam, Rprop and ASGD: updates written with ops (under no_grad) following the
formulas of Paddle 3.3's docs. Their state lives in the base class's float32 accumulators, so
state_dict / set_state_dict work as for the fused optimizers."""
import math
import numbers

from .. import _C
from .optimizer import Optimizer, _check_betas, _check_eps

_ops = _C.ops

__all__ = ["NAdam", "RAdam", "Rprop", "ASGD"]


def _f32(t):
    return t if t.dtype == _C.DataType.float32 else _ops.cast(t, _C.DataType.float32)


def _write(p, value):
    p.copy_(value)


def _decayed(g, p, wd):
    """The gradient with the coupled L2 term wd * p."""
    g = _f32(g)
    return g + _f32(p) * wd if wd else g


class NAdam(Optimizer):
    """Adam with Nesterov momentum and the momentum-decay schedule
    mu_t = beta1 (1 - 0.5 * 0.96^(t psi))."""

    _acc_names = ("moment1", "moment2", "mu_product")
    _acc_init = {"mu_product": 1.0}

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1.0e-8,
                 momentum_decay=0.004, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_betas("NAdam", beta1=beta1, beta2=beta2)
        _check_eps("NAdam", epsilon)
        if not float(momentum_decay) >= 0:
            raise ValueError(f"NAdam: momentum_decay must be >= 0, got {momentum_decay}")
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._momentum_decay = float(momentum_decay)

    def _update(self, group, params, grads, lrs, wds):
        b1, b2 = self._hp(group, "beta1"), self._hp(group, "beta2")
        eps, psi, t = self._hp(group, "epsilon"), self._hp(group, "momentum_decay"), self._step_count
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        for p, g, lr, wd in zip(params, grads, lrs, wds):
            g = _decayed(g, p, wd)
            m, v = self._accumulator("moment1", p), self._accumulator("moment2", p)
            prod = self._accumulator("mu_product", p)
            prod.copy_(prod * mu)  # prod_{i<=t} mu_i (one value per element, as the state)
            m.copy_(m * b1 + g * (1 - b1))
            v.copy_(v * b2 + g * g * (1 - b2))
            m_hat = m * mu_next / (1 - prod * mu_next) + g * (1 - mu) / (1 - prod)
            v_hat = v / (1 - b2 ** t)
            _write(p, _f32(p) - m_hat * lr / (v_hat.sqrt() + eps))


class RAdam(Optimizer):
    """Adam whose adaptive step is switched on (and rectified) once the variance of the
    adaptive learning rate is tractable: rho_t > 5."""

    _acc_names = ("moment1", "moment2")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1.0e-8,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_betas("RAdam", beta1=beta1, beta2=beta2)
        _check_eps("RAdam", epsilon)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _update(self, group, params, grads, lrs, wds):
        b1, b2, eps, t = (self._hp(group, "beta1"), self._hp(group, "beta2"),
                          self._hp(group, "epsilon"), self._step_count)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        rect = (math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                if rho_t > 5 else None)
        for p, g, lr, wd in zip(params, grads, lrs, wds):
            g = _decayed(g, p, wd)
            m, v = self._accumulator("moment1", p), self._accumulator("moment2", p)
            m.copy_(m * b1 + g * (1 - b1))
            v.copy_(v * b2 + g * g * (1 - b2))
            m_hat = m / (1 - b1 ** t)
            if rect is None:
                step = m_hat * lr
            else:
                step = m_hat * (lr * rect * math.sqrt(1 - b2 ** t)) / (v.sqrt() + eps)
            _write(p, _f32(p) - step)


class Rprop(Optimizer):
    """Resilient backpropagation: a step size per element that grows by etas[1] while the
    gradient keeps its sign and shrinks by etas[0] (skipping that update) when it flips,
    within learning_rate_range."""

    _acc_names = ("prev_grad", "step_size")

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-5, 50), parameters=None,
                 etas=(0.5, 1.2), grad_clip=None, multi_precision=False, name=None):
        if not isinstance(learning_rate, numbers.Real) or isinstance(learning_rate, bool):
            raise TypeError(f"Rprop: learning_rate must be a float, got "
                            f"{type(learning_rate).__name__}")
        try:
            lo, hi = (float(v) for v in learning_rate_range)
            eta_neg, eta_pos = (float(v) for v in etas)
        except (TypeError, ValueError):
            raise TypeError(f"Rprop: learning_rate_range and etas must be pairs of floats, got "
                            f"{learning_rate_range!r} and {etas!r}") from None
        if not 0.0 < lo <= float(learning_rate) <= hi:
            raise ValueError(f"Rprop: need 0 < learning_rate_range[0] <= learning_rate <= "
                             f"learning_rate_range[1], got {learning_rate} and "
                             f"{learning_rate_range}")
        if not 0.0 < eta_neg < 1.0 < eta_pos:
            raise ValueError(f"Rprop: need 0 < etas[0] < 1 < etas[1], got {etas}")
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        self._acc_init = {"step_size": float(learning_rate)}  # each element's first step
        self._lr_min, self._lr_max, self._eta_neg, self._eta_pos = lo, hi, eta_neg, eta_pos

    def _update(self, group, params, grads, lrs, wds):
        import oar
        for p, g in zip(params, grads):
            g = _f32(g)
            prev, size = self._accumulator("prev_grad", p), self._accumulator("step_size", p)
            sign = (g * prev).sign()
            factor = oar.where(sign > 0, oar.full_like(sign, self._eta_pos),
                               oar.where(sign < 0, oar.full_like(sign, self._eta_neg),
                                         oar.ones_like(sign)))
            size.copy_((size * factor).clip(self._lr_min, self._lr_max))
            g = oar.where(sign < 0, oar.zeros_like(g), g)
            _write(p, _f32(p) - g.sign() * size)
            prev.copy_(g)


class ASGD(Optimizer):
    """Averaged stochastic gradient (Paddle's form): d tracks the sum of the last batch_num
    gradients of each parameter, and x -= lr * (d / min(m + 1, batch_num) + wd * x)."""

    _acc_names = ("d",)

    def __init__(self, learning_rate=0.001, batch_num=1, parameters=None, weight_decay=None,
                 grad_clip=None, multi_precision=False, name=None):
        if isinstance(batch_num, bool) or not isinstance(batch_num, numbers.Integral) or \
                batch_num <= 0:
            raise ValueError(f"ASGD: batch_num must be a positive int, got {batch_num!r}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._batch_num = int(batch_num)
        self._ys = {}  # (id(param), slot) -> the gradient seen at that slot (made on first use)

    def _update(self, group, params, grads, lrs, wds):
        m = self._step_count - 1
        slot, count = m % self._batch_num, min(m + 1, self._batch_num)
        for p, g, lr, wd in zip(params, grads, lrs, wds):
            g = _f32(g)
            d = self._accumulator("d", p)
            y = self._ys.get((id(p), slot))
            d.copy_(d + g if y is None else d - y + g)
            self._ys[(id(p), slot)] = g.clone()
            x = _f32(p)
            _write(p, x - (d / count + x * wd) * lr)
