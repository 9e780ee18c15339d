"""oar.static.nn: explicit control flow.

cond(pred, true_fn, false_fn) and while_loop(cond, body, loop_vars) run eagerly as
Python would. Inside oar.jit.to_static, when the condition depends on the traced inputs
or parameters, they become the control-flow dialect's cf.if / cf.while: both branches
(or the loop body, once) are traced into the op's regions, and the executor picks the
branch or repeats the body at run time (Note [Tracing control flow], docs/notes/jit.md).
"""


def _tracer_for(x):
    from ..jit import api

    if api._active and isinstance(x, api._Tensor) and api._active[-1].is_traced(x):
        return api._active[-1]
    return None


def _paused(tracer, fn):
    tracer.stop()
    try:
        return fn()
    finally:
        tracer.start()


def _flat_tensors(out):
    from ..jit import api

    tensors = []
    struct = api._flatten(out, tensors)
    return struct, tensors


def cond(pred, true_fn=None, false_fn=None, name=None, return_names=None):
    """true_fn() if pred else false_fn() (pred: a bool or a one-element bool tensor)."""
    from .. import _C

    if isinstance(pred, _C.Tensor):
        if pred.size != 1:
            raise ValueError(f"cond: pred must hold one element, got shape {list(pred.shape)}")
        tracer = _tracer_for(pred)
        if tracer is not None:
            return _traced_cond(tracer, pred, true_fn, false_fn)
        pred = bool(pred)
    elif not isinstance(pred, bool):
        raise TypeError(f"cond: pred must be a bool or a bool Tensor, got {type(pred).__name__}")
    fn = true_fn if pred else false_fn
    return fn() if fn is not None else None


def _refuse_gradients(kind, tensors, why=None):
    """Gradients the backward program cannot give: such a signature runs eagerly instead
    (api.EagerFallback)."""
    from ..autograd import is_grad_enabled
    from ..jit import api

    if is_grad_enabled() and any(not t.stop_gradient for t in tensors):
        why = why or f"the backward program cannot contain a {kind} yet"
        raise api.EagerFallback(
            f"to_static: {api._user_frame()}\n  a {kind} whose condition is a traced tensor produces values that "
            f"need gradients; {why}, so calls with this signature "
            f"run eagerly (forward-only calls, e.g. under oar.no_grad() or for inference, use the program)")


def _traced_cond(tracer, pred, true_fn, false_fn):
    import oar
    from ..autograd import is_grad_enabled, no_grad
    from ..jit import api

    if pred.dtype != oar.bool:
        pred = pred.astype("bool")
    branches = []
    captures, random = {}, False
    for label, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"cond: {label} must be callable, got {type(fn).__name__}")
        tracer.begin_branch()
        struct, tensors = _flat_tensors(fn() if fn is not None else None)
        tracer.end_branch(tensors)
        caps, rnd = tracer.region_captures()
        for c in caps:
            captures.setdefault(id(c), c)
        random = random or rnd
        branches.append((struct, tensors))
    (t_struct, t_out), (f_struct, f_out) = branches
    if api._key_of(t_struct, t_out, [None] * len(t_out)) != api._key_of(f_struct, f_out, [None] * len(f_out)):
        raise ValueError("cond: true_fn and false_fn must return the same structure of tensors with the same "
                         "shapes and dtypes")
    wrt = [c for c in captures.values() if not c.stop_gradient and c.dtype.is_floating_point]
    if is_grad_enabled() and wrt and random:
        _refuse_gradients("cf.if", wrt, "a branch draws random numbers, which the backward program (recomputing "
                                        "the branch) would draw anew")
    taken = bool(api._orig_numpy(pred).reshape(()))
    # Fresh tensors for the results: a branch may return a tensor from outside it.
    with no_grad():
        results = _paused(tracer, lambda: [oar.assign(t) for t in (t_out if taken else f_out)])
    tracer.finish_if(pred, results)
    if is_grad_enabled() and wrt:
        results = _link_cond_gradients(pred, true_fn, false_fn, wrt, results)
    return api._unflatten(t_struct, results)


def _link_cond_gradients(pred, true_fn, false_fn, wrt, results):
    """Note [Gradients through cf.if] (docs/notes/jit.md): the results get one autograd
    node whose backward is itself a cond on the same pred, each branch recomputing its
    forward from the captured tensors `wrt` and differentiating it. Traced by the backward
    tracer, that is a cf.if in the backward program whose regions hold the branches'
    backward rules; run eagerly, it is the taken branch's gradient."""
    import oar
    from .. import _C
    from ..autograd import enable_grad

    def vjp(fn, grads):
        def run():
            with enable_grad():
                _, outs = _flat_tensors(fn() if fn is not None else None)
            heads, cots = [], []
            for o, g in zip(outs, grads):
                if g is not None and o.dtype.is_floating_point and not o.stop_gradient:
                    heads.append(o)
                    cots.append(g)
            got = _C.grad(heads, wrt, cots, False, False, True, True) if heads else [None] * len(wrt)
            return [g if g is not None else oar.zeros_like(w) for g, w in zip(got, wrt)]
        return run

    def backward(grads):
        return tuple(cond(pred, vjp(true_fn, grads), vjp(false_fn, grads)))

    diff = [r.dtype.is_floating_point for r in results]
    return _C.pylayer_apply("cond", backward, wrt, results, diff, True)


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Runs loop_vars = body(*loop_vars) while cond(*loop_vars); returns loop_vars."""
    import oar

    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    if not isinstance(loop_vars, (list, tuple)) or not loop_vars:
        raise ValueError("while_loop: loop_vars must be a non-empty list or tuple")
    loop_vars = list(loop_vars)
    c = cond(*loop_vars)
    tracer = _tracer_for(c)
    if tracer is not None:
        for i, v in enumerate(loop_vars):
            if not isinstance(v, oar.Tensor):
                raise TypeError(f"while_loop: loop_vars[{i}] must be a Tensor when the loop is converted, "
                                f"got {type(v).__name__}")
        return _traced_while(tracer, c, cond, body, loop_vars)
    while bool(c):
        loop_vars = _next_vars(body(*loop_vars), len(loop_vars))
        c = cond(*loop_vars)
    return loop_vars


def _next_vars(out, n):
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(out) != n:
        raise ValueError(f"while_loop: body returned {len(out)} values for {n} loop_vars")
    return out


def _traced_while(tracer, c0, cond, body, loop_vars):
    import oar

    if c0.dtype != oar.bool:
        c0 = c0.astype("bool")
    # The body, traced once on stand-ins of the loop variables (its block arguments).
    placeholders = _paused(tracer, lambda: [oar.assign(v) for v in loop_vars])
    tracer.begin_loop(loop_vars, placeholders)
    nxt = _next_vars(body(*placeholders), len(loop_vars))
    cn = cond(*nxt)
    if cn.dtype != oar.bool:
        cn = cn.astype("bool")
    tracer.end_loop(cn, nxt)
    _refuse_gradients("cf.while", list(loop_vars) + list(nxt))

    # The real loop, run eagerly with tracing paused, gives the values to continue with.
    def run():
        vs = list(loop_vars)
        while bool(cond(*vs)):
            vs = _next_vars(body(*vs), len(vs))
        return [oar.assign(v) for v in vs]
    results = _paused(tracer, run)
    tracer.finish_while(c0, loop_vars, results)
    return results
