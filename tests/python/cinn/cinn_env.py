"""The CINN tests' shared isolation: a test gets its own disk cache (under its tmp_path),
an empty in-memory cache and zeroed counters, and the flags it names are restored after it;
with nvrtc=True every kernel it made is then also compiled as CUDA C (cuda_check)."""
import contextlib

import oar
from oar import _C

import cuda_check


@contextlib.contextmanager
def isolated_cache(tmp_path, flags=(), nvrtc=True):
    old = oar.get_flags(["FLAGS_cinn_cache_dir", *flags])
    oar.set_flags({"FLAGS_cinn_cache_dir": str(tmp_path / "cinn")})
    _C.cinn.forget_memory_cache()
    _C.cinn.reset_cache_stats()
    yield tmp_path / "cinn"
    oar.set_flags(old)
    _C.cinn.forget_memory_cache()
    if nvrtc:
        cuda_check.check_new_kernels()  # the CUDA C of this test's groups compiles with NVRTC
