"""static.append_backward / static.gradients and Optimizer.minimize in static mode.

The backward rules read concrete sizes, so the backward and the updates are recorded per
fed shape when the program runs (_specialize.py): here they only run once on the
placeholders (the gradients' shapes and names, the optimizer's accumulators) and are
noted in the program's _grad_records. Each gradient becomes a value of the program (an
input named '<param>@GRAD' that the run binds to the recorded gradient), so it can be
fetched. A recorded update ends in writes into the parameters and accumulators
(builtin.set_parameter), so every Executor.run is one training step."""
import numpy as np

from .. import _C
from . import _program


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple, set)) else [x]


def _check_var(t, who, what):
    if not isinstance(t, _C.Tensor) or not _program._is_static_var(t):
        raise TypeError(f"{who}: {what} must be a variable of a static program, got {type(t).__name__}")


def _resolve(program, items, who):
    return [program._var(p, who) if isinstance(p, str) else p for p in items]


def _no_grad_names(no_grad_set):
    return {v if isinstance(v, str) else v.name for v in _as_list(no_grad_set)}


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """d(sum of targets * target_gradients)/d(inputs), recorded into the current program;
    None where an input does not reach the targets."""
    _program._check_static("static.gradients")
    targets, inputs = _as_list(targets), _as_list(inputs)
    for t in targets:
        _check_var(t, "static.gradients", "targets")
    skip = _no_grad_names(no_grad_set)
    wrt = [x for x in inputs if x.name not in skip]
    cots = _as_list(target_gradients) or [None] * len(targets)
    if len(cots) != len(targets):
        raise ValueError(f"static.gradients: {len(targets)} targets but {len(cots)} target_gradients")
    cots = [c if c is not None else _C.ops.full_like(t, 1.0, t.dtype) for c, t in zip(cots, targets)]
    if not wrt:
        return [None] * len(inputs)
    _refuse_pylayers("static.gradients")
    # Inputs fed as data have stop_gradient=True; asking for their gradient means it.
    flipped = [x for x in wrt if x.stop_gradient]
    for x in flipped:
        x.stop_gradient = False
    try:
        with _program._paused():
            got = list(_C.grad(targets, wrt, cots, True, False, True))
    finally:
        for x in flipped:
            x.stop_gradient = True
    _record("grad", targets, wrt, _as_list(target_gradients) or [None] * len(targets), got)
    by_id = {id(x): g for x, g in zip(wrt, got)}
    out = []
    for x in inputs:
        g = by_id.get(id(x))
        if g is not None:
            g.name = f"{x.name}@GRAD"
        out.append(g)
    return out


def _refuse_pylayers(who):
    base = _program.default_main_program()._base()
    if base._pylayers:
        raise NotImplementedError(
            f"{who}: the program holds PyLayer {sorted(set(base._pylayers))}, whose custom backward a static "
            f"program does not record (its gradient would be the forward ops' own, silently): train it with "
            f"dynamic graph or oar.jit.to_static, which call the PyLayer's backward")


def _record(kind, *args):
    """Notes a backward or an update for the run to record (_specialize.py); the
    gradients of a backward become values of the program."""
    base = _program.default_main_program()._base()
    if kind == "grad":
        wrt, got = args[1], args[3]
        for i, (w, g) in enumerate(zip(wrt, got)):
            if g is None and w.stop_gradient:
                # A fed input: the placeholders' autograd graph does not reach it; the
                # recorded backward does (_specialize.py marks the fed input).
                with _program._paused():
                    g = got[i] = _C.ops.full_like(w, 0.0, w.dtype)
            if g is not None:
                name = _program.unique_name(f"{w.name}@GRAD")
                base._tracer.add_input(g, name, base._tracer.dims_of(w))
                g.name = f"{w.name}@GRAD"
                base._vars[g.name] = g
    base._grad_records.append((kind, *args))


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Records the gradient of `loss` with respect to the trainable parameters (or those in
    parameter_list) and returns [(parameter, gradient)], each gradient named '<param>@GRAD'."""
    _program._check_static("static.append_backward")
    _check_var(loss, "static.append_backward", "loss")
    _refuse_pylayers("static.append_backward")
    program = _program.default_main_program()
    if int(np.prod(loss.shape)) != 1:
        raise ValueError(f"static.append_backward: loss must hold one element, got shape {list(loss.shape)}")
    if parameter_list is not None:
        params = _resolve(program, _as_list(parameter_list), "static.append_backward: parameter_list")
    else:
        params = [p for p in program._base()._params.values()
                  if not p.stop_gradient and getattr(p, "trainable", True)]
    skip = _no_grad_names(no_grad_set)
    params = [p for p in params if p.name not in skip and not p.stop_gradient]
    if not params:
        raise ValueError("static.append_backward: no trainable parameter to differentiate")
    with _program._paused():
        grads = list(_C.grad([loss], params, [_C.ops.full_like(loss, 1.0, loss.dtype)], True, False, True))
    _record("grad", [loss], params, [None], grads)
    pairs = []
    for p, g in zip(params, grads):
        if g is None:
            continue
        g.name = f"{p.name}@GRAD"
        pairs.append((p, g))
    return pairs


# ---- optimizer updates as recorded ops (the same formulas as phi_kernels/cpu/optimizer_kernels.cc)
def _state(opt, kind, p, value):
    """The optimizer's persistable accumulator `kind` of parameter p ('<param>_<kind>_0')."""
    store = opt.__dict__.setdefault("_static_state", {})
    key = (kind, p.name)
    if key not in store:
        store[key] = _program.create_persistable(f"{p.name}_{kind}_0", value)
    return _m(store[key])


