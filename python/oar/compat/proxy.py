"""`import torch` served by oar (Paddle 3.3's torch proxy; Note [Torch proxy] below).

enable_torch_proxy() puts a finder first on sys.meta_path that answers `torch` and
`torch.<sub>` with proxy modules of `oar` and `oar.<sub>`: every attribute is oar's own object
(`torch.sin is oar.sin`), except that oar.compat's torch-signature functions replace their
namesakes (`torch.max` is oar.compat.max, `torch.nn.Linear` is oar.compat.nn.Linear).

Note [Torch proxy]: a real torch already imported is set aside while the proxy is on and put
back by disable_torch_proxy(). With `scope`, only imports made while a module of the scope
executes (or a module of the scope itself importing `torch`) see the proxy; modules in the
blocked list never do."""
import contextlib
import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

__all__ = ["enable_torch_proxy", "disable_torch_proxy", "use_torch_proxy_guard",
           "extend_torch_proxy_blocked_modules"]

BLOCKED = {"tvm_ffi"}
_ENABLED_MARK = "__enable_torch_proxy__"
_DISABLED_MARK = "__disable_torch_proxy__"
_REAL_TORCH = {}  # name -> the real torch module set aside while the proxy is on


def _under(name, root):
    return name == root or name.startswith(root + ".")


def _overrides():
    """{'torch.max': oar.compat.max, 'torch.nn.Linear': ...}: oar.compat's public names."""
    from .. import compat
    from . import nn
    from .nn import functional
    table = {}
    for prefix, mod in (("torch", compat), ("torch.nn", nn), ("torch.nn.functional", functional)):
        for name in mod.__all__:
            table[f"{prefix}.{name}"] = getattr(mod, name)
    return table


class ProxyModule(types.ModuleType):
    """A `torch...` module whose attributes are those of the oar module it mirrors."""

    def __init__(self, source, name, overrides):
        super().__init__(name)
        self._source = source
        self._overrides = overrides

    def __getattr__(self, name):
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._source, name)


def _called_from_marked(mark):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get(mark):
            return True
        frame = frame.f_back
    return False


class _Loader(importlib.abc.Loader):
    def __init__(self, make):
        self._make = make

    def create_module(self, spec):
        return self._make(spec)

    def exec_module(self, module):
        pass


class _MarkingLoader(importlib.abc.Loader):
    """Runs a module's real loader with the proxy on or off and marks the module so that the
    imports its functions make later get the same treatment."""

    def __init__(self, real, enable, mark):
        self._real, self._enable, self._mark = real, enable, mark

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        with use_torch_proxy_guard(enable=self._enable, silent=True):
            self._real.exec_module(module)
        module.__dict__[self._mark] = True


class TorchProxyFinder:
    def __init__(self):
        self.scope = set()
        self.globally = True

    def set_scope(self, scope):
        self.scope = set(scope or ())
        self.globally = scope is None

    def find_spec(self, fullname, path, target=None):
        if any(_under(fullname, b) for b in BLOCKED):
            return self._marked_spec(fullname, False, _DISABLED_MARK)
        if any(_under(fullname, s) for s in self.scope):
            return self._marked_spec(fullname, True, _ENABLED_MARK)
        if not _under(fullname, "torch"):
            return None
        if _called_from_marked(_DISABLED_MARK) or (
                not self.globally and not _called_from_marked(_ENABLED_MARK)):
            real = _REAL_TORCH.get(fullname)
            if real is None:
                return None
            spec = importlib.util.spec_from_loader(fullname, _Loader(lambda s: real),
                                                   is_package=True)
            spec.submodule_search_locations = list(getattr(real, "__path__", []))
            return spec
        return self._proxy_spec(fullname)

    def _marked_spec(self, fullname, enable, mark):
        with use_torch_proxy_guard(enable=False, silent=True):
            spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _MarkingLoader(spec.loader, enable, mark)
        return spec

    def _proxy_spec(self, fullname):
        source = importlib.import_module("oar" + fullname[len("torch"):])
        table = {k[len(fullname) + 1:]: v for k, v in _overrides().items()
                 if k.startswith(fullname + ".") and "." not in k[len(fullname) + 1:]}
        is_pkg = hasattr(source, "__path__")

        def make(spec):
            mod = ProxyModule(source, fullname, table)
            mod.__file__ = getattr(source, "__file__", None)
            if is_pkg:
                mod.__path__ = []  # submodules come from this finder, never from disk
            mod.__package__ = fullname if is_pkg else fullname.rpartition(".")[0]
            return mod
        return importlib.util.spec_from_loader(fullname, _Loader(make), is_package=is_pkg,
                                               origin=getattr(source, "__file__", None))


