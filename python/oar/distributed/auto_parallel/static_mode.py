"""dist.to_static, dist.Strategy and DistModel (Paddle's auto-parallel "static" entry point).

DistModel compiles each step signature into this rank's program, run on the executor: the
step is traced into the global (serial) program with dist.shard_annotate ops (static_global.py;
a pipeline's micro-batches in this rank's schedule order, static_pipeline.py) and cut to this
rank by the static passes; reshard's transfers are dist.* collective ops and the optimizer's
fused update dist.<rule>_update ops. What cannot compile runs eagerly with a warning (Note
[DistModel] in docs/notes/distributed.md). The Strategy's gradient_merge (a program per phase),
sharding and pipeline (accumulate_steps; schedule_mode FThenB, 1F1B in each stage's own order,
VPP, or per-micro-batch order) and amp (O1/O2 autocast of the traced and eager steps; float16
loss scaling is not applied: a warning says so) act; fused_passes is validated and recorded only."""
import contextlib
import copy
import os
import warnings

__all__ = ["Strategy", "DistModel", "to_static"]

# Each section's fields and defaults, as Paddle's auto-parallel Strategy documents them.
_SECTIONS = {
    "sharding": {"enable": False, "stage": 1, "degree": 8},
    "gradient_merge": {"enable": False, "k_steps": 1, "avg": True},
    "pipeline": {"enable": False, "schedule_mode": "1F1B", "micro_batch_size": 1, "accumulate_steps": 1,
                 "vpp_degree": 1, "vpp_seg_method": ""},
    "amp": {"enable": False, "dtype": "float16", "level": "O1", "init_loss_scaling": 32768.0,
            "incr_every_n_steps": 1000, "decr_every_n_nan_or_inf": 2, "incr_ratio": 2.0, "decr_ratio": 0.8,
            "use_dynamic_loss_scaling": True, "custom_white_list": [], "custom_black_list": [],
            "custom_black_varnames": [], "use_fp16_guard": False, "use_bf16_guard": False,
            "use_master_grad": False},
    "fused_passes": {"enable": False, "fused_passes_list": []},
}


class _Section:
    """One Strategy section: a fixed set of fields (setting another one is an error)."""

    def __init__(self, name, values):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", copy.deepcopy(_SECTIONS[name]))
        for k, v in (values or {}).items():
            setattr(self, k, v)

    def __getattr__(self, key):
        values = object.__getattribute__(self, "_values")
        if key in values:
            return values[key]
        raise AttributeError(f"Strategy.{self._name} has no field {key!r} (fields: {sorted(values)})")

    def __setattr__(self, key, value):
        if key not in self._values:
            raise AttributeError(f"Strategy.{self._name} has no field {key!r} (fields: {sorted(self._values)})")
        self._values[key] = value

    def to_dict(self):
        return copy.deepcopy(self._values)

    def __repr__(self):
        return f"{self._name}: {self._values}"


