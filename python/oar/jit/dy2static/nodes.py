"""The generated AST nodes' shared vocabulary: the name the runtime helpers have inside
converted code, the prefix of generated variables, and source positions for new nodes."""
import ast

_HELPER = "_oar_d2s"   # the runtime module's name inside converted code (a closure cell)
_PREFIX = "_oar_"      # generated names


def _helper(name):
    """`_oar_d2s.<name>`: a runtime helper (runtime.py) referred to from converted code."""
    return ast.Attribute(value=ast.Name(id=_HELPER, ctx=ast.Load()), attr=name, ctx=ast.Load())


def _stamp(new, src):
    """Gives the generated nodes under `new` that have no position the first line of `src`
    (so a traceback through generated code names the statement it came from)."""
    for n in ast.walk(new):
        if "lineno" in n._attributes and not hasattr(n, "lineno") or getattr(n, "lineno", None) is None and \
                "lineno" in n._attributes:
            n.lineno, n.end_lineno = src.lineno, src.lineno
            n.col_offset, n.end_col_offset = src.col_offset, src.col_offset
    return new


def _at(new, src):
    """`new` (generated for the statement `src`) placed on the first line of `src`."""
    new.lineno, new.col_offset = src.lineno, src.col_offset
    new.end_lineno, new.end_col_offset = src.lineno, src.col_offset
    return _stamp(new, src)


def _pos(n):
    return (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