_replay = {}  # id(persistable) -> the stand-in a re-recording declared for it (_specialize.py)


def _m(t):
    return _replay.get(id(t), t)


def _lr_var(opt, program):
    """The learning rate: a constant for a float, else a float64 persistable variable that
    Executor.run sets from the scheduler before each run (scheduler.step() moves it)."""
    from ..optimizer.lr import LRScheduler

    lr = opt._learning_rate
    if not isinstance(lr, LRScheduler):
        return float(lr)
    store = opt.__dict__.setdefault("_static_state", {})
    if "lr" not in store:
        name = _program.unique_name("learning_rate")
        store["lr"] = _program.create_persistable(name, _C.to_tensor(np.asarray(lr(), dtype=np.float64), None,
                                                                      None, True))
        program._base()._lr_vars.append((name, lr))
    return store["lr"]


_dry = [False]  # minimize's first pass: the rules make their accumulators, write nothing


def _write(dst, value):
    if _dry[0]:
        return
    dst._copy_from(value.astype(dst.dtype) if value.dtype != dst.dtype else value)


def _sgd(opt, group, p, g, lr, wd):
    _write(p, p - (g + p * wd) * lr if wd else p - g * lr)


def _momentum(opt, group, p, g, lr, wd):
    mu = opt._hp(group, "momentum")
    v = _state(opt, "velocity", p, _C.ops.full_like(p, 0.0, p.dtype))
    if wd:
        g = g + p * wd
    vn = v * mu + g
    _write(v, vn)
    _write(p, p - (g + vn * mu) * lr if opt._nesterov else p - vn * lr)


def _adam(opt, group, p, g, lr, wd):
    import oar

    b1, b2, eps = opt._hp(group, "beta1"), opt._hp(group, "beta2"), opt._hp(group, "epsilon")
    m1 = _state(opt, "moment1", p, _C.ops.full_like(p, 0.0, p.dtype))
    m2 = _state(opt, "moment2", p, _C.ops.full_like(p, 0.0, p.dtype))
    # The powers b^t in float64, as the eager kernel's bias corrections.
    b1p = _state(opt, "beta1_pow_acc", p, _C.to_tensor(np.asarray([b1]), None, None, True))
    b2p = _state(opt, "beta2_pow_acc", p, _C.to_tensor(np.asarray([b2]), None, None, True))
    if opt._decoupled:
        p_in = p * (1.0 - lr * wd) if wd else p
    else:
        p_in = p
        if wd:
            g = g + p * wd
    m1n = m1 * b1 + g * (1.0 - b1)
    m2n = m2 * b2 + g * g * (1.0 - b2)
    bc2 = oar.sqrt(1.0 - b2p)
    lr_t = (lr * bc2 / (1.0 - b1p)).astype(p.dtype)
    eps_t = (bc2 * eps).astype(p.dtype)
    _write(m1, m1n)
    _write(m2, m2n)
    _write(b1p, b1p * b1)
    _write(b2p, b2p * b2)
    _write(p, p_in - lr_t * m1n / (oar.sqrt(m2n) + eps_t))


_RULES = {"SGD": _sgd, "Momentum": _momentum, "Adam": _adam, "AdamW": _adam}


def _rule(opt):
    for cls in type(opt).__mro__:
        if cls.__name__ in _RULES:
            return _RULES[cls.__name__]
    raise NotImplementedError(f"{type(opt).__name__}.minimize in static mode: only "
                              f"{sorted(_RULES)} record their update into a program so far")


def minimize(opt, loss, startup_program=None, parameters=None, no_grad_set=None):
    """Optimizer.minimize in static mode: appends the backward and the update ops."""
    from ..autograd import no_grad

    program = _program.default_main_program()
    rule = _rule(opt)
    if parameters is None and opt._parameter_list:
        parameters = opt._parameter_list
    pairs = append_backward(loss, parameters, no_grad_set)
    with no_grad(), _startup(startup_program):
        base = _lr_var(opt, program)
        group = opt._param_groups[0] if opt._param_groups else {}
        _dry[0] = True
        try:
            with _program._paused():
                apply_updates(opt, rule, pairs, base, group)
        finally:
            _dry[0] = False
    _record("apply", opt, rule, pairs, base, group)
    return None, pairs


def apply_updates(opt, rule, pairs, base, group):
    """Records the update of each (parameter, gradient) pair (clipping, decay, rule)."""
    from ..regularizer import L1Decay

    if opt._grad_clip is not None:
        pairs = opt._grad_clip(pairs)
    base = _m(base) if isinstance(base, _C.Tensor) else base
    for p, g in pairs:
        wd = opt._decay_coeff(group, p)
        if isinstance(wd, L1Decay):
            g = g + _C.ops.sign(p) * wd.coeff
            wd = 0.0
        scale = float(group.get("learning_rate", 1.0)) * float(
            (getattr(p, "optimize_attr", None) or {}).get("learning_rate", 1.0))
        if getattr(opt, "_lr_ratio", None) is not None:
            scale *= float(opt._lr_ratio(p))
        lr = base * scale if scale != 1.0 else base
        rule(opt, group, _m(p), g, lr, float(wd))


class _startup:
    """Accumulators initialise in minimize's startup_program when given."""

    def __init__(self, program):
        self.program, self.old = program, None

    def __enter__(self):
        if self.program is not None:
            self.old = _program.switch_startup_program(self.program)

    def __exit__(self, *exc):
        if self.old is not None:
            _program.switch_startup_program(self.old)
