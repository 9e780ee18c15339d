"""Converting statements and expressions: an if or while whose test may be a traced tensor
becomes nested functions over the variables it assigns and a call of convert_ifelse /
convert_while_loop; and/or/not, `a if c else b`, calls, print, len and x.shape become calls
of the runtime helpers (runtime.py). A block that cannot move into a nested function keeps
its Python statement with a python_bool test."""
import ast
import copy

from .analysis import _assigned, _blocker, _effects, _falls_through, _has_return, _walk_scope
from .nodes import _HELPER, _PREFIX, _at, _helper, _pos, _stamp

_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul", ast.Div: "truediv",
        ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
        ast.BitAnd: "and_", ast.BitXor: "xor", ast.BitOr: "or_"}

class _AugToAssign(ast.NodeTransformer):
    """`x op= v` -> `x = _oar_d2s.augassign(x, v, "op")` (this scope only)."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name) or type(node.op) not in _AUG:
            return node
        call = ast.Call(func=_helper("augassign"),
                        args=[ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target), node.value,
                              ast.Constant(_AUG[type(node.op)])], keywords=[])
        new = ast.Assign(targets=[ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Store()), node.target)],
                         value=call)
        return _stamp(ast.copy_location(new, node), node)


def _augs(stmts):
    t = _AugToAssign()
    return [t.visit(s) for s in stmts]



# Calls left as they are: builtins whose arguments or frame matter (zero-argument super()
# reads the frame; the others are common and never user functions).
_PLAIN_CALLS = frozenset({"super", "locals", "vars", "globals", "isinstance", "len", "range", "print",
                          "getattr", "setattr", "hasattr", "type", "int", "float", "bool", "str", "list",
                          "tuple", "dict", "zip", "enumerate", "min", "max", "abs", "sum", "any", "all"})


class _ExprConverter(ast.NodeTransformer):
    """and/or/not and `a if c else b` -> runtime helpers (not inside nested scopes)."""

    def __init__(self, where):
        self.where = where
        self.changed = False

    @staticmethod
    def _thunk(e):
        return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                             kwarg=None, defaults=[]), body=e)

    @staticmethod
    def _plain(e):
        """Can move into a lambda: no walrus, yield or zero-argument super()."""
        return not any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) or (
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args)
            for n in ast.walk(e))

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def _comp(self, node):
        return node  # comprehension scopes stay as they are
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comp

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == _HELPER:
            return node  # a helper call made by the conversion
        if isinstance(f, ast.Name) and f.id == "print":
            self.changed = True  # print of traced tensors: printed when the program runs
            return ast.copy_location(ast.Call(func=_helper("convert_print"), args=node.args,
                                              keywords=node.keywords), node)
        if isinstance(f, ast.Name) and f.id == "len" and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], ast.Starred):
            self.changed = True  # len(x) of a dynamic first dim: a run-time size
            return ast.copy_location(ast.Call(func=_helper("convert_len"), args=node.args, keywords=[]), node)
        if isinstance(f, ast.Name) and f.id in _PLAIN_CALLS:
            return node
        self.changed = True
        node.func = ast.copy_location(ast.Call(func=_helper("convert_call"), args=[f], keywords=[]), f)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if not all(self._plain(v) for v in node.values[1:]):
            return node
        fn = "convert_and" if isinstance(node.op, ast.And) else "convert_or"
        self.changed = True
        call = ast.Call(func=_helper(fn), args=[node.values[0]] + [self._thunk(v) for v in node.values[1:]],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.changed = True
        return ast.copy_location(ast.Call(func=_helper("convert_not"), args=[node.operand], keywords=[]), node)

    def visit_Attribute(self, node):
        # x.shape -> shape_of(x): SymInts for the dynamic dims of a traced tensor
        # (_dynamic_shape.py); the value itself for anything else.
        self.generic_visit(node)
        if node.attr != "shape" or not isinstance(node.ctx, ast.Load):
            return node
        self.changed = True
        return ast.copy_location(ast.Call(func=_helper("shape_of"), args=[node.value], keywords=[]), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if not (self._plain(node.body) and self._plain(node.orelse)):
            return node
        self.changed = True
        call = ast.Call(func=_helper("convert_ifexp"),
                        args=[node.test, self._thunk(node.body), self._thunk(node.orelse),
                              ast.Constant(self.where(node))], keywords=[])
        return ast.copy_location(call, node)


class _Converter:
    def __init__(self, func_node, filename, lines, first):
        self.func = func_node
        self.filename = filename
        self.lines = lines
        self.counter = 0
        self.changed = False
        # every read of a name in the function (with nested scopes), to decide which
        # variables an if/while must hand back: (name, node id)
        self.loads = []
        self.reads_all = False
        for n in ast.walk(func_node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Load, ast.Del)):
                self.loads.append((n.id, _pos(n)))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                self.loads.append((n.target.id, _pos(n.target)))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (
                    "locals", "vars", "eval", "exec", "dir"):
                self.reads_all = True
        self.exprs = _ExprConverter(self.where)
        # names declared global/nonlocal: an assignment to one cannot move into a nested function
        self.declared = {name for st in func_node.body for n in _walk_scope(st)
                         if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}

    # ---- helpers
    def where(self, node):
        line = node.lineno
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return f"{self.filename}:{line}: {text}"

    def fresh(self, kind):
        self.counter += 1
        return f"{_PREFIX}{kind}_{self.counter}"

    def read_outside(self, nodes, include_inside=False):
        """Names read outside the subtrees `nodes` (or anywhere, with include_inside)."""
        if include_inside:
            return {n for n, _ in self.loads}
        # by source position: the statements after an early return are copied into both
        # branches, and a copy is the same source as its original
        inside = {_pos(x) for node in nodes for x in ast.walk(node) if isinstance(x, ast.Name)}
        return {n for n, i in self.loads if i not in inside}

    def expr(self, e):
        return self.exprs.visit(e)

    def _undef_dels(self, names, node):
        out = []
        for n in names:
            test = ast.Compare(left=ast.Name(id=n, ctx=ast.Load()), ops=[ast.Is()],
                               comparators=[_helper("UNDEFINED")])
            out.append(ast.If(test=test, body=[ast.Delete(targets=[ast.Name(id=n, ctx=ast.Del())])], orelse=[]))
        return [ast.copy_location(s, node) for s in out]

    def _pick(self, names):
        return ast.Call(func=_helper("pick"),
                        args=[ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
                              ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())], keywords=[])

    def _def(self, name, params, body, node):
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None, kwonlyargs=[],
                             kw_defaults=[], kwarg=None, defaults=[])
        fn = ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None,
                             type_comment=None)
        return ast.copy_location(fn, node)

    @staticmethod
    def _tuple(names):
        return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())

    # ---- statements
    def stmts(self, stmts, terminal, in_loop):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.If):
                res, consumed = self.if_stmt(s, stmts[i + 1:], terminal, in_loop)
                out.extend(res)
                if consumed:
                    break
            elif isinstance(s, ast.While):
                out.extend(self.while_stmt(s, in_loop))
            else:
                out.append(self.other(s, in_loop))
        return out

    def other(self, s, in_loop):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return s
        loop = isinstance(s, (ast.For, ast.AsyncFor))
        for field in ("body", "orelse", "finalbody"):
            if hasattr(s, field) and isinstance(getattr(s, field), list):
                setattr(s, field, self.stmts(getattr(s, field), False, in_loop or (loop and field == "body")))
        if isinstance(s, ast.Try) or (hasattr(ast, "TryStar") and isinstance(s, getattr(ast, "TryStar"))):
            for h in s.handlers:
                h.body = self.stmts(h.body, False, in_loop)
        if isinstance(s, ast.Match):
            for c in s.cases:
                c.body = self.stmts(c.body, False, in_loop)
        # expressions of this statement (not of its nested blocks, handled above)
        for field, value in ast.iter_fields(s):
            if isinstance(value, ast.expr):
                setattr(s, field, self.expr(value))
            elif isinstance(value, list) and value and all(isinstance(v, ast.expr) for v in value):
                setattr(s, field, [self.expr(v) for v in value])
        if isinstance(s, ast.With):
            for item in s.items:
                item.context_expr = self.expr(item.context_expr)
        return s

    def _unconverted_if(self, s, reason, in_loop):
        where = self.where(s)
        s.test = ast.copy_location(ast.Call(func=_helper("python_bool"),
                                            args=[self.expr(s.test), ast.Constant(where), ast.Constant(reason)],
                                            keywords=[]), s.test)
        s.body = self.stmts(s.body, False, in_loop)
        s.orelse = self.stmts(s.orelse, False, in_loop)
        self.changed = True
        return s

    def if_stmt(self, s, rest, terminal, in_loop):
        body, orelse = s.body, s.orelse
        reason = _blocker(body + orelse) or self._declared_in(body + orelse)
        returns = _has_return(body + orelse)
        if reason is None and returns and not terminal:
            reason = "a return inside an if that is inside a loop, with or try block"
        if reason is not None:
            return [self._unconverted_if(s, reason, in_loop)], False
        self.changed = True
        where = self.where(s)
        consumed = False
        if returns:
            # Early return: what follows the if runs in the branches that fall through, so the
            # if ends the function and both branches return.
            if rest:
                if _falls_through(body):
                    body = body + [copy.deepcopy(r) for r in rest]
                if _falls_through(orelse):
                    orelse = orelse + [copy.deepcopy(r) for r in rest]
            consumed = True
        params = _assigned(body + orelse)
        if returns:
            outs = []
        else:
            live = self.read_outside([s], include_inside=in_loop or self.reads_all)
            outs = [n for n in params if n in live]
        effects = _effects(body + orelse, set(params))
        test = self.expr(s.test)
        t_name, f_name = self.fresh("true"), self.fresh("false")
        tail = [] if returns else [ast.Return(value=self._pick(outs))]
        body, orelse = _augs(body), _augs(orelse)
        t_def = self._def(t_name, params, self._undef_dels(params, s) + self.stmts(body, returns, in_loop) + tail, s)
        f_def = self._def(f_name, params, self._undef_dels(params, s) + self.stmts(orelse, returns, in_loop) + tail,
                          s)
        call = ast.Call(func=_helper("convert_ifelse"),
                        args=[test, ast.Name(id=t_name, ctx=ast.Load()), ast.Name(id=f_name, ctx=ast.Load()),
                              self._pick(params), self._tuple(outs), ast.Constant(where)],
                        keywords=[ast.keyword(arg="returns", value=ast.Constant(returns)),
                                  ast.keyword(arg="effects", value=ast.Constant(effects))])
        out = [t_def, f_def]
        if returns:
            out.append(ast.Return(value=call))
        elif outs:
            target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in outs], ctx=ast.Store())
            out.append(ast.Assign(targets=[target], value=call))
            out.extend(self._undef_dels(outs, s))
        else:
            out.append(ast.Expr(value=call))
        return [_at(x, s) for x in out], consumed

    def while_stmt(self, s, in_loop):
        reason = _blocker(s.body, in_while_body=True) or self._declared_in(s.body)
        if reason is None and s.orelse:
            reason = "an else clause on the loop"
        if reason is None and _blocker([ast.Expr(value=s.test)]):
            reason = _blocker([ast.Expr(value=s.test)])
        if reason is not None:
            where = self.where(s)
            s.test = ast.copy_location(ast.Call(func=_helper("python_bool"),
                                                args=[self.expr(s.test), ast.Constant(where), ast.Constant(reason)],
                                                keywords=[]), s.test)
            s.body = self.stmts(s.body, False, True)
            s.orelse = self.stmts(s.orelse, False, in_loop)
            self.changed = True
            return [s]
        self.changed = True
        where = self.where(s)
        names = _assigned(s.body)
        live_out = self.read_outside([s], include_inside=self.reads_all)
        test_reads = {n.id for n in ast.walk(s.test) if isinstance(n, ast.Name)}
        carried = [n in test_reads or n in live_out or not self._body_local(n, s.body) for n in names]
        live = [n in live_out for n in names]
        effects = _effects(s.body, set(names))
        c_name, b_name = self.fresh("cond"), self.fresh("body")
        c_def = self._def(c_name, names, self._undef_dels(names, s) + [ast.Return(value=self.expr(s.test))], s)
        b_def = self._def(b_name, names, self._undef_dels(names, s) + self.stmts(_augs(s.body), False, True)
                          + [ast.Return(value=self._pick(names))], s)
        call = ast.Call(func=_helper("convert_while_loop"),
                        args=[ast.Name(id=c_name, ctx=ast.Load()), ast.Name(id=b_name, ctx=ast.Load()),
                              self._pick(names), self._tuple(names),
                              ast.Tuple(elts=[ast.Constant(c) for c in carried], ctx=ast.Load()),
                              ast.Tuple(elts=[ast.Constant(c) for c in live], ctx=ast.Load()),
                              ast.Constant(where)],
                        keywords=[ast.keyword(arg="effects", value=ast.Constant(effects))])
        out = [c_def, b_def]
        if names:
            target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
            out.append(ast.Assign(targets=[target], value=call))
            out.extend(self._undef_dels(names, s))
        else:
            out.append(ast.Expr(value=call))
        return [_at(x, s) for x in out]

    def _declared_in(self, stmts):
        hit = [n for n in _assigned(stmts) if n in self.declared]
        return f"it assigns the global/nonlocal variable '{hit[0]}'" if hit else None

    @staticmethod
    def _body_local(name, body):
        """True when the body's first top-level statement mentioning `name` is a plain
        assignment to it that does not read it (a fresh value every iteration)."""
        for st in body:
            mentions = [n for n in ast.walk(st) if isinstance(n, ast.Name) and n.id == name]
            if not mentions:
                continue
            if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                stores = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and n.id == name]
                reads = [n for n in ast.walk(st.value) if isinstance(n, ast.Name) and n.id == name]
                plain = all(isinstance(t, (ast.Name, ast.Tuple, ast.List)) for t in targets)
                return bool(stores) and not reads and plain and len(stores) == len(mentions)
            return False
        return False
