"""The CINN tests' shared preamble: this folder on sys.path (cinn_env, cuda_check and the
test modules' shared models import by name), every test skipped when Oar was built
without LLVM 19, and each test in its own compile cache (cinn_env.isolated_cache: a disk
cache under its tmp_path, an empty memory cache, zeroed counters, the CUDA C of its groups
compiled by NVRTC). A module tunes the cache fixture with two globals: CINN_FLAGS, the
flags it sets and that are restored after each test, and CINN_NVRTC = False to skip the
NVRTC check."""
import os
import sys

import pytest

import oar

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cinn_env  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if oar.is_compiled_with_cinn():
        return
    skip = pytest.mark.skip(reason="built without LLVM 19")
    for item in items:
        if os.path.dirname(os.path.abspath(str(item.fspath))) == HERE:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def cache_dir(request, tmp_path):
    flags = getattr(request.module, "CINN_FLAGS", ())
    nvrtc = getattr(request.module, "CINN_NVRTC", True)
    with cinn_env.isolated_cache(tmp_path, flags, nvrtc=nvrtc) as d:
        yield d
