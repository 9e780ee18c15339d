"""oar.static.nn: explicit control flow.

cond(pred, true_fn, false_fn) and while_loop(cond, body, loop_vars) run eagerly as
Python would. Inside oar.jit.to_static, when the condition depends on the traced inputs
or parameters, they become the control-flow dialect's cf.if / cf.while: both branches
(or the loop body, once) are traced into the op's regions, and the executor picks the
branch or repeats the body at run time (Note [Tracing control flow], docs/notes/jit.md).
"""


def _tracer_for(x):
    from ...jit import api

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
    from ...jit import api

    tensors = []
    struct = api._flatten(out, tensors)
    return struct, tensors


def cond(pred, true_fn=None, false_fn=None, name=None, return_names=None):
    """true_fn() if pred else false_fn() (pred: a bool or a one-element bool tensor)."""
    from ... import _C

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
    from ...autograd import is_grad_enabled
    from ...jit import api

    if is_grad_enabled() and any(not t.stop_gradient for t in tensors):
        why = why or f"the backward program cannot contain a {kind} yet"
        raise api.EagerFallback(
            f"to_static: {api._user_frame()}\n  a {kind} whose condition is a traced tensor produces values that "
            f"need gradients; {why}, so calls with this signature "
            f"run eagerly (forward-only calls, e.g. under oar.no_grad() or for inference, use the program)")


def _traced_cond(tracer, pred, true_fn, false_fn):
    import oar
    from ...autograd import is_grad_enabled, no_grad
    from ...jit import api

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
    from ... import _C
    from ...autograd import enable_grad

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


def while_loop(cond, body, loop_vars, is_test=False, name=None, _carried_dims=None):
    """Runs loop_vars = body(*loop_vars) while cond(*loop_vars); returns loop_vars.
    (`_carried_dims`, for dy2static: per variable, [] to carry its exact type or dims with
    -1 for sizes that change per iteration, a list's buffer growing by a row.)"""
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
        return _traced_while(tracer, c, cond, body, loop_vars, _carried_dims, name)
    while bool(c):
        loop_vars = _next_vars(body(*loop_vars), len(loop_vars))
        c = cond(*loop_vars)
    return loop_vars


def _next_vars(out, n):
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(out) != n:
        raise ValueError(f"while_loop: body returned {len(out)} values for {n} loop_vars")
    return out


def _iteration_guard(name, fixed):
    """Note [Bounded loops] (docs/notes/robustness.md): the check before each iteration of a
    converted loop's eager run (the executor checks its runs the same way): a condition that
    no iteration changes and still holds after the first is an error, and so is an
    iteration past FLAGS_oar_max_while_iterations (0: no limit)."""
    from ... import _C

    label = f"while_loop '{name}'" if name else "while_loop"
    limit = int(_C.get_flag("oar_max_while_iterations"))

    def check(it):
        if it >= 1 and fixed:
            raise ValueError(f"{label} would never end: its condition is true and is computed from values "
                             f"that no iteration changes (update a value the condition reads in the loop body)")
        if 0 < limit <= it:
            raise RuntimeError(f"{label} ran {it} iterations, the limit FLAGS_oar_max_while_iterations={limit}; "
                               f"its condition may never become false (raise the flag, or 0 for no limit, if the "
                               f"loop really needs more)")
    return check


def _traced_while(tracer, c0, cond, body, loop_vars, carried_dims=None, name=None):
    import oar
    from ...autograd import is_grad_enabled

    if c0.dtype != oar.bool:
        c0 = c0.astype("bool")
    n = len(loop_vars)

    def trace_body(init, dims, extend=None):
        # The body, traced once on stand-ins of the loop variables (its block arguments).
        placeholders = _paused(tracer, lambda: [oar.assign(v) for v in init])
        tracer.begin_loop(init, placeholders, dims)
        nxt = _next_vars(body(*placeholders[:n]), n)
        cn = cond(*nxt)
        if cn.dtype != oar.bool:
            cn = cn.astype("bool")
        tracer.end_loop(cn, nxt + (extend(placeholders) if extend else []))
        return tracer.region_captures()

    carried_dims = carried_dims or [[] for _ in loop_vars]
    captures, random = trace_body(list(loop_vars), carried_dims)
    check = _iteration_guard(name, tracer.region_condition_fixed())
    grad_vars = [i for i, v in enumerate(loop_vars) if v.dtype.is_floating_point]
    wrt_caps = [c for c in captures if not c.stop_gradient and c.dtype.is_floating_point]
    need = is_grad_enabled() and (wrt_caps or any(not loop_vars[i].stop_gradient for i in grad_vars))
    if need and any(carried_dims):
        _refuse_gradients("cf.while", list(loop_vars) + wrt_caps,
                          "its body appends to a list (or grows a variable), whose history the backward "
                          "program cannot keep yet")
    if need and random:
        _refuse_gradients("cf.while", list(loop_vars) + wrt_caps,
                          "the body draws random numbers, which the backward program (recomputing each "
                          "iteration) would draw anew")
    if not need:
        # The real loop, run eagerly with tracing paused, gives the values to continue with.
        def run():
            vs, it = list(loop_vars), 0
            while bool(cond(*vs)):
                check(it)
                vs, it = _next_vars(body(*vs), n), it + 1
            return [oar.assign(v) for v in vs]
        results = _paused(tracer, run)
        tracer.finish_while(c0, loop_vars, results, str(name) if name else "")
        return results
    tracer.discard_region()
    return _traced_while_with_gradients(tracer, c0, cond, body, list(loop_vars), grad_vars, wrt_caps, trace_body,
                                        check, name)


