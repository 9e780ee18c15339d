"""paddle.incubate.passes.ir.RegisterPass: a pass written as Python pattern/replace
functions, registered as an Oar IR pass of declarative rewrite rules (Note [Python DRR
passes] in docs/notes/pir.md)."""
import inspect

__all__ = ["RegisterPass"]

_PLACEHOLDER_SIZE = 2  # a -1 size of an input spec while the functions are traced


def _is_pair(p):
    return isinstance(p, (list, tuple)) and len(p) == 2 and all(inspect.isfunction(f) for f in p)


def _inputs(fn, input_specs, who):
    """(name, placeholder tensor, dims) per parameter of fn."""
    import oar
    from ...static import InputSpec

    out = []
    for name in inspect.getfullargspec(fn).args:
        spec = input_specs.get(name)
        if spec is None:
            dims, dtype = [-1], "float32"
        elif isinstance(spec, InputSpec):
            dims, dtype = list(spec.shape or []), spec.dtype
        else:
            raise TypeError(f"{who}: input_specs['{name}'] must be an InputSpec, got {type(spec).__name__}")
        shape = [_PLACEHOLDER_SIZE if d == -1 else d for d in dims]
        out.append((name, oar.zeros(shape, dtype=dtype), dims))
    return out


def _trace_program(fn, inputs):
    """fn traced on the placeholders `inputs` ((name, tensor, dims) each) into a pir
    program, and what fn returned."""
    from ... import _C, _trace_state

    tracer = _C.pir.Tracer()
    for name, t, dims in inputs:
        tracer.add_input(t, name, dims)
    tracer.start()
    _trace_state.active.append(tracer)
    try:
        out = fn(*[t for _, t, _ in inputs])
    finally:
        tracer.stop()
        _trace_state.active.remove(tracer)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return tracer, outs


def _trace(fn, inputs, who, what):
    """fn traced on the placeholders: its ops as (op name, input names, output names,
    attrs) naming inputs by parameter name, and the names of its outputs."""
    import oar

    tracer, outs = _trace_program(fn, inputs)
    for i, o in enumerate(outs):
        if not isinstance(o, oar.Tensor):
            raise TypeError(f"{who}: the {what} function must return tensors, got {type(o).__name__} at {i}")
    program = tracer.finish(outs)
    names, ops, results = {}, [], []
    for op in program.ops():
        if op.name == "builtin.input":
            names[op.result(0)] = op.attrs()["name"]
        elif op.name == "builtin.output":
            results.append(op.operands()[0])
        elif op.name in ("builtin.parameter", "builtin.constant"):
            raise ValueError(f"{who}: the {what} function reads a tensor that is none of its arguments "
                             f"({op.name}); patterns may only read their arguments")
        else:
            outs_named = []
            for v in op.results():
                names[v] = f"{what}{len(names)}"
                outs_named.append(names[v])
            ops.append([op.name, [names[v] for v in op.operands()], outs_named, op.attrs()])
    return ops, [names[v] for v in results]


def _rule(pattern, replace, input_specs, who, index):
    src_ops, src_outs = _trace(pattern, _inputs(pattern, input_specs, who), who, "pattern")
    res_ops, res_outs = _trace(replace, _inputs(replace, input_specs, who), who, "replace")
    if not src_ops:
        raise ValueError(f"{who}: the pattern function computes nothing (it returns its arguments)")
    if len(src_outs) != len(res_outs):
        raise ValueError(f"{who}: the pattern returns {len(src_outs)} tensors and the replace {len(res_outs)}")
    produced = {o for op in src_ops for o in op[2]}
    for i, o in enumerate(src_outs):
        if o not in produced:
            raise ValueError(f"{who}: the pattern's output {i} is one of its arguments; it must be computed")
    rename = {}
    for i, (s, r) in enumerate(zip(src_outs, res_outs)):
        if r in rename or r not in {o for op in res_ops for o in op[2]}:
            raise ValueError(f"{who}: the replace's output {i} must be a value it computes (not an argument, "
                             f"not another output)")
        rename[r] = s
    for op in res_ops:
        op[2] = [rename.get(o, o) for o in op[2]]
    # source values no pattern op reads and no output names: matched whatever their uses
    used = {i for op in src_ops for i in op[1]} | set(src_outs)
    for op in src_ops:
        op[2] = [o if o in used else "" for o in op[2]]
    if _canonical(src_ops) == _canonical(res_ops):
        return None  # replace computes it the same way (in Oar add_n is adds): nothing to rewrite
    to_tuple = lambda ops: [(n, list(i), list(o), dict(a)) for n, i, o, a in ops]  # noqa: E731
    return (f"{who}#{index}", to_tuple(src_ops), to_tuple(res_ops))


def _canonical(ops):
    """ops with their intermediate values renamed in order of definition (arguments and
    outputs keep their names), so two traces of the same computation compare equal."""
    rename = {}
    out = []
    for name, ins, outs, attrs in ops:
        for o in outs:
            if o.startswith(("pattern", "replace")):
                rename[o] = f"%{len(rename)}"
        out.append((name, [rename.get(i, i) for i in ins], [rename.get(o, o) for o in outs],
                    sorted(attrs.items(), key=lambda kv: kv[0])))
    return repr(out)


def RegisterPass(function=None, input_specs=None):  # noqa: N802 - Paddle's name
    """Registers the pass named like the decorated function, which returns a (pattern,
    replace) pair of functions or a list of them: wherever a program computes what pattern
    computes from its arguments, the pass computes it as replace does. `input_specs`
    (argument name -> InputSpec) gives the placeholders' shapes and dtypes for tracing
    (default: a float32 vector). Run it with `oar.pir.Program.run_passes("<name>")`; the
    decorated function is returned unchanged."""
    from ... import _C

    input_specs = dict(input_specs or {})

    def decorated(fn):
        who = f"RegisterPass({getattr(fn, '__name__', fn)!r})"
        if not inspect.isfunction(fn):
            raise TypeError(f"RegisterPass: expected a function, got {type(fn).__name__}")
        if inspect.signature(fn).parameters:
            raise NotImplementedError(f"{who}: the pass function must take no parameters")
        pairs = fn()
        if _is_pair(pairs):
            pairs = [pairs]
        elif not isinstance(pairs, (list, tuple)) or not pairs or not all(_is_pair(p) for p in pairs):
            raise ValueError(f"{who}: the pass function must return a (pattern, replace) pair of functions or "
                             f"a list of them, got {pairs!r}")
        if fn.__name__ in _C.pir.registered_passes():
            raise ValueError(f"{who}: a pass named '{fn.__name__}' is already registered")
        rules = [r for r in (_rule(p, r, input_specs, who, i) for i, (p, r) in enumerate(pairs)) if r is not None]
        _C.pir.register_drr_pass(fn.__name__, rules)
        return fn

    if function is None:
        return decorated
    return decorated(function)
