"""Training programs, recorded per fed shape (Note [Static mode], "The backward").

The forward part of a program holds -1 where static.data said None, so it runs at any
batch size. The backward rules read concrete sizes (reshape(grad, x.dims()), sum_to...),
as to_static's do, so a backward is recorded for the sizes of each feed: a new tracer
declares the inputs with the fed sizes, the forward part (the program pruned to the
values the backward and the fetches read) runs on the executor through the ops' eager
API, so the new tracer records it and autograd sees it, and then each backward and
update step the program noted is replayed on the new values. The executor caches the
result per feed shape."""
from .. import _C, _trace_state

_pir = _C.pir


def needs_specialization(program):
    """Programs with a backward, except clone(for_test=True)'s (forward only)."""
    return not program._for_test and bool(program._base()._grad_records)


def record(program, feed_shapes, fetch, place):
    """A pir program for these fed shapes ({name: shape}) that outputs `fetch`, recorded by
    running the forward on `place` (the executor's, where the parameters are)."""
    from ..autograd import enable_grad, no_grad
    from . import _backward

    base = program._base()
    params = {id(p) for p in base._params.values()}
    results = set()
    forward = []  # the values the replay reads from the forward part, first-seen order
    seen = set()

    def need(t):
        if t is not None and id(t) not in results and id(t) not in seen and id(t) not in params:
            seen.add(id(t))
            forward.append(t)

    for rec in base._grad_records:
        if rec[0] == "grad":
            _, targets, wrt, cots, got = rec
            for t in list(targets) + list(cots):
                need(t)
            results.update(id(g) for g in got if g is not None)
    for f in fetch:
        need(f)
    names = [f"v{i}" for i in range(len(forward))]
    # The forward's own parameter writes (batch norm's running statistics) come back as
    # outputs "write:<name>", applied below so that the new tracer records them.
    fwd = base._tracer.snapshot(forward, names, True, list(base._inputs), True)

    tracer = _pir.Tracer()
    inputs, new = {}, {}
    wrt_data = {id(w) for rec in base._grad_records if rec[0] == "grad" for w in rec[2]}
    for name, (placeholder, dims, dtype) in base._inputs.items():
        shape = list(feed_shapes.get(name, [2 if d == -1 else d for d in dims]))
        t = _C.ops.full(shape, 0.0, dtype, place)
        t.stop_gradient = id(placeholder) not in wrt_data
        tracer.add_input(t, name, shape)
        inputs[name] = t
        new[id(placeholder)] = t
    # Stand-ins sharing the parameters' memory with their own version counters: the
    # replayed updates write into them, and the program being built keeps reading the
    # parameters themselves. On another place than the parameters' (built on the current
    # device, run by Executor(place)), copies there.
    stand = {}
    for name, p in base._params.items():
        a = _C.Tensor(p) if p.place == place else p._copy_to(place, False)
        a.stop_gradient = p.stop_gradient
        a.name = name
        tracer.add_parameter(a, name)
        stand[id(p)] = a

    def get(t):
        if id(t) in new:
            return new[id(t)]
        if id(t) in stand:
            return stand[id(t)]
        raise NotImplementedError(
            f"Executor.run: '{t.name}' is computed from gradients or parameter updates; with dynamic input "
            f"sizes such a value cannot be fetched yet (feed the sizes static.data declares, or fetch the "
            f"loss, gradients and forward values)")

    ex = _pir.Executor(fwd, place)
    ex.set_differentiable(True)
    tracer.start()
    _trace_state.active.append(tracer)
    try:
        with enable_grad():
            missing = [n for n in ex.input_names if n not in inputs]
            if missing:
                raise NotImplementedError(
                    f"Executor.run: a fetched value is computed from the gradients {missing}; with the backward "
                    f"recorded per fed shape such a value cannot be fetched yet (fetch the gradients themselves)")
            outs = ex.run([inputs[n] for n in ex.input_names],
                          {n: stand[id(base._params[n])] for n in fwd.parameter_names() if n in base._params})
        by_name = dict(zip(ex.output_names, outs))
        for name, old in zip(names, forward):
            new[id(old)] = by_name[name]
        with no_grad():
            for name, value in by_name.items():
                if name.startswith("write:"):
                    stand[id(base._params[name[len("write:"):]])]._copy_from(value)
        for rec in base._grad_records:
            if rec[0] == "grad":
                _, targets, wrt, cots, got = rec
                t2 = [get(t) for t in targets]
                c2 = [get(c) if c is not None else _C.ops.full_like(t, 1.0, t.dtype) for c, t in zip(cots, t2)]
                g2 = _C.grad(t2, [get(w) for w in wrt], c2, True, False, True)
                for old, g in zip(got, g2):
                    if old is not None and g is not None:
                        new[id(old)] = g
            else:
                _, opt, rule, pairs, lr, group = rec
                _backward._replay.update(stand)
                try:
                    with no_grad():
                        _backward.apply_updates(opt, rule, [(p, get(g)) for p, g in pairs], lr, group)
                finally:
                    _backward._replay.clear()
        outs = [get(f) for f in fetch]
    finally:
        tracer.stop()
        _trace_state.active.remove(tracer)
    return tracer.finish(outs)
