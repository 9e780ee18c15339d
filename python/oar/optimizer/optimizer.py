"""Optimizers. Each step() makes one C++ call per parameter group that updates every
parameter of the group in a single pass over its memory (no per-parameter chain of small
ops). Learning rates and L2 coefficients are resolved per parameter in Python (global or
scheduler LR x group scale x ParamAttr learning_rate; group weight_decay, else ParamAttr
regularizer, else the optimizer's weight_decay) and handed to the kernel as lists."""

import warnings

import numpy as np

from .. import _C
from ..autograd import no_grad
from ..base import framework as _framework
from ..regularizer import L1Decay, L2Decay, WeightDecayRegularizer

_ops = _C.ops


def _acc_dtype(p):
    """The dtype of a parameter's optimizer state: float64 for float64 parameters, float32 for
    the others (16-bit ones update through float32 state), as Paddle's accumulators."""
    return _C.DataType.float64 if p.dtype == _C.DataType.float64 else _C.DataType.float32


def _as_regularizer(wd, where):
    if wd is None:
        return None
    if isinstance(wd, WeightDecayRegularizer):
        return wd
    if isinstance(wd, (int, float)) and not isinstance(wd, bool):
        if wd < 0:
            raise ValueError(f"{where}: weight_decay must be >= 0, got {wd}")
        return L2Decay(float(wd))
    raise TypeError(
        f"{where}: weight_decay must be a float, L2Decay or L1Decay, got {type(wd).__name__}"
    )


