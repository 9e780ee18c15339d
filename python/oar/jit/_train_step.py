"""A whole training step inside a to_static function (Note [Training steps] in
docs/notes/jit.md): each `loss.backward()` traced onto the trainable state (adding to
held gradients), each optimizer's `step()` recorded as a dist.<rule>_update op, GradScaler,
clipping, AMP O2 masters and scheduler steps with it, or the signature run eagerly when
the program cannot hold what the code does. api.py installs the guarded
`Tensor.backward` and `clear_gradient` for the length of a trace, runs `finish_step`
after it, asks `held_key` which program variant fits a call and `run_step` to call it;
`Optimizer._apply_pairs` calls `record_step`, GradScaler `scaler_trace`, LRScheduler.step
`defer_side_effect`."""
import functools
from typing import NamedTuple

from .. import _C
from ..autograd import no_grad
from .api import EagerFallback, _active, _orig_backward, _user_frame


def converting_step():
    """True while to_static converts code on this thread: not static mode's recording (a
    Program's tracer) and not DistModel's global step, which record their own backward
    and optimizer updates."""
    if not _active:
        return False
    import sys

    prog = sys.modules.get("oar.static._program")
    if prog is not None and prog._recording is not None and prog._recording._tracer is _active[-1]:
        return False
    glob = sys.modules.get("oar.distributed.auto_parallel.static_global")
    return not (glob is not None and glob.tracing_global())


def training_step_fallback(what):
    """The EagerFallback for a training step inside a converted function that the program
    cannot hold (Note [Training steps]): traced as it is, `loss.backward()` or
    `Optimizer.step()` would run once at conversion and never in the program. The
    signature runs eagerly instead: correct, unfused, with a warning."""
    return EagerFallback(
        f"to_static: {_user_frame()}\n  calls {what} inside the converted function in a form a program cannot "
        f"hold, so this function runs eagerly. A training step converts when its optimizers step on the "
        f"gradients its loss.backward() calls leave in .grad (Note [Training steps] in docs/notes/jit.md); "
        f"or convert the forward and call loss.backward() and opt.step() after it.")


class StepTrace:
    """Note [Training steps]: what a to_static trace under autograd records of a training
    step inside the function: the held gradients and those each loss.backward() traces
    onto the trainable state, each optimizer's step with its state (program parameters)
    and the learning-rate and step holders its dist.<rule>_update op reads, the clears,
    a GradScaler's holder and check, and the side effects each call replays."""

    def __init__(self, tracer, state):
        self.tracer = tracer
        self.params = [t for _, t in state if not t.stop_gradient and t.dtype.is_floating_point]
        self.names = {id(t): n for n, t in state}
        self.entry_grads = {id(t): t.grad for t in self.params}  # put back after the trace
        self.held = []  # [(param, program name)]: gradients held at entry, read by the program
        self.grads = {}  # id(param) -> (param, its traced gradient)
        # [(optimizer, lr holder, step holder)]: each optimizer's step after the backward
        # (several: e.g. one for the embeddings, one for the rest)
        self.updates = []
        # [(optimizer, its parameters the recorded update leaves out)]: each call adds a step
        # they sat out, as an eager step does (Optimizer._step_lag)
        self.sat_out = []
        self.backwards = 0  # loss.backward() calls traced so far
        self.held_declared = False  # the held gradients are program parameters (declare_held)
        self.extra = []  # [(program name, tensor)]: the optimizer's state, lr, step
        self.recording = False
        # ids of the trainable tensors whose held gradient the code clears (clear_gradient,
        # which Optimizer.clear_grad and Layer.clear_gradients call) before any backward; a
        # clear after one sets the traced gradient to None (guarded_clear_gradient)
        self.cleared_first = set()
        self.kept = []  # [(param, traced gradient)]: left in .grad after the call (finish_step)
        # A GradScaler in the step (Note [Training steps]): the scaler, its loss-scaling
        # holder (a program parameter), the traced found_inf that skips the update, whether
        # the code calls update(), and its per-optimizer states during the trace
        self.scaler = self.scale = self.found_inf = None
        self.scaler_update = False
        self.scaler_states = {}
        self.deferred = []  # [(call, before the update)]: Python side effects every call replays
        self.restore_grads = []  # [(tensor outside the state, its .grad before the trace)]


