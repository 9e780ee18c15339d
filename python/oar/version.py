"""paddle.version: the PaddlePaddle release whose Python API this Oar implements, and what the
build was compiled with. Paddle code gates features on these numbers (`require_version`,
`paddle.version.major`), so they name the Paddle API level (3.3.1), not Oar's own release
(`oar_version`, the same as `oar.__version__`). Oar has no CUDA, cuDNN, NCCL, XPU or TensorRT
backend, so those report what a CPU-only Paddle wheel reports: the string 'False' ('0' for NCCL).
"""
import re as _re
import warnings as _warnings

full_version = "3.3.1"
major = "3"
minor = "3"
patch = "1"
rc = "0"
oar_version = "0.1.0"
nccl_version = "0"
cuda_version = "False"
cudnn_version = "False"
hip_version = None
xpu_xre_version = "False"
xpu_xccl_version = "False"
xpu_xhpc_version = "False"
is_tagged = True
commit = "oar-" + oar_version
with_mkl = "OFF"
with_hml = ""
cinn_version = "False"
tensorrt_version = "None"
compiled_cuda_archs = []

__all__ = ["cuda", "cudnn", "nccl", "show", "xpu", "xpu_xre", "xpu_xccl", "xpu_xhpc",
           "tensorrt", "cuda_archs", "hip"]


def show():
    """Prints the version fields as paddle.version.show() does."""
    if is_tagged:
        print("full_version:", full_version)
        print("major:", major)
        print("minor:", minor)
        print("patch:", patch)
        print("rc:", rc)
    else:
        print("commit:", commit)
    print("cuda:", cuda_version)
    print("cudnn:", cudnn_version)
    print("hip:", hip_version)
    print("nccl:", nccl_version)
    print("xpu_xre:", xpu_xre_version)
    print("xpu_xccl:", xpu_xccl_version)
    print("xpu_xhpc:", xpu_xhpc_version)
    print("cinn:", cinn_version)
    print("tensorrt_version:", tensorrt_version)
    print("cuda_archs:", compiled_cuda_archs)


def mkl():
    return with_mkl


def hml():
    return with_hml


def nccl():
    """The NCCL version ('0': this build has no NCCL)."""
    return nccl_version


class CudaVersion(str):
    """paddle.version.cuda: a string that is also callable (Paddle 3.3 allows both)."""

    def __call__(self):
        return str(self)

    def __repr__(self):
        return f"CudaVersion('{self}')"


cuda = CudaVersion(cuda_version)


def hip():
    """The ROCm HIP version (None: this build has no HIP)."""
    return hip_version


def cudnn():
    """The cuDNN version ('False': this build has no cuDNN)."""
    return cudnn_version


def xpu():
    """The XPU runtime version ('False': this build has no XPU)."""
    return xpu_xre_version


def xpu_xre():
    return xpu_xre_version


def xpu_xccl():
    return xpu_xccl_version


def xpu_xhpc():
    return xpu_xhpc_version


def cinn():
    """The CINN version. Oar's fusion compiler is its own (oar.is_compiled_with_cinn); no
    Paddle CINN release is bundled, so this is 'False' as in Paddle's CPU wheel."""
    return cinn_version


def tensorrt():
    """The TensorRT version ('None': this build has no TensorRT)."""
    return tensorrt_version


def cuda_archs():
    """The CUDA architectures compiled in ([] without CUDA)."""
    return list(compiled_cuda_archs)


_VERSION_RE = _re.compile(r"\d+(\.\d+){0,3}")


def _check_format(arg, value):
    m = _VERSION_RE.match(value)
    if m is None or m.group() != value:
        raise ValueError(f"require_version: '{arg}' must look like '1.5.2.0' (digits and up to "
                         f"three dots), got {value!r}")


def require_version(min_version, max_version=None):
    """Raises unless the Paddle API version (full_version) lies in [min_version, max_version]."""
    if not isinstance(min_version, str):
        raise TypeError(f"require_version: 'min_version' must be str, got {type(min_version).__name__}")
    if not isinstance(max_version, (str, type(None))):
        raise TypeError("require_version: 'max_version' must be str or None, got "
                        f"{type(max_version).__name__}")
    _check_format("min_version", min_version)
    if max_version is not None:
        _check_format("max_version", max_version)
    installed = [int(major), int(minor), int(patch), int(rc)]

    def padded(v):
        parts = [int(p) for p in v.split(".")]
        return parts + [0] * (4 - len(parts))
    if installed == [0, 0, 0, 0]:  # a develop build: Paddle only warns
        _warnings.warn(f"PaddlePaddle version {min_version} or higher is required, but "
                       f"{full_version} installed (a develop version)")
        return
    if installed < padded(min_version) or (max_version is not None
                                           and installed > padded(max_version)):
        rng = f"in [{min_version}, {max_version}]" if max_version else f"{min_version} or higher"
        raise Exception(f"VersionError: PaddlePaddle version {rng} required, but "
                        f"{full_version} installed.")
