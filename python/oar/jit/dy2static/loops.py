"""Loop rewriting before conversion: `for` over a range or over the rows of a tensor becomes
a while loop over a counter, break/continue become flags, `lst.append(v)` an assignment, so
that the converter then turns each while into convert_while_loop."""
import ast
import copy

from .analysis import _SCOPES
from .nodes import _PREFIX, _at, _helper, _stamp


class _LoopRewriter:
    """Before conversion (Note [Converting Python control flow], docs/notes/jit.md):

    for i in range(a, b, c): body    ->  _r = range_args(a, b, c); _k = _r[0]
                                          while range_cond(_k, _r): i = _k; _k = _k + _r[2]; body
    break / continue in a while      ->  flags: `while not _brk and test:`, `_cnt = flag(False)` at
                                          the top of the body, `break` -> `_brk = flag(True)`, and
                                          the statements after one guarded by `if not (_brk or _cnt):`

    so a range over a tensor, or a break under a tensor condition, becomes cf.while / cf.if,
    while Python values run the same iterations as before. Only break/continue reached
    through if statements are rewritten (one inside a with or try stays, and keeps its error)."""

    def __init__(self, local_names=()):
        self.counter = 0
        self.local_names = set(local_names)

    def fresh(self, kind):
        self.counter += 1
        return f"{_PREFIX}loop{self.counter}_{kind}"

    def appends(self, stmts):
        """`name.append(v)` statements of a loop body (a local list) become `name =
        list_append(name, v)`: the list is then a variable the loop assigns, which a
        converted loop carries as a TensorList (the same append in a Python loop)."""
        rewriter = self

        class _Appends(ast.NodeTransformer):
            def visit_FunctionDef(self, node):
                return node

            visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

            def visit_Expr(self, node):
                c = node.value
                if (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "append"
                        and isinstance(c.func.value, ast.Name) and c.func.value.id in rewriter.local_names
                        and len(c.args) == 1 and not c.keywords and not isinstance(c.args[0], ast.Starred)):
                    name = c.func.value.id
                    load = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), c.func.value)
                    store = ast.Name(id=name, ctx=ast.Store())  # written after the call has read it
                    store.lineno, store.col_offset = node.end_lineno, node.end_col_offset
                    store.end_lineno, store.end_col_offset = node.end_lineno, node.end_col_offset
                    call = rewriter._helper_call("list_append", [load, c.args[0]])
                    return _stamp(ast.copy_location(ast.Assign(targets=[store], value=call), node), node)
                return node
        t = _Appends()
        return [t.visit(st) for st in stmts]

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s):
        if isinstance(s, _SCOPES):
            return [s]
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, self.block(getattr(s, field)))
        for h in getattr(s, "handlers", []) or []:
            h.body = self.block(h.body)
        for c in getattr(s, "cases", []) or []:
            c.body = self.block(c.body)
        if isinstance(s, ast.For):
            return self.for_range(s)
        if isinstance(s, ast.While):
            s.body = self.appends(s.body)
            return self.flags(s)
        return [s]

    @staticmethod
    def _helper_call(name, args):
        return ast.Call(func=_helper(name), args=args, keywords=[])

    def for_rows(self, s):
        """`for v in x` / `for i, v in enumerate(x)`: when x is at run time a traced tensor
        with a dynamic first dim (iter_rows), a range loop over its rows, which becomes a
        cf.while; the loop as written otherwise (the body appears once per case)."""
        it, target = s.iter, s.target
        enum = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate"
                and len(it.args) == 1 and not it.keywords and not isinstance(it.args[0], ast.Starred))
        if enum:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2
                    and isinstance(target.elts[0], ast.Name)):
                return None
            index, target, it = target.elts[0].id, target.elts[1], it.args[0]
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "zip"):
            return None
        else:
            index = self.fresh("row")
        if s.orelse or isinstance(s, ast.AsyncFor):
            return None
        seq = self.fresh("seq")
        load = lambda n: ast.Name(id=n, ctx=ast.Load())  # noqa: E731
        store = lambda n: ast.Name(id=n, ctx=ast.Store())  # noqa: E731
        size = ast.Subscript(value=self._helper_call("shape_of", [load(seq)]), slice=ast.Constant(0), ctx=ast.Load())
        rows = ast.For(target=store(index), iter=ast.Call(func=load("range"), args=[size], keywords=[]),
                       body=[ast.Assign(targets=[target],
                                        value=ast.Subscript(value=load(seq), slice=load(index), ctx=ast.Load()))]
                       + copy.deepcopy(s.body), orelse=[])
        plain = copy.deepcopy(s)
        plain.iter = (ast.Call(func=load("enumerate"), args=[load(seq)], keywords=[]) if enum else load(seq))
        branch = ast.If(test=self._helper_call("iter_rows", [load(seq)]),
                        body=self.for_range(_at(rows, s)), orelse=[plain])
        return [_at(ast.Assign(targets=[store(seq)], value=it), s), _at(branch, s)]

    def for_range(self, s):
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            rows = self.for_rows(s)
            if rows is not None:
                return rows
        if s.orelse or not isinstance(s.target, ast.Name) or not (
                isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords
                and not any(isinstance(a, ast.Starred) for a in it.args)):
            return [s]
        r, k = self.fresh("range"), self.fresh("k")
        load = lambda n: ast.Name(id=n, ctx=ast.Load())  # noqa: E731
        store = lambda n: ast.Name(id=n, ctx=ast.Store())  # noqa: E731
        item = lambda n, i: ast.Subscript(value=load(n), slice=ast.Constant(i), ctx=ast.Load())  # noqa: E731
        head = [ast.Assign(targets=[store(r)], value=self._helper_call("range_args", list(it.args))),
                ast.Assign(targets=[store(k)], value=item(r, 0))]
        body = [ast.Assign(targets=[store(s.target.id)], value=load(k)),
                ast.Assign(targets=[store(k)], value=ast.BinOp(left=load(k), op=ast.Add(), right=item(r, 2)))]
        loop = ast.While(test=self._helper_call("range_cond", [load(k), load(r)]), body=body + self.appends(s.body),
                         orelse=[])
        out = [_at(x, s) for x in head + [loop]]
        return out[:2] + self.flags(out[2])

    # ---- break / continue
    @staticmethod
    def _jumps(stmts):
        """(breaks, continues, all reached through ifs only) of this loop's own jumps."""
        found, ok = set(), True

        def visit(n, via_if):
            nonlocal ok
            if isinstance(n, (ast.Break, ast.Continue)):
                found.add(type(n))
                ok = ok and via_if
                return
            if isinstance(n, _SCOPES) or isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
                # a nested loop's own jumps are its business; its else clause is ours
                for c in getattr(n, "orelse", []) if not isinstance(n, _SCOPES) else []:
                    visit(c, False)
                return
            for c in ast.iter_child_nodes(n):
                visit(c, via_if and isinstance(n, (ast.If, ast.stmt)) and not isinstance(
                    n, (ast.With, ast.AsyncWith, ast.Try, ast.Match) + ((ast.TryStar,) if hasattr(ast, "TryStar")
                                                                          else ())))
        for st in stmts:
            visit(st, True)
        return ast.Break in found, ast.Continue in found, ok

    def flags(self, s):
        if s.orelse:
            return [s]
        has_break, has_continue, ok = self._jumps(s.body)
        if not (has_break or has_continue) or not ok:
            return [s]
        brk = self.fresh("break") if has_break else None
        cnt = self.fresh("continue") if has_continue else None
        load = lambda n: ast.Name(id=n, ctx=ast.Load())  # noqa: E731

        def set_flag(n, node):
            return _at(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                                  value=self._helper_call("flag", [ast.Constant(True)])), node)

        def stop_test():
            names = [n for n in (brk, cnt) if n]
            e = load(names[0]) if len(names) == 1 else ast.BoolOp(op=ast.Or(), values=[load(n) for n in names])
            return ast.UnaryOp(op=ast.Not(), operand=e)

        def contains(st):
            return any(isinstance(n, (ast.Break, ast.Continue)) for n in self._own_nodes(st))

        def guard(stmts):
            out = []
            for i, st in enumerate(stmts):
                if isinstance(st, ast.Break):
                    out.append(set_flag(brk, st))
                    return out
                if isinstance(st, ast.Continue):
                    out.append(set_flag(cnt, st))
                    return out
                if isinstance(st, ast.If) and contains(st):
                    st.body = guard(st.body) or [ast.Pass()]
                    st.orelse = guard(st.orelse)
                    out.append(st)
                    rest = stmts[i + 1:]
                    if rest:
                        out.append(_at(ast.If(test=stop_test(), body=guard(rest), orelse=[]), rest[0]))
                    return out
                out.append(st)
            return out

        body = guard(s.body)
        pre = []
        if cnt:
            body = [_at(ast.Assign(targets=[ast.Name(id=cnt, ctx=ast.Store())],
                                   value=self._helper_call("flag", [ast.Constant(False)])), s)] + body
        if brk:
            pre = [_at(ast.Assign(targets=[ast.Name(id=brk, ctx=ast.Store())],
                                  value=self._helper_call("flag", [ast.Constant(False)])), s)]
            s.test = ast.copy_location(ast.BoolOp(op=ast.And(), values=[
                ast.UnaryOp(op=ast.Not(), operand=load(brk)), s.test]), s.test)
        s.body = body
        return pre + [_stamp(s, s)]

    @staticmethod
    def _own_nodes(st):
        """The nodes of `st` outside nested loops and scopes."""
        todo = [st]
        while todo:
            n = todo.pop()
            yield n
            for c in ast.iter_child_nodes(n):
                if isinstance(c, _SCOPES) or isinstance(c, (ast.For, ast.AsyncFor, ast.While)):
                    continue
                todo.append(c)
