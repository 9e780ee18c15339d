"""The tests mirror python/oar in folders; the shared harness, op_test_utils.py, sits here
beside this file, and this puts it on sys.path for the tests in every folder."""
import os
import sys

import pytest

# Kernels' tuning records (Note [Tuning records]) off: a test must not depend on what this
# machine's earlier runs recorded, and some count what a fresh process times. The tests of
# the records turn them on in their own directories.
os.environ["FLAGS_oar_tuning_cache"] = "0"

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


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Runs a test at 1 and at 2 threads of Oar's pool (kernels split work differently, and
    results must not change); yields the count and restores the previous one."""
    import oar
    old = oar.get_num_threads()
    oar.set_num_threads(request.param)
    try:
        yield request.param
    finally:
        oar.set_num_threads(old)