class StepProgram(NamedTuple):
    """What runs a converted training step (ConcreteProgram.step): each optimizer that
    steps with its lr and step holders (none: a backward without a step), the extra
    program state by name, the trainable state, the parameters whose gradients the program
    returns (after its outputs) to leave in .grad, and the ids of those whose held
    gradients the code clears first."""
    updates: tuple  # ((optimizer, lr holder, step holder), ...)
    extra: dict
    params: list
    kept: list
    cleared: frozenset
    held: list  # [(param, program name)]: its held gradient is an input (accumulation)
    held_ids: frozenset  # the ids of those parameters
    scaler: object = None  # a GradScaler: its scale holder, and whether the code calls update()
    scale: object = None
    scaler_update: bool = False
    scaler_found: bool = False  # the program returns the scaler's found_inf last
    deferred: tuple = ()  # [(call, before the update)]: replayed at every call (LRScheduler.step)
    sat_out: tuple = ()  # ((optimizer, [parameters its update leaves out]), ...): StepTrace.sat_out


step_traces = []  # the training-step contexts of the traces in progress, innermost last


def step_trace():
    """The training-step context of the innermost to_static trace, if it has one."""
    if step_traces and _active and step_traces[-1].tracer is _active[-1]:
        return step_traces[-1]
    return None


def _drop_zeros(params):
    """Zero gradients held in .grad (an eager clear_grad's) add nothing: dropped, so a step
    after clear_grad(set_to_zero=True) needs no gradient inputs. A clear whose zeros were
    never written (Note [Deferred zeroing of .grad]) is dropped without writing or reading
    them; other gradients are read once."""
    for p in params:
        if p._grad_state() == 1:
            p.grad = None
            continue
        zero = p.grad._zero_bytes()  # one read with an early exit (a host tensor)
        if zero if zero is not None else not bool((p.grad != 0).any()):
            p.grad = None


_NOTHING_HELD = frozenset()


def held_key(info):
    """Which held gradients a call of the step `info` reads: the code's clear-first ones
    are discarded (set to None), zero ones the program does not read are dropped; the
    ids of the rest. A program traced for other held gradients does not fit the call
    (StaticFunction converts a variant for them). One pass over the parameters in the
    usual case (nothing held): this runs at every call."""
    held = []
    for p in info.params:
        if p._grad_state():  # not `p.grad is not None`: reading .grad writes a clear's zeros
            if id(p) in info.cleared:
                p.grad = None
            else:
                held.append(p)
    if not held:
        return _NOTHING_HELD
    _drop_zeros([p for p in held if id(p) not in info.held_ids])
    return frozenset(id(p) for p in held if p._grad_state())


def _set_scalar(holder, value):
    """Writes a 0-d host holder (lr, step count, loss scale) in place: through its NumPy
    view, ~10x cheaper than a new tensor and a copy (run_step runs at every call)."""
    if holder.place.is_cpu_place():
        holder._numpy_view()[()] = value
    else:
        import oar

        holder._copy_from(oar.to_tensor(value, dtype=holder.dtype))


def guarded_backward(self, grad_tensor=None, retain_graph=False):
    if not converting_step():
        return _orig_backward(self, grad_tensor, retain_graph)
    ctx = step_trace()
    if ctx is None or self.stop_gradient or not ctx.params or not ctx.tracer.is_traced(self):
        # no autograd in this trace, a loss the trace did not compute: run eagerly
        raise training_step_fallback("Tensor.backward()")
    if any(p._has_leaf_hooks() or _C.distributed.has_post_accumulate_hooks(p) for p in ctx.params):
        # hooks on a parameter's gradient (register_hook) or after it accumulates
        # (DataParallel's bucketed all-reduce): the traced backward computes the gradients
        # without accumulating them, so the program would skip the hooks
        raise training_step_fallback("Tensor.backward() on parameters with gradient hooks (register_hook) or "
                                     "post-accumulate hooks (DataParallel's gradient all-reduce)")
    if not ctx.held_declared:
        # Gradients held from before the call (an earlier backward: accumulation) are
        # program parameters; the backward adds to them (zero ones add nothing: dropped). A
        # later backward in the call (a GAN's generator loss after the discriminator's
        # step) adds to the traced gradients the code left.
        declare_held(ctx, drop_zeros=True)
    ctx.backwards += 1
    seed = grad_tensor if grad_tensor is not None else _C.ops.full_like(self, 1.0, self.dtype)
    grads = _C.grad([self], ctx.params, [seed], bool(retain_graph), False, True)
    with no_grad():
        for p, g in zip(ctx.params, grads):
            if g is not None:
                p.grad = g if p.grad is None else p.grad + g
            if p.grad is not None:
                ctx.grads[id(p)] = (p, p.grad)


