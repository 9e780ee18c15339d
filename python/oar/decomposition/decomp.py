"""decompose: the registered decomposition rules applied to an IR program."""
import inspect

__all__ = ["decompose"]


def _short(name):
    return name[len("pd_op."):] if name.startswith("pd_op.") else name


def decompose(program, src_vars=None, blacklist=frozenset(), whitelist=frozenset()):
    """Rewrites each op of `program` (an oar.pir.Program, or a static Program: its ops so
    far) that has a registered rule into the rule's ops, in place for a pir program.
    `whitelist` (when not empty) limits the ops decomposed, `blacklist` excludes some (op
    names with or without 'pd_op.'). An op instance is rewritten when the rule traced on
    its operand shapes and attribute values gives the same result types. Returns the
    program's output values after the rewrite (src_vars, Paddle's variables to follow,
    are accepted for compatibility: every output is followed)."""
    from .. import _C
    from ..incubate.passes import ir
    from . import register

    if hasattr(program, "to_pir") and not isinstance(program, _C.pir.Program):
        program = program.to_pir()
    if not isinstance(program, _C.pir.Program):
        raise TypeError(f"decompose: program must be an oar.pir.Program or a static Program, got "
                        f"{type(program).__name__}")
    for what, names in (("blacklist", blacklist), ("whitelist", whitelist)):
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"decompose: {what} must be a set of op names, got {names!r}")
    black = {register.Registry.key(n) for n in blacklist}
    white = {register.Registry.key(n) for n in whitelist}
    rules, seen = [], set()
    producers = {}
    for op in program.ops():
        for v in op.results():
            producers[v] = op.name
    for op in program.ops():
        name = op.name
        rule = register.get_decomp_rule(name)
        if rule is None or name in black or (white and name not in white):
            continue
        operands = op.operands()
        if any(producers.get(v) == "builtin.combine" for v in operands):
            continue  # a list input: not a rule's tensor argument
        attrs = op.attrs()
        key = (name, tuple((tuple(v.shape), str(v.dtype)) for v in operands), repr(sorted(attrs.items())))
        if key in seen:
            continue
        seen.add(key)
        rules.append(_rule_for(ir, rule, name, operands, attrs, len(op.results())))
    if rules:
        _C.pir.apply_drr_rules(program, rules)
    return [op.operands()[0] for op in program.ops() if op.name == "builtin.output"]


def _rule_for(ir, rule, name, operands, attrs, num_results):
    """The DRR rule rewriting this op instance (its attribute values) into the rule's ops."""
    import oar

    who = f"decompose: the rule for '{_short(name)}'"
    params = list(inspect.signature(rule).parameters.values())
    if len(params) < len(operands):
        raise TypeError(f"{who} takes {len(params)} arguments, but the op has {len(operands)} tensor inputs")
    inputs = []
    for p, v in zip(params, operands):
        dims = list(v.shape)
        shape = [ir._PLACEHOLDER_SIZE if d == -1 else d for d in dims]
        inputs.append((p.name, oar.zeros(shape, dtype=str(v.dtype).replace("oar.", "")), dims))
    kwargs = {}
    for p in params[len(operands):]:
        if p.name in attrs:
            kwargs[p.name] = attrs[p.name]
        elif p.default is inspect.Parameter.empty:
            raise TypeError(f"{who}: its parameter '{p.name}' is no attribute of the op (it has "
                            f"{sorted(attrs)}) and has no default")
    ops, outs = ir._trace(lambda *xs: rule(*xs, **kwargs), inputs, who, "rule")
    results = [f"out{i}" for i in range(num_results)]
    if len(outs) != num_results:
        raise ValueError(f"{who} returns {len(outs)} tensors; the op has {num_results} results")
    produced = {o for op in ops for o in op[2]}
    if any(o not in produced for o in outs):
        raise ValueError(f"{who} returns one of its arguments; it must compute its results")
    rename = dict(zip(outs, results))
    for op in ops:
        op[2] = [rename.get(o, o) for o in op[2]]
    source = [(name, [n for n, _, _ in inputs], results, dict(attrs))]
    return (f"decompose:{_short(name)}", source, [(n, list(i), list(o), dict(a)) for n, i, o, a in ops])
