"""oar.amp.GradScaler: dynamic loss scaling (Paddle 3.x semantics).

    scaler = oar.amp.GradScaler(init_loss_scaling=1024)
    with oar.amp.auto_cast():
        loss = model(x).mean()
    scaler.scale(loss).backward()
    scaler.minimize(optimizer, scaled)     # or: scaler.step(optimizer); scaler.update()
    optimizer.clear_grad()

Each step the gradients are divided by the scale and checked; if any is inf or nan
the optimizer step is skipped. With dynamic scaling the scale is multiplied by
decr_ratio (never below 1) after decr_every_n_nan_or_inf steps with inf/nan, and by
incr_ratio after incr_every_n_steps consecutive finite steps.
"""
import math
from enum import Enum

import numpy as np

from .. import _C

__all__ = ["GradScaler", "AmpScaler", "OptimizerState"]


class OptimizerState(Enum):
    INIT = 0
    UNSCALED = 1
    STEPPED = 2


class AmpScaler:
    def __init__(self, enable=True, init_loss_scaling=2.0**15, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=1000, decr_every_n_nan_or_inf=1,
                 use_dynamic_loss_scaling=True):
        name = type(self).__name__
        if incr_ratio <= 1.0:
            raise ValueError(f"{name}: incr_ratio must be > 1.0, got {incr_ratio}")
        if not 0.0 < decr_ratio < 1.0:
            raise ValueError(f"{name}: decr_ratio must be in (0, 1), got {decr_ratio}")
        if int(incr_every_n_steps) < 1 or int(decr_every_n_nan_or_inf) < 1:
            raise ValueError(f"{name}: incr_every_n_steps and decr_every_n_nan_or_inf must be "
                             f">= 1, got {incr_every_n_steps} and {decr_every_n_nan_or_inf}")
        if not init_loss_scaling > 0 or not math.isfinite(init_loss_scaling):
            raise ValueError(f"{name}: init_loss_scaling must be a positive finite number, got "
                             f"{init_loss_scaling}")
        self._enable = bool(enable)
        self._init_loss_scaling = float(init_loss_scaling)
        self._scale = float(init_loss_scaling)
        self._incr_ratio, self._decr_ratio = float(incr_ratio), float(decr_ratio)
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)
        self._incr_count = 0
        self._decr_count = 0
        self._found_inf = False
        self._cache_found_inf = False
        self._optimizer_states = {}

    # ---- scaling
    def scale(self, var):
        """var * the current loss scale (var itself when disabled)."""
        if not isinstance(var, _C.Tensor):
            raise TypeError(f"{type(self).__name__}.scale: expected a Tensor, got "
                            f"{type(var).__name__}")
        if not self._enable:
            return var
        ctx = self._converting(var.place)
        if ctx is not None:  # a converted training step: the scale is read at each call
            return var * (ctx.scale if var.dtype == ctx.scale.dtype else ctx.scale.astype(var.dtype))
        return var * self._scale

    def _converting(self, place=None):
        """The training-step context while to_static converts a step that uses this scaler
        (Note [Training steps] in docs/notes/jit.md): the scale is a program parameter,
        found_inf a traced bool that skips the update, and the scale moves on the host
        after each call (_after_converted_step). None when eager. `place`: the scaled loss's,
        where the first call declares the scale holder."""
        from ..jit import _train_step  # a late import: jit is above amp

        return _train_step.scaler_trace(self, place)

    def _states(self, ctx):
        return self._optimizer_states if ctx is None else ctx.scaler_states

    @staticmethod
    def _grads(optimizer):
        master = getattr(optimizer, "_amp_master", None)
        if master is not None:
            master.sync_grads()
        out = []
        for group in optimizer._param_groups:
            for p in group["params"]:
                if not p.stop_gradient and p.grad is not None:
                    out.append(p.grad)
        return out

    def _unscale(self, optimizer):
        if not self._enable:
            return
        ctx = self._converting()
        state = self._states(ctx).get(id(optimizer), OptimizerState.INIT)
        if state is OptimizerState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update()")
        if state is OptimizerState.STEPPED:
            raise RuntimeError("unscale_() is being called after step()")
        if ctx is not None:
            self._unscale_traced(optimizer, ctx)
            return
        inv = 1.0 / self._scale
        # inf * 0 and nan * 0 are nan: one sum finds any non-finite gradient. The sums are
        # ops on the gradients' place, added up there; the host reads one number per place.
        checks = {}
        from ..autograd import no_grad
        with no_grad():  # gradients read stop_gradient=False (Paddle's rule): no history here
            for g in self._grads(optimizer):
                v = self._check_view(g)
                if v.size:
                    s = _C.ops.sum((v * 0.0).astype("float32"))
                    key = g.place.device_str()
                    checks[key] = s if key not in checks else checks[key] + s
                _C.ops.scale_(g, inv, 0.0, True)
        found_inf = not all(math.isfinite(float(c.item())) for c in checks.values())
        self._found_inf = self._reduce_found_inf(found_inf, optimizer)
        self._optimizer_states[id(optimizer)] = OptimizerState.UNSCALED

    def _unscale_traced(self, optimizer, ctx):
        """_unscale in a converted step: the gradients divided by the scale holder and
        found_inf a traced bool (any non-finite gradient), no Python value read."""
        from ..autograd import no_grad
        total = None
        with no_grad():
            inv = 1.0 / ctx.scale
            for g in self._grads(optimizer):
                if g.size:
                    s = _C.ops.sum((g * 0.0).astype("float32"))
                    total = s if total is None else total + s
                g.copy_(g * (inv if inv.dtype == g.dtype else inv.astype(g.dtype)))
            found = _C.ops.full([], False, "bool", ctx.scale.place) if total is None else _C.ops.logical_not(_C.ops.isfinite(total))
        ctx.found_inf = found if ctx.found_inf is None else _C.ops.logical_or(ctx.found_inf, found)
        ctx.scaler_states[id(optimizer)] = OptimizerState.UNSCALED

    def _after_converted_step(self, optimizers, found_inf, updated):
        """After a converted step's program ran: what step() (on each of `optimizers`) and
        update() do on the host."""
        self._found_inf = self._cache_found_inf = found_inf
        if updated:
            if self._use_dynamic_loss_scaling:
                self._update()
            self._optimizer_states = {}
        else:
            for optimizer in optimizers:
                self._optimizer_states[id(optimizer)] = OptimizerState.STEPPED

    # oar.distributed.shard_scaler replaces these two on an instance: the check reads each
    # rank's local gradient values, and the flag is reduced over the ranks holding them.
    @staticmethod
    def _check_view(grad):
        return grad

    @staticmethod
    def _reduce_found_inf(found_inf, optimizer):
        return found_inf

    unscale_ = _unscale

    def _step_if_finite(self, optimizer):
        if self._converting() is not None:  # the update op skips itself when found_inf holds
            optimizer.step()
            return
        if self._found_inf:
            self._cache_found_inf = True
        else:
            optimizer.step()
            self._cache_found_inf = False

    def minimize(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless unscale_ ran), steps the optimizer unless a
        gradient is inf/nan, and updates the scale. The loss was already backwarded."""
        if not self._enable:
            optimizer.step()
            return None, None
        ctx = self._converting()
        if self._states(ctx).get(id(optimizer), OptimizerState.INIT) is OptimizerState.INIT:
            self._unscale(optimizer)
        self._step_if_finite(optimizer)
        if ctx is not None:
            ctx.scaler_update = True
            ctx.scaler_states.clear()
            return None, None
        if self._use_dynamic_loss_scaling:
            self._update()
        self._optimizer_states = {}
        return None, None

    def step(self, optimizer):
        """Unscales (unless unscale_ ran) and steps unless a gradient is inf/nan; call
        update() afterwards."""
        if not self._enable:
            return optimizer.step()
        ctx = self._converting()
        state = self._states(ctx).get(id(optimizer), OptimizerState.INIT)
        if state is OptimizerState.STEPPED:
            raise RuntimeError("step() has already been called since the last update()")
        if state is OptimizerState.INIT:
            self._unscale(optimizer)
        self._step_if_finite(optimizer)
        self._states(ctx)[id(optimizer)] = OptimizerState.STEPPED

    def update(self):
        """Adjusts the loss scale after step() (dynamic scaling only)."""
        if not self._enable:
            return
        ctx = self._converting()
        if ctx is not None:  # after each call of the converted step, on the host
            ctx.scaler_update = True
            ctx.scaler_states.clear()
            return
        if self._use_dynamic_loss_scaling:
            self._update()
        self._optimizer_states = {}

    def _update(self):
        if self._cache_found_inf or self._found_inf:
            self._incr_count = 0
            self._decr_count += 1
            if self._decr_count == self._decr_every_n_nan_or_inf:
                self._scale = max(self._scale * self._decr_ratio, 1.0)
                self._decr_count = 0
        else:
            self._decr_count = 0
            self._incr_count += 1
            if self._incr_count == self._incr_every_n_steps:
                new = self._scale * self._incr_ratio
                if math.isfinite(new):
                    self._scale = new
                self._incr_count = 0
        self._found_inf = False

    # ---- accessors (Paddle's names)
    def is_enable(self):
        return self._enable

    def is_use_dynamic_loss_scaling(self):
        return self._use_dynamic_loss_scaling

    def get_init_loss_scaling(self):
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling):
        self._init_loss_scaling = float(new_init_loss_scaling)
        self._scale = float(new_init_loss_scaling)

    def get_loss_scaling(self):
        """The current scale as a float32 Tensor of shape [1]."""
        return _C.to_tensor(np.array([self._scale], dtype=np.float32))

    def get_incr_ratio(self):
        return self._incr_ratio

    def set_incr_ratio(self, v):
        if v <= 1.0:
            raise ValueError(f"set_incr_ratio: must be > 1.0, got {v}")
        self._incr_ratio = float(v)

    def get_decr_ratio(self):
        return self._decr_ratio

    def set_decr_ratio(self, v):
        if not 0.0 < v < 1.0:
            raise ValueError(f"set_decr_ratio: must be in (0, 1), got {v}")
        self._decr_ratio = float(v)

    def get_incr_every_n_steps(self):
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, v):
        self._incr_every_n_steps = int(v)

    def get_decr_every_n_nan_or_inf(self):
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, v):
        self._decr_every_n_nan_or_inf = int(v)

    # ---- checkpoints
    def state_dict(self):
        if not self._enable:
            return {}
        return {"scale": np.array([self._scale], dtype=np.float32),
                "incr_ratio": self._incr_ratio, "decr_ratio": self._decr_ratio,
                "incr_every_n_steps": self._incr_every_n_steps,
                "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf,
                "incr_count": self._incr_count, "decr_count": self._decr_count,
                "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling}

    def load_state_dict(self, state_dict):
        if not self._enable:
            return
        if not state_dict:
            raise RuntimeError("load_state_dict: the state dict is empty, possibly because it "
                               "was saved from a disabled GradScaler")
        scale = state_dict["scale"]
        scale = scale.numpy() if isinstance(scale, _C.Tensor) else np.asarray(scale)
        self._scale = float(scale.reshape(-1)[0])
        self._init_loss_scaling = self._scale
        self._incr_ratio = float(state_dict["incr_ratio"])
        self._decr_ratio = float(state_dict["decr_ratio"])
        self._incr_every_n_steps = int(state_dict["incr_every_n_steps"])
        self._decr_every_n_nan_or_inf = int(state_dict["decr_every_n_nan_or_inf"])
        self._incr_count = int(state_dict["incr_count"])
        self._decr_count = int(state_dict["decr_count"])
        self._use_dynamic_loss_scaling = bool(state_dict["use_dynamic_loss_scaling"])

    set_state_dict = load_state_dict


class GradScaler(AmpScaler):
    """Paddle's paddle.amp.GradScaler (defaults: init_loss_scaling=65536,
    incr_every_n_steps=2000)."""

    def __init__(self, enable=True, init_loss_scaling=65536.0, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=2000, decr_every_n_nan_or_inf=1,
                 use_dynamic_loss_scaling=True):
        super().__init__(enable, init_loss_scaling, incr_ratio, decr_ratio, incr_every_n_steps,
                         decr_every_n_nan_or_inf, use_dynamic_loss_scaling)
