"""Learning-rate schedulers (Paddle's oar.optimizer.lr), formulas as Paddle's docs.

A scheduler starts at last_epoch = 0 with last_lr = get_lr(); each step() advances
last_epoch by one (or sets it) and recomputes last_lr; calling it returns last_lr.
"""

import math

import numpy as np

from .. import _trace_state


class LRScheduler:
    """Base class: subclasses implement get_lr() from self.base_lr and self.last_epoch."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a subclass's own step() is replayed in converted training steps too
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_replayed", False):
            cls.step = _trace_state.replayed_in_converted_steps(step)

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise TypeError(
                f"{type(self).__name__}: learning_rate must be a float, got "
                f"{type(learning_rate).__name__}"
            )
        self.base_lr = float(learning_rate)
        self.last_lr = float(learning_rate)
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._var_name = None
        self.step()

    def __call__(self):
        return self.last_lr

    @_trace_state.replayed_in_converted_steps
    def step(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed() if closed is not None else self.get_lr()
        if self.verbose:
            print(
                f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to "
                f"{self.last_lr}."
            )

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__}.get_lr")

    # State: every plain attribute except callables and nested schedulers.
    def state_dict(self):
        self._state_keys()
        out = {}
        for k in self.keys:
            v = self.__dict__[k]
            if isinstance(v, np.generic):
                v = v.item()
            out[k] = v
        return out

    def _state_keys(self):
        self.keys = ["last_epoch", "last_lr"]

    def set_state_dict(self, state_dict):
        self._state_keys()
        for k in self.keys:
            if k in state_dict:
                self.__dict__[k] = state_dict[k]
        missing = [k for k in self.keys if k not in state_dict]
        if missing:
            raise ValueError(f"{type(self).__name__}.set_state_dict: missing keys {missing}")

    set_dict = set_state_dict
    load_state_dict = set_state_dict


def _positive(cls, name, v, allow_zero=False):
    if (
        not isinstance(v, (int, float))
        or isinstance(v, bool)
        or v < 0
        or (v == 0 and not allow_zero)
    ):
        raise ValueError(
            f"{cls}: {name} must be a {'non-negative' if allow_zero else 'positive'} "
            f"number, got {v!r}"
        )


class NoamDecay(LRScheduler):
    """lr * d_model^-0.5 * min(epoch^-0.5, epoch * warmup_steps^-1.5) (epoch 0: first term 1)."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        _positive("NoamDecay", "d_model", d_model)
        _positive("NoamDecay", "warmup_steps", warmup_steps)
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        a = 1 if self.last_epoch == 0 else self.last_epoch**-0.5
        b = self.warmup_steps**-1.5 * self.last_epoch
        return self.base_lr * (self.d_model**-0.5) * min(a, b)


class PiecewiseDecay(LRScheduler):
    """values[i] while epoch < boundaries[i]; values[-1] after the last boundary."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        boundaries, values = list(boundaries), [float(v) for v in values]
        if len(values) != len(boundaries) + 1:
            raise ValueError(
                f"PiecewiseDecay: needs len(values) == len(boundaries) + 1, got "
                f"{len(values)} values and {len(boundaries)} boundaries"
            )
        if any(b2 <= b1 for b1, b2 in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseDecay: boundaries must increase, got {boundaries}")
        self.boundaries, self.values = boundaries, values
        super().__init__(values[0], last_epoch, verbose)

    def get_lr(self):
        for i, b in enumerate(self.boundaries):
            if self.last_epoch < b:
                return self.values[i]
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    """lr * exp(-gamma * epoch)"""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        _positive("NaturalExpDecay", "gamma", gamma, allow_zero=True)
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-1 * self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """lr / (1 + gamma * epoch)"""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        _positive("InverseTimeDecay", "gamma", gamma, allow_zero=True)
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """(lr - end_lr) * (1 - epoch / decay_steps)^power + end_lr; with cycle, decay_steps grows
    to the next multiple of itself instead of the rate staying at end_lr."""

    def __init__(
        self,
        learning_rate,
        decay_steps,
        end_lr=0.0001,
        power=1.0,
        cycle=False,
        last_epoch=-1,
        verbose=False,
    ):
        if not isinstance(decay_steps, int) or decay_steps <= 0:
            raise ValueError(
                f"PolynomialDecay: decay_steps must be a positive integer, got {decay_steps!r}"
            )
        self.decay_steps, self.end_lr = decay_steps, float(end_lr)
        self.power, self.cycle = float(power), bool(cycle)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            div = math.ceil(float(self.last_epoch) / float(self.decay_steps))
            if self.last_epoch == 0:
                div = 1
            steps = self.decay_steps * div
        else:
            epoch = min(self.last_epoch, self.decay_steps)
        return (self.base_lr - self.end_lr) * (
            (1 - float(epoch) / float(steps)) ** self.power
        ) + self.end_lr


class LinearWarmup(LRScheduler):
    """Linear from start_lr to end_lr over warmup_steps, then learning_rate (a float, or a
    scheduler stepped from 0 after the warmup)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1, verbose=False):
        if not isinstance(learning_rate, (float, int, LRScheduler)) or isinstance(
            learning_rate, bool
        ):
            raise TypeError(
                f"LinearWarmup: learning_rate must be a float or an LRScheduler, got "
                f"{type(learning_rate).__name__}"
            )
        if not isinstance(warmup_steps, int) or warmup_steps <= 0:
            raise ValueError(
                f"LinearWarmup: warmup_steps must be a positive integer, got {warmup_steps!r}"
            )
        self.learning_rate = learning_rate
        self.warmup_steps, self.start_lr, self.end_lr = warmup_steps, float(start_lr), float(end_lr)
        super().__init__(self.start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * float(self.last_epoch) / float(
                self.warmup_steps
            ) + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)

    def state_dict(self):
        out = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            out["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict):
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler) and "LinearWarmup_LR" in state_dict:
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])

    set_dict = set_state_dict
    load_state_dict = set_state_dict


