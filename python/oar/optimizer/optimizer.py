"""Optimizers. Each step() makes one C++ call that updates every parameter of a
group in a single pass over its memory (no per-parameter chain of small ops)."""
import numpy as np

from .. import _C
from ..autograd import no_grad


class Optimizer:
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        if parameters is None:
            raise ValueError(f"{type(self).__name__}: 'parameters' is required in dynamic graph mode "
                             "(pass model.parameters())")
        parameters = list(parameters)
        if parameters and isinstance(parameters[0], dict):
            self._param_groups = [dict(g) for g in parameters]
            for g in self._param_groups:
                g["params"] = list(g["params"])
        else:
            self._param_groups = [{"params": parameters}]
        if isinstance(learning_rate, (int, float)) and learning_rate < 0:
            raise ValueError(f"{type(self).__name__}: learning_rate must be >= 0, got {learning_rate}")
        self._learning_rate = learning_rate
        self._weight_decay = self._decay_value(weight_decay)
        self._grad_clip = grad_clip
        self._accumulators = {}  # name -> {id(param): Tensor}
        self._step_count = 0

    @staticmethod
    def _decay_value(wd):
        if wd is None:
            return 0.0
        if isinstance(wd, (int, float)):
            return float(wd)
        coeff = getattr(wd, "coeff", getattr(wd, "_coeff", None))
        if coeff is None:
            raise TypeError(f"weight_decay must be a float or a regularizer, got {type(wd).__name__}")
        return float(coeff)

    # ---- learning rate
    def get_lr(self):
        lr = self._learning_rate
        return float(lr()) if callable(lr) else float(lr)

    def set_lr(self, value):
        if callable(self._learning_rate) and not isinstance(self._learning_rate, (int, float)):
            raise RuntimeError("set_lr: the learning rate is a scheduler; step the scheduler instead")
        self._learning_rate = float(value)

    def _group_lr(self, group, p):
        lr = group.get("learning_rate", self.get_lr())
        return float(lr) * p.optimize_attr.get("learning_rate", 1.0) if hasattr(p, "optimize_attr") else float(lr)

    # ---- gradients
    def _params_with_grads(self, group):
        out = []
        for p in group["params"]:
            if p.stop_gradient or p.grad is None:
                continue
            out.append((p, p.grad))
        return out

    def clear_grad(self, set_to_zero=True):
        for g in self._param_groups:
            for p in g["params"]:
                p.clear_gradient(set_to_zero)

    clear_gradients = clear_grad

    def _accumulator(self, name, p, dtype="float32"):
        store = self._accumulators.setdefault(name, {})
        t = store.get(id(p))
        if t is None:
            t = _C.ops.full(list(p.shape), 0.0, _C.DataType.float32 if dtype == "float32" else p.dtype, None)
            store[id(p)] = t
        return t

    @no_grad()
    def step(self):
        self._step_count += 1
        for group in self._param_groups:
            pairs = self._params_with_grads(group)
            if not pairs:
                continue
            if self._grad_clip is not None:
                pairs = self._grad_clip(pairs)
            self._update(group, [p for p, _ in pairs], [g for _, g in pairs])

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        loss.backward()
        self.step()

    def _update(self, group, params, grads):
        raise NotImplementedError

    # ---- state
    def state_dict(self):
        state = {"step": self._step_count}
        names = {}
        for gi, g in enumerate(self._param_groups):
            for pi, p in enumerate(g["params"]):
                names[id(p)] = p.name or f"param_{gi}_{pi}"
        for acc, store in self._accumulators.items():
            for pid, t in store.items():
                if pid in names:
                    state[f"{names[pid]}_{acc}"] = t
        lr = self._learning_rate
        if hasattr(lr, "state_dict"):
            state["LR_Scheduler"] = lr.state_dict()
        return state

    def set_state_dict(self, state_dict):
        self._step_count = int(state_dict.get("step", 0))
        for gi, g in enumerate(self._param_groups):
            for pi, p in enumerate(g["params"]):
                pname = p.name or f"param_{gi}_{pi}"
                for acc in self._accumulator_names():
                    key = f"{pname}_{acc}"
                    if key in state_dict:
                        v = state_dict[key]
                        arr = v.numpy() if isinstance(v, _C.Tensor) else np.asarray(v)
                        self._accumulator(acc, p).set_value(arr.astype(np.float32))
        if "LR_Scheduler" in state_dict and hasattr(self._learning_rate, "set_state_dict"):
            self._learning_rate.set_state_dict(state_dict["LR_Scheduler"])

    def _accumulator_names(self):
        return []


class SGD(Optimizer):
    """p -= lr * (grad + weight_decay * p)"""

    def _update(self, group, params, grads):
        wd = group.get("weight_decay", self._weight_decay)
        _C._sgd_update(params, grads, [self._group_lr(group, p) for p in params], float(wd))


class Momentum(Optimizer):
    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._momentum, self._nesterov = float(momentum), bool(use_nesterov)

    def _accumulator_names(self):
        return ["velocity"]

    def _update(self, group, params, grads):
        vel = [self._accumulator("velocity", p) for p in params]
        _C._momentum_update(params, grads, vel, [self._group_lr(group, p) for p in params],
                            self._momentum, self._nesterov,
                            float(group.get("weight_decay", self._weight_decay)))


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=None, grad_clip=None, lazy_mode=False, multi_precision=False,
                 name=None):
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        for n, v in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= float(v) < 1.0:
                raise ValueError(f"{type(self).__name__}: {n} must be in [0, 1), got {v}")
        if float(epsilon) < 0:
            raise ValueError(f"{type(self).__name__}: epsilon must be >= 0, got {epsilon}")
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _accumulator_names(self):
        return ["moment1", "moment2"]

    def _update(self, group, params, grads):
        m1 = [self._accumulator("moment1", p) for p in params]
        m2 = [self._accumulator("moment2", p) for p in params]
        _C._adam_update(params, grads, m1, m2, [self._group_lr(group, p) for p in params],
                        self._beta1, self._beta2, self._epsilon,
                        float(group.get("weight_decay", self._weight_decay)), self._decoupled,
                        self._step_count)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01, as Paddle)."""
    _decoupled = True

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=0.01, grad_clip=None, lazy_mode=False, multi_precision=False,
                 name=None, **kwargs):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, weight_decay, grad_clip,
                         lazy_mode, multi_precision, name)
