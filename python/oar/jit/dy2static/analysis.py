"""Reading the AST before converting it: the names a block binds in its own scope, the
writes it makes to objects from outside, and why a block cannot move into a nested
function (a return, break/continue, global/nonlocal, yield, zero-argument super())."""
import ast

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _walk_scope(node):
    """The nodes of `node` in its own scope: not inside nested functions, lambdas or classes
    (their names are visited, not their bodies)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield c
                todo.extend(c.decorator_list)
                if not isinstance(c, ast.ClassDef):
                    todo.extend(d for d in c.args.defaults + c.args.kw_defaults if d is not None)
                continue
            if isinstance(c, ast.Lambda):
                yield c
                todo.extend(d for d in c.args.defaults + c.args.kw_defaults if d is not None)
                continue
            if isinstance(c, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                yield c  # its loop variables are its own; only walrus targets leak (found below)
                for sub in ast.walk(c):
                    if isinstance(sub, ast.NamedExpr):
                        yield sub
                        yield sub.target
                continue
            todo.append(c)


def _assigned(stmts):
    """Names bound (or deleted) by the statements in their own scope, in first-seen order."""
    out = []

    def add(n):
        if n not in out:
            out.append(n)
    for s in stmts:
        for n in _walk_scope(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    if a.name != "*":
                        add(a.asname or a.name.split(".")[0])
            elif isinstance(n, ast.ExceptHandler) and n.name:
                add(n.name)
            elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                add(n.rest)
    return out


# Methods that mutate a Python container in place (none of them is a Tensor method).
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                       "popitem", "appendleft", "extendleft", "discard"})


def _effects(stmts, local_names):
    """A description of writes to objects from outside (attributes, items of outer objects,
    list.append and other in-place container methods on them)."""
    for s in stmts:
        for n in _walk_scope(s):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS:
                base = n.func.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if not (isinstance(base, ast.Name) and base.id in local_names):
                    return ast.unparse(n.func) + "(...)"
            targets = []
            if isinstance(n, (ast.Assign,)):
                targets = n.targets
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets = [n.target]
            elif isinstance(n, ast.Delete):
                targets = n.targets
            todo = list(targets)
            while todo:
                t = todo.pop()
                if isinstance(t, (ast.Tuple, ast.List)):
                    todo.extend(t.elts)
                elif isinstance(t, ast.Starred):
                    todo.append(t.value)
                elif isinstance(t, ast.Attribute):
                    return ast.unparse(t)
                elif isinstance(t, ast.Subscript):
                    base = t.value
                    while isinstance(base, (ast.Subscript, ast.Attribute)):
                        base = base.value
                    if not (isinstance(base, ast.Name) and base.id in local_names):
                        return ast.unparse(t)
    return None


def _blocker(stmts, in_while_body=False):
    """Why these statements cannot move into a nested function (None if they can).
    `depth` counts the loops inside the statements (a break there is fine)."""

    def check(n, depth):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return f"a {type(n).__name__.lower()} declaration"
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return "yield/await"
        if isinstance(n, (ast.Break, ast.Continue)) and depth == 0:
            return f"{type(n).__name__.lower()} inside it" if in_while_body else \
                f"{type(n).__name__.lower()} of an enclosing loop"
        if isinstance(n, ast.Return) and in_while_body:
            return "a return inside the loop"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.args and \
                n.func.id in ("super", "locals", "vars"):
            return f"{n.func.id}() without arguments"
        for c in ast.iter_child_nodes(n):
            if isinstance(c, _SCOPES):
                continue
            inner = depth + 1 if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and c in n.body else depth
            r = check(c, inner)
            if r:
                return r
        return None

    for s in stmts:
        r = check(s, 0)
        if r:
            return r
    return None


def _has_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in _walk_scope(s))


def _falls_through(stmts):
    if not stmts:
        return True
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return False
    if isinstance(last, ast.If):
        return _falls_through(last.body) or not last.orelse or _falls_through(last.orelse)
    return True


def _walk_scope_body(func):
    for s in func.body:
        yield from _walk_scope(s)