class ExponentialDecay(LRScheduler):
    """lr * gamma^epoch"""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        if float(gamma) <= 0:
            raise ValueError(f"ExponentialDecay: gamma must be positive, got {gamma}")
        self.gamma = float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * (self.gamma**self.last_epoch)


class MultiStepDecay(LRScheduler):
    """lr * gamma^(number of milestones <= epoch)"""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        milestones = list(milestones)
        if any(b <= a for a, b in zip(milestones, milestones[1:])):
            raise ValueError(f"MultiStepDecay: milestones must increase, got {milestones}")
        if float(gamma) >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be < 1.0, got {gamma}")
        self.milestones, self.gamma = milestones, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        for i, m in enumerate(self.milestones):
            if self.last_epoch < m:
                return self.base_lr * (self.gamma**i)
        return self.base_lr * (self.gamma ** len(self.milestones))


class StepDecay(LRScheduler):
    """lr * gamma^(epoch // step_size)"""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepDecay: step_size must be a positive integer, got {step_size!r}")
        if float(gamma) >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0, got {gamma}")
        self.step_size, self.gamma = step_size, float(gamma)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * (self.gamma ** (self.last_epoch // self.step_size))


class LambdaDecay(LRScheduler):
    """lr * lr_lambda(epoch)"""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("LambdaDecay: lr_lambda must be callable")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    """last_lr * lr_lambda(epoch) for epoch > 0 (lr at epoch 0)."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError("MultiplicativeDecay: lr_lambda must be callable")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch > 0:
            return self.last_lr * self.lr_lambda(self.last_epoch)
        return self.base_lr


class CosineAnnealingDecay(LRScheduler):
    """eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, computed recursively
    as Paddle (step(epoch) uses this closed form)."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(
                f"CosineAnnealingDecay: T_max must be a positive integer, got {T_max!r}"
            )
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return self.base_lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return (
                self.last_lr
                + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
            )
        return (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        ) * (self.last_lr - self.eta_min) + self.eta_min

    def _get_closed_form_lr(self):
        return (
            self.eta_min
            + (self.base_lr - self.eta_min)
            * (1 + math.cos(math.pi * self.last_epoch / self.T_max))
            / 2
        )


class OneCycleLR(LRScheduler):
    """Warm up from max_lr / divide_factor to max_lr over phase_pct of total_steps, then
    anneal (cos or linear) to end_learning_rate; three_phase mirrors the warmup first."""

    def __init__(
        self,
        max_learning_rate,
        total_steps,
        divide_factor=25.0,
        end_learning_rate=0.0001,
        phase_pct=0.3,
        anneal_strategy="cos",
        three_phase=False,
        last_epoch=-1,
        verbose=False,
    ):
        _positive("OneCycleLR", "max_learning_rate", max_learning_rate)
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(
                f"OneCycleLR: total_steps must be a positive integer, got {total_steps!r}"
            )
        if not 0.0 <= phase_pct < 1.0:
            raise ValueError(f"OneCycleLR: phase_pct must be in [0, 1), got {phase_pct}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '{anneal_strategy}'"
            )
        self.total_steps = total_steps
        initial_lr = max_learning_rate / float(divide_factor)
        if three_phase:
            self._start_steps = [
                0,
                float(phase_pct * total_steps) - 1,
                float(2 * phase_pct * total_steps) - 2,
                total_steps - 1,
            ]
            self._lr_config = [initial_lr, max_learning_rate, initial_lr, end_learning_rate]
        else:
            self._start_steps = [0, float(phase_pct * total_steps) - 1, total_steps - 1]
            self._lr_config = [initial_lr, max_learning_rate, end_learning_rate]
        self._steps_size = [
            self._start_steps[i + 1] - self._start_steps[i]
            for i in range(len(self._start_steps) - 1)
        ]
        self._steps_size.append(self._steps_size[-1])
        self.anneal_strategy = anneal_strategy
        super().__init__(initial_lr, last_epoch, verbose)

    @staticmethod
    def _cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped {step} times, more than total_steps {self.total_steps}"
            )
        fn = self._cos if self.anneal_strategy == "cos" else self._linear
        for i, (end_step, size) in enumerate(zip(self._start_steps[1:], self._steps_size)):
            if step <= end_step or i == len(self._lr_config) - 2:
                pct = (step - self._start_steps[i]) / size
                return fn(self._lr_config[i], self._lr_config[i + 1], pct)
        return self._lr_config[-1]


