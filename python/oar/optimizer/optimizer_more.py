"""NAdam, RAdam, Rprop and ASGD: fused C++ updates (oar._C._nadam_update...,
phi_kernels/cpu/optimizer_kernels_more.cc) following the formulas of Paddle 3.3's docs; what
depends on the step count is computed in the kernel from it, so a DistModel program can record
the update (Note [DistModel]). Their state lives in the base class's accumulators (float64 for
float64 parameters, float32 otherwise), so state_dict / set_state_dict work as for the other
fused optimizers."""
import numbers

from .. import _C
from .optimizer import Optimizer, _check_betas, _check_eps

__all__ = ["NAdam", "RAdam", "Rprop", "ASGD"]


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

    def _update(self, group, params, grads, lrs, wds, step):
        acc = self._accumulator
        _C._nadam_update(params, grads, [acc("moment1", p) for p in params], [acc("moment2", p) for p in params],
                         [acc("mu_product", p) for p in params], lrs, wds, self._hp(group, "beta1"),
                         self._hp(group, "beta2"), self._hp(group, "epsilon"), self._hp(group, "momentum_decay"),
                         step)


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

    def _update(self, group, params, grads, lrs, wds, step):
        acc = self._accumulator
        _C._radam_update(params, grads, [acc("moment1", p) for p in params], [acc("moment2", p) for p in params],
                         lrs, wds, self._hp(group, "beta1"), self._hp(group, "beta2"), self._hp(group, "epsilon"),
                         step)


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

    def _update(self, group, params, grads, lrs, wds, step):
        acc = self._accumulator
        _C._rprop_update(params, grads, [acc("prev_grad", p) for p in params], [acc("step_size", p) for p in params],
                         lrs, wds, self._eta_neg, self._eta_pos, self._lr_min, self._lr_max)


class ASGD(Optimizer):
    """Averaged stochastic gradient (Paddle's form): d tracks the sum of the last batch_num
    gradients of each parameter, and x -= lr * (d / min(m + 1, batch_num) + wd * x)."""

    _acc_names = ("d", "y")

    def __init__(self, learning_rate=0.001, batch_num=1, parameters=None, weight_decay=None,
                 grad_clip=None, multi_precision=False, name=None):
        if isinstance(batch_num, bool) or not isinstance(batch_num, numbers.Integral) or \
                batch_num <= 0:
            raise ValueError(f"ASGD: batch_num must be a positive int, got {batch_num!r}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._batch_num = int(batch_num)

    def _acc_shape(self, name, shape):
        """y holds the last batch_num gradients: [batch_num, *shape] (Paddle's y)."""
        return [self._batch_num] + list(shape) if name == "y" else list(shape)

    def _update(self, group, params, grads, lrs, wds, step):
        acc = self._accumulator
        _C._asgd_update(params, grads, [acc("d", p) for p in params], [acc("y", p) for p in params], lrs, wds,
                        self._batch_num, step)
