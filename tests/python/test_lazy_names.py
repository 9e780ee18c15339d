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
