"""paddle.jit.dy2static.program_translator.ProgramTranslator: a singleton switch of to_static."""
import numpy as np
import pytest

import oar
from oar.jit.dy2static.program_translator import ProgramTranslator


def test_singleton_and_enable_switches_to_static():
    t = ProgramTranslator()
    assert t is ProgramTranslator.get_instance() is ProgramTranslator()
    calls = []

    @oar.jit.to_static
    def f(x):
        calls.append(1)  # runs on every call only when eager
        return x * 2

    x = oar.to_tensor([1.0, 2.0])
    try:
        t.enable(False)
        assert t.enable_to_static is False
        for _ in range(3):
            np.testing.assert_allclose(f(x).numpy(), [2.0, 4.0])
        assert len(calls) == 3
    finally:
        ProgramTranslator.reset()
    assert t.enable_to_static is True
    with pytest.raises(TypeError, match="ProgramTranslator.enable: enable_to_static must be a bool"):
        t.enable("yes")