class Optimizer:
    """Base class: parameter groups, learning rate (float or LRScheduler), weight decay,
    gradient clipping, state_dict. Subclasses name their accumulators and implement _update."""

    _acc_names = ()
    _acc_init = {}
    # Paddle's bias-correction accumulators, (name, hyperparameter): state_dict() writes
    # '{param}_{name}_0', a float32 [1] tensor holding hp^(t + 1) after the parameter's t-th
    # update, as Paddle's beta1_pow_acc / beta2_pow_acc; set_state_dict() takes the step
    # counts from them when the state has no '@step' (a Paddle checkpoint). Note
    # [Per-parameter step counts].
    _pow_accs = ()
    # older Oar names of accumulators renamed to Paddle's: {name: old name}, still read
    _acc_aliases = {}

    def __init__(
        self,
        learning_rate=0.001,
        parameters=None,
        weight_decay=None,
        grad_clip=None,
        name=None,
        multi_precision=False,
    ):
        cls = type(self).__name__
        if parameters is None and _framework.in_static_mode():
            parameters = []  # minimize() takes the program's trainable parameters
        if parameters is None:
            raise ValueError(
                f"{cls}: 'parameters' is required in dynamic graph mode (pass model.parameters())"
            )
        from .lr import LRScheduler

        if isinstance(learning_rate, LRScheduler):
            pass
        elif isinstance(learning_rate, (int, float)) and not isinstance(learning_rate, bool):
            if learning_rate < 0:
                raise ValueError(f"{cls}: learning_rate must be >= 0, got {learning_rate}")
            learning_rate = float(learning_rate)
        else:
            raise TypeError(
                f"{cls}: learning_rate must be a float or an LRScheduler, got "
                f"{type(learning_rate).__name__}"
            )
        if grad_clip is not None and not callable(grad_clip):
            raise TypeError(
                f"{cls}: grad_clip must be a ClipGradBy* object, got {type(grad_clip).__name__}"
            )
        self._learning_rate = learning_rate
        self.regularization = _as_regularizer(weight_decay, cls)
        self._grad_clip = grad_clip
        self._name = name
        # acc name -> {id(param): Tensor}, float64 for float64 parameters and float32 for the
        # others (16-bit ones included), as Paddle's accumulators
        self._accumulators = {}
        # _step_count counts step() calls; a parameter's own update count (what bias
        # corrections use, as Paddle's per-parameter beta-power accumulators) is that less
        # the steps it sat out without a gradient: _step_lag[id(p)].
        self._step_count = 0
        self._step_lag = {}
        self._param_groups = []
        parameters = list(parameters)
        if parameters and isinstance(parameters[0], dict):
            for g in parameters:
                self._add_param_group(dict(g))
        else:
            self._add_param_group({"params": parameters})
        seen = set()
        for g in self._param_groups:
            for p in g["params"]:
                if id(p) in seen:
                    raise ValueError(f"{cls}: a parameter appears in more than one group")
                seen.add(id(p))

    def _add_param_group(self, group):
        cls = type(self).__name__
        if "params" not in group:
            raise ValueError(f"{cls}: a parameter group needs a 'params' entry")
        params = group["params"]
        group["params"] = [params] if isinstance(params, _C.Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"{cls}: parameters must be Tensors, got {type(p).__name__}")
        if "weight_decay" in group:
            group["weight_decay"] = _as_regularizer(group["weight_decay"], cls)
        if "learning_rate" in group and float(group["learning_rate"]) < 0:
            raise ValueError(f"{cls}: a group's learning_rate must be >= 0")
        self._param_groups.append(group)

    @property
    def _parameter_list(self):
        return [p for g in self._param_groups for p in g["params"]]

    # ---- learning rate
    def get_lr(self):
        """The current global learning rate (a scheduler's current value)."""
        lr = self._learning_rate
        return float(lr()) if not isinstance(lr, float) else lr

    def set_lr(self, value):
        if not isinstance(self._learning_rate, float):
            raise RuntimeError(
                "set_lr: the learning rate is an LRScheduler; step the scheduler or "
                "use set_lr_scheduler"
            )
        if float(value) < 0:
            raise ValueError(f"set_lr: learning rate must be >= 0, got {value}")
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler):
        from .lr import LRScheduler

        if not isinstance(scheduler, LRScheduler):
            raise TypeError(
                f"set_lr_scheduler: expected an LRScheduler, got {type(scheduler).__name__}"
            )
        self._learning_rate = scheduler

    def _param_lr(self, group, p, base):
        attr = getattr(p, "optimize_attr", None) or {}
        return base * float(group.get("learning_rate", 1.0)) * float(attr.get("learning_rate", 1.0))

    def _regularizer(self, group, p):
        if "weight_decay" in group:
            return group["weight_decay"]
        reg = getattr(p, "regularizer", None)
        return reg if reg is not None else self.regularization

    # ---- state
    def _accumulator(self, name, p):
        store = self._accumulators.setdefault(name, {})
        t = store.get(id(p))
        if t is None:
            # on the parameter's place, where the update runs (Note [Devices]); a dist
            # parameter's state covers its local shard (the update runs shard by shard)
            shape = self._acc_shape(name, p._local_value().shape if p.is_dist() else p.shape)
            t = _ops.full(
                list(shape), float(self._acc_init.get(name, 0.0)), _acc_dtype(p), p.place
            )
            store[id(p)] = t
        return t

    def _acc_shape(self, name, shape):
        """The shape of accumulator `name` for a parameter of `shape` (ASGD's window differs)."""
        return list(shape)

    def clear_grad(self, set_to_zero=True):
        for p in self._parameter_list:
            p.clear_gradient(set_to_zero)

    clear_gradients = clear_grad

    @no_grad()
    def step(self):
        """One update of every parameter that has a gradient."""
        self._apply_pairs([
            (p, p.grad) for p in self._parameter_list if not p.stop_gradient and p.grad is not None
        ])

    @no_grad()
    def _apply_pairs(self, pairs):
        """One update of the parameters in `pairs` [(parameter, gradient)]."""
        if not pairs:
            return
        from ..jit import _train_step  # a late import: jit imports the optimizers' users

        if _train_step.converting_step() and _train_step.record_step(self, pairs):
            # Note [Training steps]: a to_static training step records the update as an op
            # (the multi-tensor bindings hand it to the tracer); else it ran eagerly.
            return
        if self._grad_clip is not None:
            pairs = self._grad_clip(pairs)
        clipped = {id(p): g for p, g in pairs}
        self._step_count += 1
        base = self.get_lr()
        for group in self._param_groups:
            params, grads, lrs, wds = [], [], [], []
            for p in group["params"]:
                g = clipped.get(id(p))
                if g is None:
                    self._step_lag[id(p)] = self._step_lag.get(id(p), 0) + 1
                    continue
                wd = self._decay_coeff(group, p)
                if isinstance(wd, L1Decay):  # not a kernel rule: add coeff * sign(p) here
                    g = g + _ops.sign(p) * wd.coeff
                    wd = 0.0
                params.append(p)
                grads.append(g)
                lrs.append(self._param_lr(group, p, base))
                wds.append(float(wd))
            if params:
                self._update_by_step(group, params, grads, lrs, wds)

    def _update_by_step(self, group, params, grads, lrs, wds):
        """_update once per distinct parameter step count (one call unless some parameters
        sat out earlier steps)."""
        if not self._step_lag:
            self._update(group, params, grads, lrs, wds, self._step_count)
            return
        steps = [self._step_count - self._step_lag.get(id(p), 0) for p in params]
        if len(set(steps)) == 1:
            self._update(group, params, grads, lrs, wds, steps[0])
            return
        for s in sorted(set(steps)):
            idx = [i for i, t in enumerate(steps) if t == s]
            self._update(group, *([a[i] for i in idx] for a in (params, grads, lrs, wds)), s)

    def _decay_coeff(self, group, p):
        """The coupled weight decay for p: a float (L2 coefficient) or an L1Decay."""
        reg = self._regularizer(group, p)
        if reg is None:
            return 0.0
        return reg if isinstance(reg, L1Decay) else reg.coeff

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        if _framework.in_static_mode():
            from ..static import _backward

            return _backward.minimize(self, loss, startup_program, parameters, no_grad_set)
        # Dygraph, as Paddle: the gradients are those loss.backward() left on the parameters
        # (minimize does not run the backward itself).
        pairs = self.backward(loss, startup_program, parameters, no_grad_set)
        self._apply_pairs(pairs)
        return None, pairs

    def backward(self, loss, startup_program=None, parameters=None, no_grad_set=None,
                 callbacks=None):
        """The (parameter, gradient) pairs of the parameters (default: the optimizer's) that
        hold a gradient after loss.backward(): Paddle's dygraph Optimizer.backward."""
        if _framework.in_static_mode():
            raise NotImplementedError("Optimizer.backward: in static mode use minimize(loss) or "
                                      "oar.static.append_backward")
        skip = {id(p) for p in (no_grad_set or ())}
        params = list(parameters) if parameters is not None else self._parameter_list
        return [(p, p.grad) for p in params
                if not p.stop_gradient and p.grad is not None and id(p) not in skip]

    def apply_gradients(self, params_grads):
        """Updates the parameters of params_grads [(parameter, gradient)] with those
        gradients (clipped by the optimizer's grad_clip)."""
        self._apply_pairs([(p, g) for p, g in params_grads if g is not None])
        return []

    def _hp(self, group, name):
        """A hyperparameter (beta1, epsilon, rho, momentum...): the group's value if it sets
        one, else the optimizer's."""
        return float(group.get(name, getattr(self, "_" + name)))

    def _update(self, group, params, grads, lrs, wds, step):
        raise NotImplementedError(f"{type(self).__name__}._update")

    def _names(self):
        """Stable names of the parameters, in order: their name, else a positional one."""
        out = []
        for gi, g in enumerate(self._param_groups):
            for pi, p in enumerate(g["params"]):
                out.append((p, p.name or f"param_{gi}_{pi}"))
        return out

    def _acc_spellings(self, acc):
        """The names accumulator `acc` may have in a state's keys: its own, then its older one."""
        return (acc,) + ((self._acc_aliases[acc],) if acc in self._acc_aliases else ())

    def _grouped_names(self):
        """(group, parameter, name) in the order of _names()."""
        names = iter(self._names())
        return [(g, p, next(names)[1]) for g in self._param_groups for p in g["params"]]

    def state_dict(self):
        """Accumulators as '{param name}_{accumulator}_0' (with Paddle's beta-power ones, so
        that Paddle loads the state), the step count, the parameter order and the LR
        scheduler's state. Values are the live tensors (oar.save copies them)."""
        state = {}
        names = self._names()
        for acc in self._acc_names:
            store = self._accumulators.get(acc, {})
            for p, n in names:
                if id(p) in store:
                    state[f"{n}_{acc}_0"] = store[id(p)]
        for g, p, n in self._grouped_names():
            if not (self._acc_names and id(p) in self._accumulators.get(self._acc_names[0], {})):
                continue  # never updated: Paddle has no accumulators for it either
            t = self._step_count - self._step_lag.get(id(p), 0)
            for acc, hp in self._pow_accs:
                state[f"{n}_{acc}_0"] = _C.to_tensor(np.asarray([self._hp(g, hp) ** (t + 1)], np.float32),
                                                     None, None, True)
        state["@step"] = self._step_count
        state["@param_order"] = [n for _, n in names]
        if any(self._step_lag.get(id(p), 0) for p, _ in names):
            state["@step_lag"] = [self._step_lag.get(id(p), 0) for p, _ in names]
        if not isinstance(self._learning_rate, float):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict):
        """Restores what state_dict() returned. Accumulators match by parameter name, or by
        position when the names differ (a model rebuilt in another process)."""
        cls = type(self).__name__
        names = self._names()
        saved_order = list(state_dict.get("@param_order", []))
        if not saved_order and self._acc_names:
            # Paddle's state has no order entry: its first accumulator's keys are in the
            # optimizer's parameter order, so a model rebuilt under other names still maps
            for acc in self._acc_spellings(self._acc_names[0]):
                suffix = f"_{acc}_0"
                saved_order = [k[: -len(suffix)] for k in state_dict if isinstance(k, str) and k.endswith(suffix)]
                if saved_order:
                    break
        current = [n for _, n in names]
        # besides accumulators: Oar's '@' entries, the LR scheduler's state, and two entries of
        # Paddle's: the name map of a pickle read without oar.load, and the fp32 master
        # weights of an O2 run, which are not restored (warned: the parameters as loaded,
        # rounded to 16 bits, become the masters)
        if "master_weights" in state_dict:
            warnings.warn(f"{cls}.set_state_dict: Paddle's 'master_weights' (fp32 copies of 16-bit "
                          f"parameters) are not restored; the loaded parameters are used as they are")
        acc_keys = [k for k in state_dict if not k.startswith("@")
                    and k not in ("LR_Scheduler", "master_weights", "StructuredToParameterName@@")]
        if saved_order and set(saved_order) != set(current):
            if len(saved_order) != len(current):
                raise ValueError(
                    f"{cls}.set_state_dict: the state has {len(saved_order)} "
                    f"parameters, this optimizer has {len(current)}"
                )
            rename = dict(zip(current, saved_order))
        else:
            rename = {n: n for n in current}
        used = set()
        pow_steps = {}  # id(p) -> its update count, from Paddle's beta-power accumulators
        for g, p, n in self._grouped_names():
            for acc, hp in self._pow_accs:
                key = f"{rename[n]}_{acc}_0"
                if key not in state_dict:
                    continue
                used.add(key)
                arr = _as_array(state_dict[key]).astype(np.float64).reshape(-1)
                beta = self._hp(g, hp)
                if arr.size != 1 or not 0.0 <= arr[0] <= 1.0:
                    raise ValueError(f"{cls}.set_state_dict: '{key}' must hold one value in [0, 1] "
                                     f"({hp}^(steps + 1)), got {arr.tolist()[:4]}")
                if id(p) not in pow_steps and beta > 0 and arr[0] > 0:
                    pow_steps[id(p)] = max(int(round(np.log(arr[0]) / np.log(beta))) - 1, 0)
        for p, n in names:
            for acc in self._acc_names:
                keys = [f"{rename[n]}_{a}_0" for a in self._acc_spellings(acc)]
                key = next((k for k in keys if k in state_dict), None)
                if key is None:
                    continue
                used.add(key)
                arr = _as_array(state_dict[key])
                want = self._acc_shape(acc, p.shape)
                if list(arr.shape) != want:
                    raise ValueError(
                        f"{cls}.set_state_dict: '{key}' has shape {list(arr.shape)}, "
                        f"parameter '{n}' has {list(p.shape)} (the state: {want})"
                    )
                t = self._accumulator(acc, p)
                t.set_value(arr.astype(np.float64 if t.dtype == _C.DataType.float64 else np.float32))
        unknown = [k for k in acc_keys if k not in used]
        if unknown:
            raise ValueError(
                f"{cls}.set_state_dict: keys {unknown[:5]} match no parameter of this optimizer"
            )
        if "@step" not in state_dict and pow_steps:  # Paddle's state: counts per parameter
            self._step_count = max(pow_steps.values())
            self._step_lag = {id(p): self._step_count - pow_steps.get(id(p), 0) for p, _ in names
                              if pow_steps.get(id(p), 0) != self._step_count}
        else:
            self._step_count = int(state_dict.get("@step", self._step_count))
            # the lags are in the saved order, which names[i] maps to through rename
            by_name = dict(zip(saved_order, state_dict.get("@step_lag", [])))
            self._step_lag = {id(p): int(by_name[rename[n]]) for p, n in names if by_name.get(rename[n])}
        if "LR_Scheduler" in state_dict and not isinstance(self._learning_rate, float):
            self._learning_rate.set_state_dict(state_dict["LR_Scheduler"])

    load_state_dict = set_state_dict


