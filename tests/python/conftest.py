"""The tests mirror python/oar in folders; the shared harness, op_test_utils.py, sits here
beside this file, and this puts it on sys.path for the tests in every folder."""
import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def progs():
    """Static mode (oar.enable_static) with fresh main/startup programs and a fresh scope, for
    the static-graph tests of every folder; yields (main, startup)."""
    import oar  # here, not at collection: some tests set flags before the first import
    from oar import static
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            yield main, startup
    finally:
        oar.disable_static()
