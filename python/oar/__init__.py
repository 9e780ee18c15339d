"""Oar: a deep learning framework with a C++ core and PaddlePaddle's Python API.

    import oar as paddle
    x = paddle.to_tensor([[1.0, 2.0]], stop_gradient=False)
    (x * x).sum().backward()
"""
import os as _os

# Idle OpenMP workers must sleep, not spin: these machines often share their cores,
# and spinning pools make small ops many times slower. Must precede loading _C. (OpenMP
# runs the GEMM splits and oneDNN; parallel_for runs on Oar's own pool, which spins only
# briefly after a region: Note [Thread pool].)
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Development: an out-of-tree build's extension directory (see scripts/dev_env.sh).
if _os.environ.get("OAR_EXT_DIR"):
    __path__.append(_os.environ["OAR_EXT_DIR"])  # noqa: F821 (package __path__)



def _require_x86_64_v3():
    # The kernels' baseline ISA is x86-64-v3 (Note [CPU dispatch]): on a CPU without AVX2
    # and FMA loading _C would die with SIGILL, so say so instead.
    if _os.uname().machine != "x86_64":
        return
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((ln for ln in f if ln.startswith("flags")), "").split())
    except OSError:
        return
    if flags and not {"avx2", "fma"} <= flags:
        raise ImportError("oar needs an x86-64 CPU with AVX2 and FMA (x86-64-v3); this CPU "
                          "lacks " + " and ".join(sorted({"avx2", "fma"} - flags)))


_require_x86_64_v3()
from . import _C  # noqa: E402
from ._C import Tensor, DataType, Size  # noqa: E402,F401
from ._dtype import (  # noqa: E402,F401
    bool_ as bool, int8, uint8, int16, int32, int64, float16, bfloat16, float32, float64,
    complex64, complex128, dtype, get_default_dtype, set_default_dtype, is_floating_point,
    is_complex, finfo, iinfo,
)
from ._device import (  # noqa: E402,F401
    CPUPlace, CUDAPlace, CUDAPinnedPlace, CustomPlace, Place, set_device, get_device, is_compiled_with_cuda,
    is_compiled_with_cinn,
    is_compiled_with_custom_device,
)
from . import _tensor  # noqa: E402,F401  (installs Tensor methods)
from . import _tensor_more  # noqa: E402,F401  (repeat, apply_, requires_grad, deepcopy...)
from ._tensor import set_printoptions  # noqa: E402,F401
from ._creation import (  # noqa: E402,F401
    to_tensor, zeros, ones, full, empty, zeros_like, ones_like, full_like, empty_like,
    arange, linspace, eye, rand, randn, randint, uniform, normal, standard_normal, seed,
    get_rng_state, set_rng_state, clone, assign,
)
# Compositions (frac, hypot, isin, tensordot, cat, hstack, tensor_split...) load on first
# use (oar._lazy); a name an op module defines keeps the op's version.
from . import _lazy  # noqa: E402
_lazy.install_tensor_methods(Tensor)
# Namespaces imported on first use too: oar.distribution, oar.fft, oar.compat, oar.version,
# oar.geometric, oar.incubate, oar.decomposition, oar.sysconfig, oar.sparse, oar.text,
# oar.audio... (and the torch proxy's switches, Paddle's enable_compat/disable_compat/
# use_compat_guard). Dense Tensor's to_sparse_coo/to_sparse_csr/is_sparse... load oar.sparse
# on their first call.
_lazy.install(globals(), "oar", _lazy.TOP, namespaces={
    ns: "oar." + ns for ns in ("distribution", "fft", "compat", "version", "geometric", "incubate",
                               "reader", "cuda", "quantization", "pir_utils", "sysconfig",
                               "sparse", "text", "audio", "signal", "random", "decomposition")},
    functions={"batch": (".reader", "batch"), "enable_compat": (".compat.proxy", "enable_torch_proxy"),
               "disable_compat": (".compat.proxy", "disable_torch_proxy"),
               "use_compat_guard": (".compat.proxy", "use_torch_proxy_guard")})
from . import _sparse_methods  # noqa: E402
_sparse_methods.install(Tensor)
from ._ops import *  # noqa: E402,F401,F403
from ._math_functions import *  # noqa: E402,F401,F403
from ._stats import *  # noqa: E402,F401,F403
from ._random import poisson  # noqa: E402,F401
from ._random_samplers import standard_gamma, binomial  # noqa: E402,F401
from .autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled, grad  # noqa: E402,F401
# Training API (issue 4): data loading, checkpoints, hapi, metrics, vision.
from . import io  # noqa: E402,F401
from .framework_io import save, load  # noqa: E402,F401
from . import regularizer  # noqa: E402,F401
from .nn.layer import ParamAttr, create_parameter  # noqa: E402,F401
from . import metric, hapi, callbacks  # noqa: E402,F401
from . import vision  # noqa: E402,F401
from .hapi import Model, summary, flops  # noqa: E402,F401
from ._flags import set_flags, get_flags, set_num_threads, get_num_threads  # noqa: E402,F401
from . import autograd, nn, optimizer, utils, linalg  # noqa: E402,F401
from ._manip import *  # noqa: E402,F401,F403  (moveaxis, chunk, tril, ...)
from .linalg import bmm, mv, einsum, inv as inverse, cholesky, cross, norm  # noqa: E402,F401
from .linalg import eigvalsh  # noqa: E402,F401  (paddle.eigvalsh)
from . import pir  # noqa: E402,F401  (the IR: oar.pir)
from . import base  # noqa: E402,F401  (the mode switch: in_dynamic_mode, in_pir_mode)
from .base import framework  # noqa: E402,F401  (paddle.framework.in_pir_mode ...)
from .base.framework import in_dynamic_mode  # noqa: E402,F401
from . import static, jit, inference, profiler  # noqa: E402,F401  (to_static, saved models, predictor)
from .static import enable_static, disable_static  # noqa: E402,F401  (static-graph mode, loaded on use)
from . import onnx  # noqa: E402,F401  (oar.onnx.export)
from . import tensor  # noqa: E402,F401  (paddle.tensor.<module>.<name>: the same functions)

__version__ = "0.1.0"


from . import amp  # noqa: E402,F401  (oar.amp: auto_cast, decorate, GradScaler)
from . import device, distributed  # noqa: E402,F401  (set_device; single-process get_rank, ParallelEnv)
from .distributed.parallel import DataParallel  # noqa: E402,F401  (paddle.DataParallel)
from .nn.functional import conv1d, adaptive_avg_pool1d  # noqa: E402,F401
from . import _aliases  # noqa: E402  (clamp, div, sub, range, from_numpy, view... as Paddle 3.3)
_aliases.install(_os.sys.modules[__name__], Tensor)
from . import _plugins  # noqa: E402,F401  (last: loads device plugins from CUSTOM_DEVICE_ROOT, oar_custom_device/)