class SGD(Optimizer):
    """p -= lr * (g + wd * p)"""

    def _update(self, group, params, grads, lrs, wds, step):
        _C._sgd_update(params, grads, lrs, wds)


class Momentum(Optimizer):
    """v = mu * v + g;  p -= lr * v  (nesterov: p -= lr * (g + mu * v))."""

    _acc_names = ("velocity",)

    def __init__(
        self,
        learning_rate=0.001,
        momentum=0.9,
        parameters=None,
        use_nesterov=False,
        weight_decay=None,
        grad_clip=None,
        multi_precision=False,
        rescale_grad=1.0,
        use_multi_tensor=False,
        name=None,
    ):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        if float(momentum) < 0:
            raise ValueError(f"Momentum: momentum must be >= 0, got {momentum}")
        self._momentum, self._nesterov = float(momentum), bool(use_nesterov)
        self._rescale = float(rescale_grad)

    def _update(self, group, params, grads, lrs, wds, step):
        if self._rescale != 1.0:
            grads = [g * self._rescale for g in grads]
        vel = [self._accumulator("velocity", p) for p in params]
        _C._momentum_update(
            params, grads, vel, lrs, wds, self._hp(group, "momentum"), self._nesterov
        )


def _as_array(v):
    """A state entry (a Tensor, an array or a number) as a NumPy array."""
    return v.numpy() if isinstance(v, _C.Tensor) else np.asarray(v)