FINDER = TorchProxyFinder()


def _parse(scope, arg):
    if scope is None:
        return None
    if isinstance(scope, str):
        return {scope}
    try:
        names = set(scope)
    except TypeError:
        raise TypeError(f"enable_torch_proxy: {arg} must be a module name or an iterable of "
                        f"them, got {type(scope).__name__}") from None
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"enable_torch_proxy: {arg} must hold module names (str), got "
                        f"{sorted(map(repr, names))}")
    return names


def enable_torch_proxy(*, scope=None, blocked_modules=None, backend="torch", silent=False):
    """`import torch` gives oar from now on: everywhere (scope=None), or only inside the
    modules of `scope`; `blocked_modules` never see it."""
    if backend != "torch":
        raise ValueError(f"enable_torch_proxy: backend must be 'torch', got {backend!r}")
    scope = _parse(scope, "scope")
    blocked = _parse(blocked_modules, "blocked_modules")
    if blocked:
        BLOCKED.update(blocked)
    for name, mod in list(sys.modules.items()):  # set a real torch aside
        if _under(name, "torch"):
            if not isinstance(mod, ProxyModule):
                _REAL_TORCH[name] = mod
            del sys.modules[name]
    if FINDER in sys.meta_path:
        if not silent and (FINDER.globally and scope is not None or
                           not FINDER.globally and scope != FINDER.scope):
            warnings.warn(f"enable_torch_proxy: the proxy is already on (scope "
                          f"{'global' if FINDER.globally else sorted(FINDER.scope)}); "
                          f"scope is now {'global' if scope is None else sorted(scope)}")
        if scope is None or FINDER.globally:
            FINDER.set_scope(scope)
        else:
            FINDER.scope |= scope
        sys.meta_path.remove(FINDER)
    else:
        FINDER.set_scope(scope)
    sys.meta_path.insert(0, FINDER)


def disable_torch_proxy():
    """`import torch` imports the real torch again (or fails if there is none)."""
    if FINDER not in sys.meta_path:
        warnings.warn("disable_torch_proxy: the torch proxy is not enabled")
        return
    sys.meta_path.remove(FINDER)
    for name, mod in list(sys.modules.items()):
        if _under(name, "torch") and isinstance(mod, ProxyModule):
            del sys.modules[name]
    sys.modules.update(_REAL_TORCH)
    _REAL_TORCH.clear()


@contextlib.contextmanager
def use_torch_proxy_guard(*, enable=True, scope=None, silent=False):
    """The proxy on (enable=True) or off inside the block, restored after it."""
    was_on = FINDER in sys.meta_path
    saved = (set(FINDER.scope), FINDER.globally)
    scope = _parse(scope, "scope")
    if bool(enable) == was_on and (not enable or (saved[1] and scope is None) or
                                   saved[0] == (scope or set())):
        yield
        return
    if enable:
        enable_torch_proxy(scope=scope, silent=silent)
    else:
        disable_torch_proxy()
    try:
        yield
    finally:
        if was_on:
            enable_torch_proxy(scope=None, silent=True)
            FINDER.scope, FINDER.globally = saved
        else:
            disable_torch_proxy()


def extend_torch_proxy_blocked_modules(modules):
    """Modules (and their submodules) that never see the proxy when they import torch."""
    BLOCKED.update(_parse(modules, "modules"))