def declare_held(ctx, drop_zeros):
    """Declares the gradients the trainable state holds at the call's start as program
    parameters '<param>@grad', set from .grad at each call (run_step): before the first
    backward, or at a step with no backward before it (the gradients of an eager backward
    outside the function, zero ones included: the step applies weight decay to them)."""
    ctx.held_declared = True
    if drop_zeros:
        ctx.tracer.stop()  # the held gradients are read eagerly, outside the program
        try:
            _drop_zeros([p for p in ctx.params if p._grad_state()])
        finally:
            ctx.tracer.start()
    for p in ctx.params:
        if p.grad is not None:
            name = f"{ctx.names[id(p)]}@grad"
            ctx.tracer.add_parameter(p.grad, name)
            ctx.held.append((p, name))
            if not drop_zeros:
                ctx.grads[id(p)] = (p, p.grad)


def guarded_clear_gradient(self, set_to_zero=True):
    """Tensor.clear_gradient while to_static traces: a training step notes which trainable
    tensors the code clears, before its backward (their held gradients are discarded at each
    call) or after it (the program leaves no gradient)."""
    from .api import _orig_clear_gradient

    ctx = step_trace() if converting_step() else None
    if ctx is not None and any(p is self for p in ctx.params):
        if not ctx.grads:
            ctx.cleared_first.add(id(self))
        if self.grad is not None and ctx.tracer.is_traced(self.grad):
            # a traced gradient: cleared in the program's terms (zeroing its trace-time
            # memory would leave the program's value, which a later backward adds to)
            self.grad = None
            return None
    return _orig_clear_gradient(self, set_to_zero)


def record_step(opt, pairs):
    """Optimizer._apply_pairs while to_static traces a training step: the update as one
    dist.<rule>_update op on the traced gradients (the bindings hand it to the tracer,
    distributed/static/update_ops.cc), its state and the lr/step holders program
    parameters. Anything else (no traced backward, another optimizer, a gradient from
    elsewhere, a dist parameter) runs the signature eagerly."""
    import oar

    ctx = step_trace()
    if ctx is not None and ctx.recording:
        return False  # the recording call itself: the bindings record
    if ctx is not None and not ctx.held_declared:
        # a step with no backward before it in the call: it updates with the gradients an
        # eager backward left, read as program parameters at each call
        declare_held(ctx, drop_zeros=False)
    traced = {} if ctx is None else {id(p): g for p, g in ctx.grads.values()}

    def fits(p, g):
        # a trainable tensor of the state with its traced gradient, or a tensor outside the
        # state (AMP O2's float32 master of a state parameter) with a gradient computed in
        # the trace (the cast of that parameter's gradient)
        if p.is_dist() or not ctx.tracer.is_traced(g):
            return False
        return traced.get(id(p)) is g if id(p) in ctx.names else not ctx.tracer.is_traced(p)

    updated = {id(p) for o, _, _ in ctx.updates for p in o._parameter_list} if ctx is not None else set()
    if (ctx is None or not pairs or any(o is opt for o, _, _ in ctx.updates) or any(id(p) in updated for p, _ in pairs)
            or not all(fits(p, g) for p, g in pairs)
            or (ctx.updates and (ctx.found_inf is not None or ctx.scaler is not None))
            or any(opt._step_lag.get(id(p)) for p, _ in pairs)):
        # no traced backward, the same optimizer twice, a parameter two optimizers update, a
        # GradScaler with several optimizers (each skips on its own gradients' check), a
        # parameter that sat out earlier steps (its bias correction has its own step count)...
        raise training_step_fallback(f"{type(opt).__name__}.step()")
    from ..distributed.auto_parallel.static_program import _state_names, _trace_update

    ctx.tracer.stop()  # the accumulators and holders are made eagerly, outside the program
    try:
        states = _state_names(opt, None)
        place = pairs[0][0].place  # the program's place, not the current device
        lr = oar.to_tensor(1.0, dtype="float64", place=place)
        step = oar.to_tensor(1, dtype="int64", place=place)
    finally:
        ctx.tracer.start()
    # Program names: '<name>@optimizer' for the first optimizer, '<name>@optimizer<k>' for
    # the k-th after it. Tensors the optimizer updates outside the function's state (O2
    # masters) are program state too: read and written in place at every call.
    tag = "@optimizer" + (str(len(ctx.updates)) if ctx.updates else "")
    outside = [(f"param{i}{tag}", p) for i, (p, _) in enumerate(pairs) if id(p) not in ctx.names]
    extra = outside + [(f"{n}{tag}", t) for n, t in states] + [(f"lr{tag}", lr), (f"step{tag}", step)]
    for name, t in extra:
        ctx.tracer.add_parameter(t, name)
    ctx.extra += extra
    ctx.updates.append((opt, lr, step))
    ids = {id(p) for p, _ in pairs}
    ctx.sat_out.append((opt, [p for g in opt._param_groups for p in g["params"] if id(p) not in ids]))
    ctx.recording = True
    try:
        _trace_update(opt, [(None, p, g) for p, g in pairs], {}, lr, step, ctx.found_inf)
    finally:
        ctx.recording = False
    return True