def _check_betas(cls, **betas):
    for n, v in betas.items():
        if not 0.0 <= float(v) < 1.0:
            raise ValueError(f"{cls}: {n} must be in [0, 1), got {v}")


def _check_eps(cls, eps):
    if float(eps) < 0:
        raise ValueError(f"{cls}: epsilon must be >= 0, got {eps}")


class Adam(Optimizer):
    """Adam (Paddle's bias-corrected form); weight_decay adds an L2 term to the gradient."""

    _acc_names = ("moment1", "moment2")
    _pow_accs = (("beta1_pow_acc", "beta1"), ("beta2_pow_acc", "beta2"))
    _decoupled = False

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        parameters=None,
        weight_decay=None,
        grad_clip=None,
        lazy_mode=False,
        multi_precision=False,
        amsgrad=False,
        name=None,
    ):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_betas(type(self).__name__, beta1=beta1, beta2=beta2)
        _check_eps(type(self).__name__, epsilon)
        if amsgrad:
            raise NotImplementedError(f"{type(self).__name__}: amsgrad=True is not supported")
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _update(self, group, params, grads, lrs, wds, step):
        m1 = [self._accumulator("moment1", p) for p in params]
        m2 = [self._accumulator("moment2", p) for p in params]
        _C._adam_update(
            params,
            grads,
            m1,
            m2,
            lrs,
            wds,
            self._hp(group, "beta1"),
            self._hp(group, "beta2"),
            self._hp(group, "epsilon"),
            self._decoupled,
            step,
        )


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * coeff before the Adam step (coeff 0.01
    by default, as Paddle); apply_decay_param_fun(name) picks the decayed parameters and
    lr_ratio(param) scales each parameter's learning rate."""

    _decoupled = True

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        parameters=None,
        weight_decay=0.01,
        lr_ratio=None,
        apply_decay_param_fun=None,
        grad_clip=None,
        lazy_mode=False,
        multi_precision=False,
        amsgrad=False,
        name=None,
    ):
        if isinstance(weight_decay, WeightDecayRegularizer):
            weight_decay = weight_decay.coeff
        super().__init__(
            learning_rate,
            beta1,
            beta2,
            epsilon,
            parameters,
            None,
            grad_clip,
            lazy_mode,
            multi_precision,
            amsgrad,
            name,
        )
        if weight_decay is None:
            weight_decay = 0.0
        if not isinstance(weight_decay, (int, float)) or weight_decay < 0:
            raise ValueError(
                f"AdamW: weight_decay must be a non-negative float, got {weight_decay!r}"
            )
        self._coeff = float(weight_decay)
        self._lr_ratio, self._apply_decay = lr_ratio, apply_decay_param_fun

    def _decay_coeff(self, group, p):
        if self._apply_decay is not None and not self._apply_decay(p.name):
            return 0.0
        wd = group.get("weight_decay")
        return wd.coeff if wd is not None else self._coeff

    def _param_lr(self, group, p, base):
        lr = super()._param_lr(group, p, base)
        return lr * float(self._lr_ratio(p)) if self._lr_ratio is not None else lr