class CyclicLR(LRScheduler):
    """Cycles between base and max learning rate (triangular, triangular2 or exp_range)."""

    def __init__(
        self,
        base_learning_rate,
        max_learning_rate,
        step_size_up,
        step_size_down=None,
        mode="triangular",
        exp_gamma=1.0,
        scale_fn=None,
        scale_mode="cycle",
        last_epoch=-1,
        verbose=False,
    ):
        _positive("CyclicLR", "max_learning_rate", max_learning_rate)
        _positive("CyclicLR", "base_learning_rate", base_learning_rate, allow_zero=True)
        if not isinstance(step_size_up, int) or step_size_up <= 0:
            raise ValueError(
                f"CyclicLR: step_size_up must be a positive integer, got {step_size_up!r}"
            )
        if step_size_down is not None and (
            not isinstance(step_size_down, int) or step_size_down <= 0
        ):
            raise ValueError(
                f"CyclicLR: step_size_down must be a positive integer, got {step_size_down!r}"
            )
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(
                f"CyclicLR: mode must be triangular, triangular2 or exp_range, got '{mode}'"
            )
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(
                f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got '{scale_mode}'"
            )
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.cycle_size = up + down
        self.step_up_pct = up / self.cycle_size
        self.max_lr = float(max_learning_rate)
        self.amplitude = self.max_lr - base_learning_rate
        self.mode, self.exp_gamma = mode, float(exp_gamma)
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
            self._scale_fn = None
        else:
            self.scale_mode, self._scale_fn = scale_mode, scale_fn
        super().__init__(base_learning_rate, last_epoch, verbose)

    def scale_fn(self, x):
        if self._scale_fn is not None:
            return self._scale_fn(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.exp_gamma**x

    def get_lr(self):
        it = self.last_epoch
        cycle = 1 + it // self.cycle_size
        pct = 1.0 + it / self.cycle_size - cycle
        if pct <= self.step_up_pct:
            factor = pct / self.step_up_pct
        else:
            factor = (1 - pct) / (1 - self.step_up_pct)
        height = self.amplitude * factor
        return self.base_lr + height * self.scale_fn(cycle if self.scale_mode == "cycle" else it)


class ReduceOnPlateau(LRScheduler):
    """Multiplies the rate by factor when `metrics` (given to step) has not improved for
    patience epochs; then waits cooldown epochs; never below min_lr."""

    def __init__(
        self,
        learning_rate,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0,
        epsilon=1e-8,
        verbose=False,
    ):
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceOnPlateau: mode must be 'min' or 'max', got '{mode}'")
        if float(factor) >= 1.0:
            raise ValueError(f"ReduceOnPlateau: factor must be < 1.0, got {factor}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs', got '{threshold_mode}'"
            )
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise TypeError("ReduceOnPlateau: learning_rate must be a float")
        self.mode, self.factor, self.patience = mode, float(factor), int(patience)
        self.threshold, self.threshold_mode = float(threshold), threshold_mode
        self.cooldown, self.min_lr, self.epsilon = int(cooldown), float(min_lr), float(epsilon)
        self.cooldown_counter, self.best, self.num_bad_epochs = 0, None, 0
        self.last_epoch, self.last_lr, self.base_lr = 0, float(learning_rate), float(learning_rate)
        self.verbose = verbose

    def _state_keys(self):
        self.keys = ["cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr"]

    def step(self, metrics, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if hasattr(metrics, "numpy") or isinstance(metrics, np.ndarray):  # Paddle takes both
            arr = np.asarray(metrics.numpy() if hasattr(metrics, "numpy") else metrics)
            if arr.size != 1:
                raise ValueError(
                    f"ReduceOnPlateau.step: metrics must have one element, got shape "
                    f"{list(arr.shape)}"
                )
            current = float(arr.reshape(()))
        elif isinstance(metrics, (int, float, np.number)) and not isinstance(metrics, bool):
            current = float(metrics)
        else:
            raise TypeError(
                f"ReduceOnPlateau.step: metrics must be a number or a 1-element "
                f"Tensor, got {type(metrics).__name__}"
            )
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print(
                        f"Epoch {self.last_epoch}: ReduceOnPlateau set learning rate to "
                        f"{self.last_lr}."
                    )

    def _is_better(self, current, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return current < best - best * self.threshold
        if self.mode == "min":
            return current < best - self.threshold
        if self.threshold_mode == "rel":
            return current > best + best * self.threshold
        return current > best + self.threshold

    def get_lr(self):
        return self.last_lr


class LinearLR(LRScheduler):
    """lr * factor, the factor moving linearly from start_factor to end_factor over
    total_steps (computed multiplicatively as Paddle), then constant."""

    def __init__(
        self,
        learning_rate,
        total_steps,
        start_factor=1.0 / 3,
        end_factor=1.0,
        last_epoch=-1,
        verbose=False,
    ):
        if not 0.0 < start_factor <= 1.0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0.0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(
                f"LinearLR: total_steps must be a positive integer, got {total_steps!r}"
            )
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        self.total_steps = total_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return self.base_lr * self.start_factor
        if self.last_epoch > self.total_steps:
            return self.last_lr
        base = self.total_steps * self.start_factor
        cur = self.end_factor - self.start_factor
        return self.last_lr * (1.0 + cur / (base + (self.last_epoch - 1) * cur))

    def _get_closed_form_lr(self):
        e = min(self.last_epoch, self.total_steps)
        return self.base_lr * (
            self.start_factor + (self.end_factor - self.start_factor) * e / self.total_steps
        )


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from lr to eta_min over T_i epochs, restarting at lr; the period
    starts at T_0 and is multiplied by T_mult after each restart."""

    def __init__(self, learning_rate, T_0, T_mult=1, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(
                f"CosineAnnealingWarmRestarts: T_0 must be a positive integer, got {T_0!r}"
            )
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(
                f"CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got {T_mult!r}"
            )
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, float(eta_min)
        self.T_cur = last_epoch
        super().__init__(learning_rate, last_epoch, verbose)

    def _state_keys(self):
        self.keys = ["last_epoch", "last_lr", "T_cur", "T_i"]

    def get_lr(self):
        return (
            self.eta_min
            + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        )

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult**n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self.last_lr = self.get_lr()
        if self.verbose:
            print(
                f"Epoch {self.last_epoch}: CosineAnnealingWarmRestarts set learning rate to "
                f"{self.last_lr}."
            )


# ---- Paddle's functional decays: in dynamic mode each returns its scheduler
def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """NoamDecay(d_model, warmup_steps, learning_rate)."""
    return NoamDecay(d_model, warmup_steps, learning_rate=learning_rate)


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """ExponentialDecay(learning_rate, decay_rate) (decay_steps and staircase are static-mode
    arguments, as in Paddle's dynamic mode)."""
    return ExponentialDecay(learning_rate, decay_rate)


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """NaturalExpDecay(learning_rate, decay_rate)."""
    return NaturalExpDecay(learning_rate, decay_rate)


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """InverseTimeDecay(learning_rate, decay_rate)."""
    return InverseTimeDecay(learning_rate, decay_rate)


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    """PolynomialDecay(learning_rate, decay_steps, end_learning_rate, power, cycle)."""
    return PolynomialDecay(learning_rate, decay_steps, end_learning_rate, power, cycle)


def piecewise_decay(boundaries, values):
    """PiecewiseDecay(boundaries, values)."""
    return PiecewiseDecay(boundaries, values)


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """CosineAnnealingDecay(learning_rate, epochs)."""
    return CosineAnnealingDecay(learning_rate, epochs)


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """LinearWarmup(learning_rate, warmup_steps, start_lr, end_lr)."""
    return LinearWarmup(learning_rate, warmup_steps, start_lr, end_lr)