def _check(cond, section, field, value, want):
    if not cond:
        raise ValueError(f"Strategy.{section}.{field} must be {want}, got {value!r}")


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class Strategy:
    """Paddle's dist.Strategy: sections sharding, gradient_merge, pipeline, amp and
    fused_passes, each with documented fields (Strategy({"sharding": {"enable": True,
    "stage": 2}}) or strategy.sharding.enable = True)."""

    def __init__(self, config=None):
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"Strategy: config must be a dict of sections, got {type(config).__name__}")
        config = dict(config or {})
        unknown = set(config) - set(_SECTIONS)
        if unknown:
            raise ValueError(f"Strategy: unknown sections {sorted(unknown)} (sections: {sorted(_SECTIONS)})")
        for name in _SECTIONS:
            values = config.get(name)
            if values is not None and not isinstance(values, dict):
                raise TypeError(f"Strategy: section {name!r} must be a dict, got {type(values).__name__}")
            object.__setattr__(self, name, _Section(name, values))

    def __setattr__(self, key, value):
        raise AttributeError(f"Strategy: set the fields of its sections (strategy.{key}.enable = ...), "
                             f"not {key!r} itself")

    def _validate(self):
        s = self.sharding
        _check(isinstance(s.enable, bool), "sharding", "enable", s.enable, "a bool")
        _check(s.stage in (0, 1, 2, 3) and _int(s.stage), "sharding", "stage", s.stage, "0, 1, 2 or 3")
        _check(_int(s.degree) and s.degree >= 1, "sharding", "degree", s.degree, "a positive int")
        g = self.gradient_merge
        _check(isinstance(g.enable, bool), "gradient_merge", "enable", g.enable, "a bool")
        _check(_int(g.k_steps) and 1 <= g.k_steps <= 1 << 20, "gradient_merge", "k_steps", g.k_steps,
               "an int in [1, 2**20]")
        _check(isinstance(g.avg, bool), "gradient_merge", "avg", g.avg, "a bool")
        p = self.pipeline
        _check(isinstance(p.enable, bool), "pipeline", "enable", p.enable, "a bool")
        _check(p.schedule_mode in ("1F1B", "FThenB", "VPP", "Eager1F1B"), "pipeline", "schedule_mode",
               p.schedule_mode, "'1F1B', 'FThenB', 'VPP' or 'Eager1F1B'")
        for f in ("micro_batch_size", "accumulate_steps", "vpp_degree"):
            v = getattr(p, f)
            _check(_int(v) and v >= 1, "pipeline", f, v, "a positive int")
        a = self.amp
        _check(isinstance(a.enable, bool), "amp", "enable", a.enable, "a bool")
        _check(a.dtype in ("float16", "bfloat16"), "amp", "dtype", a.dtype, "'float16' or 'bfloat16'")
        _check(a.level in ("O0", "O1", "O2", "o0", "o1", "o2"), "amp", "level", a.level, "'O0', 'O1' or 'O2'")
        f = self.fused_passes
        _check(isinstance(f.enable, bool), "fused_passes", "enable", f.enable, "a bool")
        _check(isinstance(f.fused_passes_list, (list, tuple)), "fused_passes", "fused_passes_list",
               f.fused_passes_list, "a list of pass names")

    def __repr__(self):
        return "Strategy(" + ", ".join(repr(getattr(self, n)) for n in _SECTIONS) + ")"


def _split(t, n):
    """`t` cut into n micro-batches along dim 0 (an error naming the sizes when it does not divide)."""
    from ... import split
    from ..._C import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"DistModel: pipeline.accumulate_steps splits tensor inputs, got {type(t).__name__}")
    if not t.shape or t.shape[0] % n:
        raise ValueError(f"DistModel: a batch of shape {list(t.shape)} does not split into pipeline.accumulate_steps="
                         f"{n} micro-batches along dim 0")
    return split(t, n, axis=0)


_EAGER = object()  # a signature that runs eagerly


def _amp_settings(a):
    """Strategy.amp as auto_cast's arguments (None when off). The forward and the loss of
    every step, traced or eager, run under auto_cast: O1 casts the white-list ops (matmul,
    conv...) to `dtype`; O2 every op but the black list, which over the float32 parameters
    is Paddle's O2 with master weights (the parameters are the masters, cast once per use).
    float16's dynamic loss scaling is not applied (bfloat16 needs none): a warning."""
    if not a.enable or a.level.upper() == "O0":
        return None
    if a.dtype == "float16" and a.use_dynamic_loss_scaling:
        warnings.warn("DistModel: Strategy.amp with float16 runs autocast without loss scaling (not applied "
                      "in DistModel yet): small gradients may underflow. bfloat16 needs no loss scaling.",
                      stacklevel=3)
    return {"enable": True, "level": a.level.upper(), "dtype": a.dtype,
            "custom_white_list": list(a.custom_white_list) or None,
            "custom_black_list": list(a.custom_black_list) or None}