class Adamax(Optimizer):
    """m = b1 m + (1-b1) g;  u = max(b2 u + eps, |g|);  p -= lr / (1 - b1^t) * m / u."""

    _acc_names = ("moment", "inf_norm")
    _pow_accs = (("beta1_pow_acc", "beta1"),)

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        parameters=None,
        weight_decay=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_betas("Adamax", beta1=beta1, beta2=beta2)
        _check_eps("Adamax", epsilon)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _update(self, group, params, grads, lrs, wds, step):
        m = [self._accumulator("moment", p) for p in params]
        u = [self._accumulator("inf_norm", p) for p in params]
        _C._adamax_update(
            params,
            grads,
            m,
            u,
            lrs,
            wds,
            self._hp(group, "beta1"),
            self._hp(group, "beta2"),
            self._hp(group, "epsilon"),
            step,
        )


class Adagrad(Optimizer):
    """a += g^2;  p -= lr * g / (sqrt(a) + eps)."""

    _acc_names = ("moment",)

    def __init__(
        self,
        learning_rate,
        epsilon=1e-6,
        parameters=None,
        weight_decay=None,
        grad_clip=None,
        name=None,
        initial_accumulator_value=0.0,
    ):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_eps("Adagrad", epsilon)
        if float(initial_accumulator_value) < 0:
            raise ValueError(
                f"Adagrad: initial_accumulator_value must be >= 0, got {initial_accumulator_value}"
            )
        self._epsilon = float(epsilon)
        self._acc_init = {"moment": float(initial_accumulator_value)}

    def _update(self, group, params, grads, lrs, wds, step):
        m = [self._accumulator("moment", p) for p in params]
        _C._adagrad_update(params, grads, m, lrs, wds, self._hp(group, "epsilon"))