def defer_side_effect(what, fn, args, kwargs):
    """A Python side effect (LRScheduler.step) called while to_static converts code. In a
    training step it is recorded, not run: each call of the program replays it, before the
    update when the code ran it before opt.step(), else after the run (True). Elsewhere in
    a conversion (a forward) the program could not repeat it: the signature runs eagerly.
    Outside conversions (static mode, DistModel) False: the caller runs it. `fn` None: the
    effect cannot be replayed (it reads the state mid-step), the signature runs eagerly."""
    if not converting_step():
        return False
    ctx = step_trace()
    traced = [a for a in list(args) + list(kwargs.values()) if isinstance(a, _C.Tensor) and _active[-1].is_traced(a)]
    if ctx is None or traced or fn is None:
        raise training_step_fallback(what + (" on a computed tensor" if traced else ""))
    ctx.deferred.append((functools.partial(fn, *args, **kwargs), not ctx.updates))
    return True


def scaler_trace(scaler, place=None):
    """The training-step context while to_static converts a step that uses `scaler` (a
    GradScaler), None otherwise. The first call declares the loss-scaling holder, a float32
    program parameter set from the scaler before each call, as the lr holder is, on `place`
    (the scaled loss's; None: the current device)."""
    import oar

    ctx = step_trace() if converting_step() else None
    if ctx is None:
        return None
    if ctx.scaler is None:
        ctx.tracer.stop()
        try:
            ctx.scale = oar.to_tensor(scaler._scale, dtype="float32", place=place)
        finally:
            ctx.tracer.start()
        ctx.scaler = scaler
        ctx.tracer.add_parameter(ctx.scale, "loss_scaling@scaler")
        ctx.extra.append(("loss_scaling@scaler", ctx.scale))
    elif ctx.scaler is not scaler:
        raise training_step_fallback("a second GradScaler")
    return ctx


def finish_step(ctx):
    """After a trace: whether it traced a training step (a backward). Each gradient is
    then cleared (clear_grad after the step: the program keeps none) or left in .grad
    (no step, the clear-first form, or no clear: accumulation): the program returns those
    (ctx.kept) and each call sets them, as eager code leaves them."""
    if ctx is None or not ctx.grads:
        return False
    for p, g in ctx.grads.values():
        if p.grad is None:  # cleared (a traced gradient's clear sets None)
            continue
        if p.grad is not g:
            raise training_step_fallback("Tensor.backward() and code that replaces .grad")
        ctx.kept.append((p, g))
    return True


def run_step(entry, tensors, params):
    """Runs a training step's program (the variant get_concrete_program chose for the held
    gradients, held_key): the lr and step holders from the optimizer, its state with the
    function's and the held gradients it reads, then the step count moves on as an eager
    step's does, and the gradients the code leaves in .grad are set."""
    info = entry.step
    reads = info.held_ids
    feeds = {name: p.grad for p, name in info.held}
    for call, before in info.deferred:
        if before:
            call()
    if info.scaler is not None:
        _set_scalar(info.scale, info.scaler._scale)
    for opt, lr, step in info.updates:
        _set_scalar(lr, float(opt.get_lr()))
        _set_scalar(step, opt._step_count + 1)
    outs = entry.run(tensors, {**params, **info.extra, **feeds} if feeds else {**params, **info.extra})
    skipped = False
    if info.scaler_found:  # the program returns found_inf last; the scale moves on the host
        outs, found = outs[:-1], outs[-1]
        skipped = bool(found.item())  # the update skipped itself, as the eager step is skipped
        info.scaler._after_converted_step([opt for opt, _, _ in info.updates], skipped, info.scaler_update)
    for opt, _, _ in info.updates if not skipped else ():
        opt._step_count += 1
    for opt, idle in info.sat_out if not skipped else ():
        for p in idle:
            opt._step_lag[id(p)] = opt._step_lag.get(id(p), 0) + 1
    for call, before in info.deferred:
        if not before:
            call()
    for p in info.params if reads else ():
        if id(p) in reads:
            p.grad = None  # consumed: added to and returned below, or cleared
    if info.kept:
        outs, grads = outs[:len(outs) - len(info.kept)], outs[len(outs) - len(info.kept):]
        for p, g in zip(info.kept, grads):
            p.grad = g
    return outs