class _deferred_sends:
    """Pipeline stages' cross-mesh sends stop waiting for their receivers during a step
    (each stage runs its own 1F1B order); the step's end waits for them."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        if self.on:
            from ... import _C
            _C.distributed.defer_sends(True)

    def __exit__(self, *exc):
        if self.on:
            from ... import _C
            _C.distributed.defer_sends(False)
        return False


def _named_state(layer):
    from ...jit.api import _named_state as named
    return named(layer)


def _params_mesh(layer):
    for p in layer.parameters():
        if p.is_dist():
            return p.process_mesh
    return None


class DistModel:
    """What dist.to_static returns. train() (the default with a loss and an optimizer):
    model(inputs, labels) runs forward, loss, backward and (every gradient_merge.k_steps
    calls) the optimizer step, and returns the loss; eval(): forward and loss, no gradients;
    predict(): model(inputs) returns the layer's outputs."""

    def __init__(self, layer, loader, loss, optimizer, strategy):
        self._layer, self._loader, self._loss_fn = layer, loader, loss
        self._strategy = strategy
        self._optimizer = optimizer
        gm = strategy.gradient_merge
        self._k = gm.k_steps if gm.enable else 1
        self._avg = gm.avg
        self._calls = 0
        self._programs, self._last, self._pending = {}, {}, None
        # OAR_DIST_MODEL_EAGER=1 runs every step eagerly through the dist layer (debugging).
        self._compile = os.environ.get("OAR_DIST_MODEL_EAGER", "0") in ("", "0")
        pp = strategy.pipeline
        self._micro = pp.accumulate_steps if pp.enable else 1
        from .static_pipeline import check_vpp, has_vpp_chunks
        if pp.enable and pp.schedule_mode == "VPP" and self._micro > 1 and has_vpp_chunks(layer):
            check_vpp(layer, self._micro, pp.vpp_degree)  # a bad layout or count: an error here, not a fallback
        if optimizer is not None and strategy.sharding.enable and strategy.sharding.stage > 0:
            from .api import ShardingStage1, ShardingStage2, ShardingStage3, _ShardOptimizer, shard_optimizer
            mesh = _params_mesh(layer)
            if mesh is None or "dp" not in mesh.dim_names:
                raise ValueError("to_static: Strategy.sharding needs the layer's parameters on a mesh with a 'dp' "
                                 f"axis (mesh: {mesh})")
            degree = mesh.get_dim_size("dp")
            if strategy.sharding.degree not in (degree, 8):  # 8: Paddle's default, i.e. not set
                raise ValueError(f"to_static: Strategy.sharding.degree {strategy.sharding.degree} differs from the "
                                 f"mesh's 'dp' axis size {degree}")
            if isinstance(optimizer, _ShardOptimizer):
                raise ValueError("to_static: the optimizer is already sharded (shard_optimizer); do not also enable "
                                 "Strategy.sharding")
            stage = {1: ShardingStage1, 2: ShardingStage2, 3: ShardingStage3}[strategy.sharding.stage]
            self._optimizer = shard_optimizer(optimizer, stage("dp", mesh))
        self._amp = _amp_settings(strategy.amp)
        from .static_program import fused_optimizer
        # The optimizer whose update goes into the train program (None: it steps eagerly).
        self._fused = fused_optimizer(self._optimizer) if self._optimizer is not None else None
        self._sharded = self._optimizer if getattr(self._optimizer, "_plan", None) else None
        if loss is not None and optimizer is not None:
            self.train()
        elif loss is not None:
            self.eval()
        else:
            self.predict()

    def train(self):
        if self._loss_fn is None or self._optimizer is None:
            raise RuntimeError("DistModel.train: needs the loss and the optimizer given to dist.to_static")
        self._mode = "train"
        self._layer.train()

    def eval(self):
        if self._loss_fn is None:
            raise RuntimeError("DistModel.eval: needs the loss given to dist.to_static")
        self._mode = "eval"
        self._layer.eval()

    def predict(self):
        self._mode = "predict"
        self._layer.eval()

    def _signature(self, args):
        """The compiled step's cache key: the mode, the layer's training flag, each tensor's
        local shape, dtype and layout; None (run eagerly) for a non-tensor argument."""
        from ..._C import Tensor
        key = [self._mode, self._layer.training, self._phase()]
        if key[-1] == "merge":  # which parameters hold a merged gradient
            key.append(tuple(p.grad is not None for p in self._fused._parameter_list))
        for t in args:
            if not isinstance(t, Tensor):
                return None
            lay = (tuple(t.process_mesh.process_ids), tuple(t.process_mesh.shape), tuple(map(str, t.placements))) \
                if t.is_dist() else None
            key.append((tuple(t._local_value().shape if t.is_dist() else t.shape), str(t.dtype), lay))
        return tuple(key)

    def _phase(self):
        """What this call's train program ends with: "update" (the optimizer's update),
        "merge" (gradient_merge's last call: the update on .grad plus this call's
        gradients) or "grads" (the gradients, for an eager step or a later merge)."""
        if self._mode != "train":
            return None
        if self._fused is None or (self._k > 1 and (self._calls + 1) % self._k):
            return "grads"
        return "update" if self._k == 1 else "merge"

    def _compiled(self, args):
        """This signature's CompiledStep (traced on first use), or None where it runs eagerly."""
        from . import static_global
        key = self._signature(args)
        if key is None or not self._compile:
            return None
        entry = self._programs.get(key)
        if entry is None:
            scale = 1.0 / self._k if self._avg and self._k > 1 else 1.0
            schedule = self._strategy.pipeline.schedule_mode if self._micro > 1 else "FThenB"
            phase = self._phase()
            opt = self._fused if phase in ("update", "merge") else None
            try:
                entry = static_global.compile_global(self._mode, self._layer, self._loss_fn, args, scale, opt,
                                                     phase == "merge", self._sharded,
                                                     (self._micro, schedule, self._strategy.pipeline.vpp_degree))
            except Exception as e:  # noqa: BLE001: decided by the eager run of the same step (__call__)
                # Bad inputs make the eager step raise the same error, which then propagates;
                # a step that runs eagerly but cannot compile stays eager, with a warning.
                self._pending = (key, f"DistModel: the {self._mode} step cannot be compiled into a program "
                                      f"({type(e).__name__}: {e}); it runs eagerly through the dist layer")
                return None
            self._programs[key] = entry
        if entry is not _EAGER:
            self._last[self._mode] = entry
        return None if entry is _EAGER else entry

    def _last_entry(self, mode, api):
        mode = self._mode if mode is None else mode
        if mode not in ("train", "eval", "predict"):
            raise ValueError(f"DistModel.{api}: mode must be 'train', 'eval' or 'predict', got {mode!r}")
        entry = self._last.get(mode)
        if entry is None:
            raise RuntimeError(f"DistModel.{api}: no {mode} step has been compiled yet (call the DistModel once "
                               "in that mode first)")
        return entry

    def dist_main_program(self, mode=None):
        """This rank's program of the last step compiled in `mode` (default: the current
        one): local shapes, with the reshard transfers as dist.* collective ops. Call the
        DistModel once in that mode first."""
        return self._last_entry(mode, "dist_main_program").program

    def serial_main_program(self, mode=None):
        """The global program the last step compiled in `mode` was traced into (serial, global
        shapes, dist.shard_annotate ops), from which the dist passes made dist_main_program. A
        pipeline's holds its micro-batches in this rank's schedule order (Note [DistModel])."""
        return self._last_entry(mode, "serial_main_program").global_program

    def _run_compiled(self, entry, args):
        from ...autograd import no_grad
        extra = []
        if entry.updates:  # the learning rate and step count of this update, as its program reads them
            import oar
            opt = self._fused
            opt._step_count += 1
            extra = [oar.to_tensor(opt.get_lr(), dtype="float64"), oar.to_tensor(opt._step_count, dtype="int64")]
            extra += [opt._parameter_list[i].grad for i in entry.acc]
        with _deferred_sends(self._micro > 1):
            result, grads = entry.run(list(args) + extra, _named_state(self._layer))
        if self._mode != "train":
            return result
        if entry.updates:
            self._calls += 1
            if entry.acc or self._k > 1:
                self._optimizer.clear_grad()
            return result
        by_name = dict(self._layer.named_parameters())
        with no_grad():
            for name, g in zip(entry.grad_params, grads):
                p = by_name[name]
                p.grad = g if p.grad is None else p.grad + g
        self._calls += 1
        if self._calls % self._k == 0:
            self._optimizer.step()
            self._optimizer.clear_grad()
        return result

    def __call__(self, *args):
        if self._mode != "predict" and len(args) < 2:
            raise TypeError(f"DistModel in {self._mode} mode: call it with (inputs..., labels), got {len(args)} "
                            "argument(s)")
        self._pending = None
        with self._autocast():  # Strategy.amp: the traced step records the casts
            entry = self._compiled(args)
            if entry is not None:
                return self._run_compiled(entry, args)
            out = self._run_eager(args)
        if self._pending is not None:  # the step ran eagerly but did not compile
            key, message = self._pending
            self._pending = None
            self._programs[key] = _EAGER
            warnings.warn(message, stacklevel=2)
        return out

    def _autocast(self):
        if self._amp is None:
            return contextlib.nullcontext()
        from ...amp import auto_cast
        return auto_cast(**self._amp)

    def _run_eager(self, args):
        from ...autograd import no_grad
        from .static_program import _replicated
        if self._mode == "predict":
            with no_grad():
                return self._layer(*args)
        if len(args) < 2:
            raise TypeError(f"DistModel in {self._mode} mode: call it with (inputs..., labels), got {len(args)} "
                            "argument(s)")
        inputs, labels = args[:-1], args[-1]
        if self._mode == "eval":
            with no_grad():
                return self._loss_fn(self._layer(*inputs), labels)
        scale = 1.0 / self._k if self._avg and self._k > 1 else 1.0
        if self._micro > 1:  # pipeline.accumulate_steps: micro-batches, forward then backward each
            loss = None
            for chunk in zip(*(_split(t, self._micro) for t in (*inputs, labels))):
                part = _replicated(self._loss_fn(self._layer(*chunk[:-1]), chunk[-1]) / self._micro)
                (part * scale if scale != 1.0 else part).backward()
                loss = part if loss is None else loss + part.detach()
        else:
            loss = _replicated(self._loss_fn(self._layer(*inputs), labels))  # once, also the seed's layout
            (loss * scale if scale != 1.0 else loss).backward()
        self._calls += 1
        if self._calls % self._k == 0:
            self._optimizer.step()
            self._optimizer.clear_grad()
        return loss

    def state_dict(self, mode="all"):
        """The parameters ("param"), the optimizer's state ("opt") or both ("all")."""
        if mode not in ("all", "param", "opt"):
            raise ValueError(f"DistModel.state_dict: mode must be 'all', 'param' or 'opt', got {mode!r}")
        out = {}
        if mode in ("all", "param"):
            out.update(self._layer.state_dict())
        if mode in ("all", "opt") and self._optimizer is not None:
            out.update(self._optimizer.state_dict())
        return out

    def set_state_dict(self, state_dict):
        params = dict(self._layer.state_dict())
        self._layer.set_state_dict({k: v for k, v in state_dict.items() if k in params})
        if self._optimizer is not None:
            rest = {k: v for k, v in state_dict.items() if k not in params}
            if rest:
                self._optimizer.set_state_dict(rest)


def to_static(layer, loader=None, loss=None, optimizer=None, strategy=None, input_spec=None):
    """Paddle's dist.to_static: a DistModel for `layer` (laid out by shard_tensor /
    parallelize), `loss` (callable(outputs, labels)) and `optimizer`, configured by
    `strategy` (dist.Strategy; default one)."""
    from ...nn import Layer
    if not isinstance(layer, Layer):
        raise TypeError(f"to_static: layer must be an nn.Layer, got {type(layer).__name__}")
    if loss is not None and not callable(loss):
        raise TypeError(f"to_static: loss must be callable(outputs, labels), got {type(loss).__name__}")
    if optimizer is not None and not hasattr(optimizer, "step"):
        raise TypeError(f"to_static: optimizer must be an optimizer, got {type(optimizer).__name__}")
    if loader is not None and not hasattr(loader, "__iter__"):
        raise TypeError(f"to_static: loader must be a DataLoader (or shard_dataloader), got {type(loader).__name__}")
    strategy = Strategy() if strategy is None else strategy
    if not isinstance(strategy, Strategy):
        raise TypeError(f"to_static: strategy must be a dist.Strategy, got {type(strategy).__name__}")
    strategy._validate()
    return DistModel(layer, loader, loss, optimizer, strategy)