class Adadelta(Optimizer):
    """Eg = rho Eg + (1-rho) g^2;  d = -sqrt((Edx + eps) / (Eg + eps)) g;
    Edx = rho Edx + (1-rho) d^2;  p += lr * d."""

    # Paddle's names (its state keys read '{param}__avg_squared_grad_0')
    _acc_names = ("_avg_squared_grad", "_avg_squared_update")
    _acc_aliases = {"_avg_squared_grad": "avg_squared_grad", "_avg_squared_update": "avg_squared_update"}

    def __init__(
        self,
        learning_rate=0.001,
        epsilon=1e-6,
        rho=0.95,
        parameters=None,
        weight_decay=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_eps("Adadelta", epsilon)
        if not 0.0 <= float(rho) < 1.0:
            raise ValueError(f"Adadelta: rho must be in [0, 1), got {rho}")
        self._epsilon, self._rho = float(epsilon), float(rho)

    def _update(self, group, params, grads, lrs, wds, step):
        eg = [self._accumulator("_avg_squared_grad", p) for p in params]
        ex = [self._accumulator("_avg_squared_update", p) for p in params]
        _C._adadelta_update(
            params, grads, eg, ex, lrs, wds, self._hp(group, "rho"), self._hp(group, "epsilon")
        )


class RMSProp(Optimizer):
    """ms = rho ms + (1-rho) g^2;  [mg = rho mg + (1-rho) g];
    mom = momentum mom + lr g / sqrt(ms [- mg^2] + eps);  p -= mom."""

    _acc_names = ("mean_square", "mean_grad", "momentum")

    def __init__(
        self,
        learning_rate,
        rho=0.95,
        epsilon=1e-6,
        momentum=0.0,
        centered=False,
        parameters=None,
        weight_decay=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        _check_eps("RMSProp", epsilon)
        if not 0.0 <= float(rho) < 1.0:
            raise ValueError(f"RMSProp: rho must be in [0, 1), got {rho}")
        if float(momentum) < 0:
            raise ValueError(f"RMSProp: momentum must be >= 0, got {momentum}")
        self._rho, self._epsilon = float(rho), float(epsilon)
        self._momentum, self._centered = float(momentum), bool(centered)

    def _update(self, group, params, grads, lrs, wds, step):
        ms = [self._accumulator("mean_square", p) for p in params]
        mg = [self._accumulator("mean_grad", p) for p in params] if self._centered else []
        mom = [self._accumulator("momentum", p) for p in params]
        _C._rmsprop_update(
            params,
            grads,
            ms,
            mg,
            mom,
            lrs,
            wds,
            self._hp(group, "rho"),
            self._hp(group, "epsilon"),
            self._hp(group, "momentum"),
            self._centered,
        )


class Lamb(Optimizer):
    """Adam moments, r = m_hat / (sqrt(v_hat) + eps) + lamb_weight_decay * p,
    p -= lr * (||p|| / ||r||) * r."""

    _acc_names = ("moment1", "moment2")
    _pow_accs = (("beta1_pow_acc", "beta1"), ("beta2_pow_acc", "beta2"))

    def __init__(
        self,
        learning_rate=0.001,
        lamb_weight_decay=0.01,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        parameters=None,
        grad_clip=None,
        exclude_from_weight_decay_fn=None,
        multi_precision=False,
        always_adapt=False,
        name=None,
    ):
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        _check_betas("Lamb", beta1=beta1, beta2=beta2)
        _check_eps("Lamb", epsilon)
        if float(lamb_weight_decay) < 0:
            raise ValueError(f"Lamb: lamb_weight_decay must be >= 0, got {lamb_weight_decay}")
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._lamb_wd, self._exclude = float(lamb_weight_decay), exclude_from_weight_decay_fn

    def _decay_coeff(self, group, p):
        if self._exclude is not None and self._exclude(p):
            return 0.0
        return self._lamb_wd

    def _update(self, group, params, grads, lrs, wds, step):
        m1 = [self._accumulator("moment1", p) for p in params]
        m2 = [self._accumulator("moment2", p) for p in params]
        _C._lamb_update(
            params,
            grads,
            m1,
            m2,
            lrs,
            wds,
            self._hp(group, "beta1"),
            self._hp(group, "beta2"),
            self._hp(group, "epsilon"),
            step,
        )