def _traced_while_with_gradients(tracer, c0, cond, body, loop_vars, grad_vars, wrt_caps, trace_body, check,
                                  name):
    """Note [Gradients through cf.while] (docs/notes/jit.md): the loop also carries its
    iteration count and the history of its variables (each [1 + iterations, ...], grown by
    one row per iteration); the results get one autograd node whose backward is a while loop
    running the iterations in reverse, each recomputing the body from its row of the
    history and differentiating it (vector-Jacobian product w.r.t. that iteration's
    variables and the tensors the body captures)."""
    import oar
    from ... import _C
    from ...autograd import enable_grad, no_grad

    n = len(loop_vars)
    with no_grad():
        # Row 0 of each history is a copy of the initial value that no iteration reads:
        # it keeps the backward body traceable (it runs once while tracing, also when the
        # loop ran zero times); iteration k reads row k + 1.
        count0, hist0 = _paused(tracer, lambda: (oar.zeros([], dtype="int64"),
                                                 [oar.unsqueeze(v, [0]) for v in loop_vars]))
        dims = [[]] * (n + 1) + [[-1] + list(v.shape) for v in loop_vars]

        def extend(ph):
            # append_row: the executor appends in place, growing the memory by doubling
            # (Note [Donated inputs]); a concat would copy the whole history per iteration
            count, hist = ph[n], ph[n + 1:]
            return [count + 1] + [_C.ops._append_row(h, v) for h, v in zip(hist, ph[:n])]
        trace_body(loop_vars + [count0] + hist0, dims, extend)

        def run():
            vs, rows = list(loop_vars), [[] for _ in range(n)]
            while bool(cond(*vs)):
                check(len(rows[0]))
                for r, v in zip(rows, vs):
                    r.append(v)
                vs = _next_vars(body(*vs), n)
            hist = [oar.concat([h] + [oar.unsqueeze(v, [0]) for v in r]) for r, h in zip(rows, hist0)]
            return [oar.assign(v) for v in vs] + [oar.full([], len(rows[0]), dtype="int64")] + hist
        results = _paused(tracer, run)
    tracer.finish_while(c0, loop_vars + [count0] + hist0, results, str(name) if name else "")
    final, count, hist = results[:n], results[n], results[n + 1:]
    m = len(grad_vars)

    def backward(grads):
        def bcond(k, *rest):
            return k >= 0

        def bbody(k, *rest):
            gs, accs = rest[:m], rest[m:]
            idx = (k + 1).reshape([1])
            state = [oar.index_select(h, idx, axis=0).reshape(list(v.shape)) for h, v in zip(hist, loop_vars)]
            for i in grad_vars:
                state[i].stop_gradient = False
            with enable_grad():
                outs = _next_vars(body(*state), n)
            heads, cots = [], []
            for j, i in enumerate(grad_vars):
                if not outs[i].stop_gradient:
                    heads.append(outs[i])
                    cots.append(gs[j])
            wrt = [state[i] for i in grad_vars] + wrt_caps
            got = _C.grad(heads, wrt, cots, False, False, True, True) if heads else [None] * len(wrt)
            got = [g if g is not None else oar.zeros_like(w) for g, w in zip(got, wrt)]
            return [k - 1] + got[:m] + [a + g for a, g in zip(accs, got[m:])]

        init = [count - 1] + list(grads) + [oar.zeros_like(c) for c in wrt_caps]
        return tuple(while_loop(bcond, bbody, init)[1:])

    linked = _C.pylayer_apply("while_loop", backward, [loop_vars[i] for i in grad_vars] + wrt_caps,
                              [final[i] for i in grad_vars], [True] * m, True)
    for j, i in enumerate(grad_vars):
        final[i] = linked[j]
    return final


_LAYERS = ("fc", "conv2d", "batch_norm", "embedding")


def __getattr__(name):
    if name == "control_flow":
        import importlib

        return importlib.import_module(f"{__name__}.control_flow")
    if name in _LAYERS:  # they make parameters: loaded with the static machinery, on use
        from .. import _layers

        return getattr(_layers, name)
    raise AttributeError(f"module 'oar.static.nn' has no attribute '{name}'")
