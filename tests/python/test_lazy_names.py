"""oar._lazy's tables match the modules they name (every public name of a composite module
is served, nothing else), the names resolve, and `import oar` leaves those modules unloaded."""
import importlib
import subprocess
import sys

import pytest

import oar
from oar import _lazy

TABLES = [("oar", _lazy.TOP, oar), ("oar.nn", _lazy.NN_FUNCTIONAL, oar.nn.functional),
          ("oar.nn", _lazy.NN_LAYERS, oar.nn)]


@pytest.mark.parametrize("package, table, ns", TABLES, ids=["oar", "nn.functional", "nn"])
def test_tables_match_the_modules(package, table, ns):
    for mod, names in table.items():
        module = importlib.import_module(mod, package)
        assert sorted(names.split()) == sorted(module.__all__), f"{package}{mod}"
        for name in names.split():
            # the stand-in loads the function and then gives way to it in the namespace
            assert _lazy.load(getattr(ns, name)) is getattr(module, name), f"{package}.{name}"
            assert getattr(ns, name) is getattr(module, name), f"{package}.{name}"


def test_tensor_method_tables_match():
    for mod, names in _lazy.TENSOR_METHODS.items():
        module = importlib.import_module(mod, "oar")
        assert sorted(names.split()) == sorted(module._TENSOR_METHODS), mod
        for name in names.split():
            assert callable(getattr(oar.Tensor, name)), name


def test_unknown_names_still_raise():
    with pytest.raises(AttributeError, match="module 'oar' has no attribute 'no_such_name'"):
        oar.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="oar.nn.functional"):
        oar.nn.functional.no_such_loss  # noqa: B018


def test_import_leaves_composites_unloaded_and_methods_load_them():
    code = ("import sys, oar\n"
            "mods = ['oar._math_composites', 'oar._manip_composites', "
            "'oar.nn._functional_loss_more', 'oar.nn.layer_more', 'oar.nn.loss']\n"
            "assert not any(m in sys.modules for m in mods), [m for m in mods if m in sys.modules]\n"
            "x = oar.to_tensor([1.5, -2.25])\n"
            "assert x.frac().tolist() == [0.5, -0.25]\n"
            "assert 'oar._math_composites' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_methods_become_their_functions_on_first_call():
    """A lazy method's trampoline (and the bitwise operators') puts the function itself on the
    class after its first call: an import per call cost more than a small op."""
    code = ("import oar\n"
            "T = oar.Tensor\n"
            "x = oar.to_tensor([6, 3])\n"
            "assert T.__dict__['frac'].__module__ == 'oar._lazy'\n"
            "assert x.astype('float32').frac().tolist() == [0.0, 0.0]\n"
            "import oar._math_composites as m, oar._bitwise as b\n"
            "assert T.__dict__['frac'] is m.frac\n"
            "assert (x & 5).tolist() == [4, 1] and (5 & x).tolist() == [4, 1]\n"
            "assert T.__and__ is b.bitwise_and and T.__rand__ is b.bitwise_and\n"
            "assert T.__or__ is not b.bitwise_or\n"
            "assert (x | 1).tolist() == [7, 3] and T.__or__ is b.bitwise_or\n"
            "assert (~x).tolist() == [-7, -4] and (x << 1).tolist() == [12, 6]\n"
            "assert T.greater is T.gt and T.__dict__['gt'].__module__ == 'oar._lazy'\n"
            "assert x.gt(x - 1).tolist() == [True, True]\n"
            "assert T.greater is T.gt and T.gt is m.gt\n")
    subprocess.run([sys.executable, "-c", code], check=True)


HOT = ["oar", "oar.nn.functional", "oar.linalg", "oar.autograd"]


@pytest.mark.parametrize("name", HOT)
def test_hot_namespaces_have_no_module_getattr(name):
    # CPython does not specialise attribute reads on a module whose dict has __getattr__
    assert "__getattr__" not in vars(importlib.import_module(name)), name


@pytest.mark.skipif(sys.version_info < (3, 11), reason="specialising interpreter: CPython 3.11+")
def test_attribute_reads_on_oar_are_specialised():
    # The property the stand-ins exist for, checked on the interpreter itself: after warm-up,
    # `oar.add` and `F.relu` compile to the module-attribute fast path (LOAD_ATTR_MODULE
    # / LOAD_METHOD_MODULE in 3.11, LOAD_ATTR_MODULE in 3.12+).
    import dis
    import io

    import oar.nn.functional as F

    def calls(x):
        return oar.add(x, x), F.relu(x), oar.linalg.norm(x), oar.frac

    x = oar.to_tensor([1.0, -2.0])
    for _ in range(100):
        calls(x)
    out = io.StringIO()
    dis.dis(calls, adaptive=True, file=out)
    assert out.getvalue().count("_MODULE") >= 4, out.getvalue()


def test_stand_ins_behave_like_what_they_stand_for():
    code = ("import sys, inspect, oar\n"
            "from oar import hypot\n"  # kept before the first use: it forwards
            "assert 'oar._math_composites' not in sys.modules\n"
            "assert 'y' in inspect.signature(hypot).parameters\n"
            "x = oar.to_tensor([3.0]); y = oar.to_tensor([4.0])\n"
            "assert hypot(x, y).item() == 5.0 and oar.hypot(x, y).item() == 5.0\n"
            "assert oar.hypot is sys.modules['oar._math_composites'].hypot\n"
            "assert 'oar.fft' not in sys.modules and isinstance(oar.fft, type(sys))\n"
            "f = oar.fft\n"
            "assert f.fft is sys.modules['oar.fft'].fft and oar.fft is sys.modules['oar.fft']\n"
            "assert oar.autograd.functional.jacobian is oar._lazy.load(oar.autograd.jacobian)\n"
            "assert oar.autograd.functional is sys.modules['oar.autograd.functional']\n")
    subprocess.run([sys.executable, "-c", code], check=True)
