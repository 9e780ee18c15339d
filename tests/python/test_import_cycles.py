"""Import cycles among the oar.* modules, read from the sources with `ast` (nothing is imported).

An edge A -> B is an import of B in A: at module level (run when A is imported) or deferred
inside a function (run at call time, still a dependency), and sys.modules lookups of a
constant "oar.*" name. Layering wants nn below jit: jit may import nn, never the reverse
(nn reaches the tracer through oar._trace_state, which jit registers into). Imports of
the root package `oar` itself are left out: its __init__ is the facade that imports every
subpackage, so an edge to it would join every module into one cycle.
"""
import ast
import os
import textwrap

import pytest

import oar


def _modules(pkg_dir):
    """{dotted name: (path, is_package)} of the .py files under pkg_dir (the package `oar`)."""
    base = os.path.dirname(pkg_dir)
    out = {}
    for d, _, files in os.walk(pkg_dir):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                is_pkg = name.endswith(".__init__")
                out[name[:-len(".__init__")] if is_pkg else name] = (path, is_pkg)
    return out


def _imports(tree):
    """(node, deferred) for every import and sys.modules["..."] lookup; deferred when inside
    a function or lambda."""
    todo = [(n, False) for n in tree.body]
    while todo:
        n, deferred = todo.pop()
        yield n, deferred
        inner = deferred or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        todo.extend((c, inner) for c in ast.iter_child_nodes(n))


def _sys_modules_name(n):
    """The constant name in sys.modules["x"] / sys.modules.get("x"), else None."""
    if isinstance(n, ast.Subscript):
        target, key = n.value, n.slice
    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args:
        target, key = n.func.value, n.args[0]
    else:
        return None
    if (isinstance(target, ast.Attribute) and target.attr == "modules" and isinstance(target.value, ast.Name)
            and target.value.id == "sys" and isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return key.value
    return None


def import_graph(pkg_dir):
    """{module: {imported module: (deferred, line)}} over the modules of the package at pkg_dir."""
    mods = _modules(pkg_dir)
    root = os.path.basename(pkg_dir)
    graph = {}
    for name, (path, is_pkg) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        pkg = name if is_pkg else name.rpartition(".")[0]
        edges = {}
        for n, deferred in _imports(tree):
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    parts = pkg.split(".")
                    base = ".".join(parts[:len(parts) - n.level + 1] + ([n.module] if n.module else []))
                else:
                    base = n.module or ""
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in n.names]
            else:
                targets = [_sys_modules_name(n)]
            for t in targets:
                if t in mods and t not in (name, root):
                    # the first module-level import, else the first deferred one
                    if t not in edges or (deferred, n.lineno) < edges[t]:
                        edges[t] = (deferred, n.lineno)
        graph[name] = edges
    return graph


def cycles(graph, module_level_only=False):
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    succ = {v: [w for w, (deferred, _) in e.items() if not (module_level_only and deferred)]
            for v, e in graph.items()}
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    for start in graph:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def _path(graph, src, dst, within):
    """A shortest import path src -> ... -> dst inside `within`, as 'a -> b (line n) -> ...'."""
    prev, todo = {src: None}, [src]
    while todo and dst not in prev:
        nxt = []
        for v in todo:
            for w in graph[v]:
                if w in within and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    hops, v = [], dst
    while prev.get(v) is not None:
        deferred, line = graph[prev[v]][v]
        hops.append(f"{v} ({prev[v]}:{line}{', in a function' if deferred else ''})")
        v = prev[v]
    return " -> ".join([src] + hops[::-1])


def _subpackage_cycle(graph, a, b, module_level_only=False):
    """A message naming the import path around a cycle joining oar.<a> and oar.<b>, or None."""
    for comp in cycles(graph, module_level_only):
        xs = sorted(m for m in comp if m == f"oar.{a}" or m.startswith(f"oar.{a}."))
        ys = sorted(m for m in comp if m == f"oar.{b}" or m.startswith(f"oar.{b}."))
        if xs and ys:
            return (f"oar.{a} and oar.{b} are on one import cycle of {len(comp)} modules:\n  "
                    f"{_path(graph, xs[0], ys[0], comp)}\n  {_path(graph, ys[0], xs[0], comp)}")
    return None


PKG_DIR = os.path.dirname(os.path.abspath(oar.__file__))


@pytest.fixture(scope="module")
def graph():
    return import_graph(PKG_DIR)


def test_nn_and_jit_are_on_no_import_cycle(graph):
    msg = _subpackage_cycle(graph, "nn", "jit")
    assert msg is None, msg


def test_nn_never_imports_jit(graph):
    bad = [f"{m}:{line} imports {t}{' (in a function)' if deferred else ''}"
           for m, edges in graph.items() if m.startswith("oar.nn")
           for t, (deferred, line) in edges.items() if t.startswith("oar.jit")]
    assert not bad, "oar.nn must not import oar.jit (jit sits above nn):\n  " + "\n  ".join(bad)


def test_no_module_level_import_cycles(graph):
    # An import-time cycle hands some module a partly initialized module.
    found = [sorted(c) for c in cycles(graph, module_level_only=True)]
    assert not found, f"module-level import cycles: {found}"


def test_the_graph_finds_cycles_and_paths(tmp_path):
    # The checks above can fail: a package where nn imports jit in a function and jit
    # imports nn at module level is caught by the full graph, not by the module-level one.
    pkg = tmp_path / "oar"
    files = {
        "__init__.py": "from . import nn, jit\n",
        "nn/__init__.py": "from .layer import Layer\n",
        "nn/layer.py": "import sys\n\nclass Layer:\n    def __call__(self):\n"
                       "        from ..jit import api\n        return sys.modules.get('oar.jit.api')\n",
        "jit/__init__.py": "",
        "jit/api.py": "from ..nn.layer import Layer\n",
        "io.py": "from . import _C\n",
    }
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(textwrap.dedent(text))
    g = import_graph(str(pkg))
    assert g["oar.nn.layer"] == {"oar.jit.api": (True, 5)}
    assert g["oar.io"] == {}  # the root package (and what is not a source module) is no edge
    msg = _subpackage_cycle(g, "nn", "jit")
    assert "oar.nn.layer -> oar.jit.api (oar.nn.layer:5, in a function)" in msg
    assert "oar.jit.api -> oar.nn.layer (oar.jit.api:1)" in msg
    assert _subpackage_cycle(g, "nn", "jit", module_level_only=True) is None
    (pkg / "nn/layer.py").write_text("from ..jit import api\n")
    assert cycles(import_graph(str(pkg)), module_level_only=True) == [{"oar.nn.layer", "oar.jit.api"}]
