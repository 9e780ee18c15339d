"""Fixtures of the static-mode tests."""
import pytest

import oar
from oar import static


@pytest.fixture
def progs():
    """Static mode with fresh main/startup programs and a fresh scope."""
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            yield main, startup
    finally:
        oar.disable_static()
