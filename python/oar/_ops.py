"""The oar.* op namespace: the generated C++ functions, plus the few Paddle
signatures that need a Python shim (pow taking a float or a Tensor, argmax with
axis=None, ...)."""
from . import _C, _creation
from ._random import randperm, bernoulli, multinomial, Generator, default_generator
from ._tensor import _pow, argmax, argmin

_ops = _C.ops
# Creation ops whose Paddle signature differs from the op's (arange(5), uniform(shape))
# keep their Python wrappers: `from ._ops import *` must not shadow them.
_wrapped = {n for n in dir(_creation) if not n.startswith("_")} | {"randperm"}
# Generated ops that are not Paddle names at paddle.*: the building blocks of a public
# function elsewhere (the F.* activations, pools, norms and losses; linalg.*), in-place
# forms Paddle has only as Tensor methods, the compiler's fusion targets and autograd
# helpers. They stay reachable as oar._C.ops.<name>; test_api_coverage.py fails when a new
# non-Paddle name becomes public (tests/python/api_names/).
_NOT_PUBLIC = {
    # F.* (oar.nn.functional) and linalg.* own these names
    "avg_pool2d", "avg_pool3d", "batch_norm", "celu", "conv2d_transpose", "conv3d_transpose",
    "cross_entropy", "elu", "gelu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "leaky_relu", "log_sigmoid", "log_softmax", "max_pool2d", "mish", "relu", "relu6",
    "selu", "silu", "softplus", "softshrink", "softsign", "tanhshrink", "thresholded_relu",
    "inv",
    # in-place forms: Tensor methods in Paddle, not paddle.* functions
    "add_", "ceil_", "clip_", "erfinv_", "exp_", "floor_", "increment_", "lerp_",
    "reciprocal_", "relu_", "round_", "scale_", "slice_scatter_", "sqrt_",
    # kernels behind a public function, fusion targets, autograd helpers
    "contiguous", "elementwise_pow", "fused_conv2d", "fused_linear", "fused_linear_activation",
    "gaussian", "max_pool2d_with_index", "max_pool3d_with_index", "max_pool_index_gather",
    "p_norm", "strided_slice_view", "sum_to",
    "copy_to",  # behind Tensor.to / .cpu() / ._copy_to, as in Paddle
}
# Methods the bindings install that paddle.Tensor does not have (the functions stay in
# their namespaces: oar.linalg.svd, F.relu, oar._C.ops.elementwise_pow ...).
_NOT_TENSOR_METHODS = ("crop", "det", "eigh", "elementwise_pow", "increment_", "matrix_rank",
                       "relu", "relu_", "searchsorted", "slice_scatter_", "svd", "triangular_solve")
_names = [n for n in dir(_ops) if not n.startswith("_") and n not in _wrapped and n not in _NOT_PUBLIC]
globals().update({n: getattr(_ops, n) for n in _names})


def searchsorted(sorted_sequence, values, out_int32=False, right=False, name=None):
    """Insertion indices of values in sorted_sequence's last dim. Both are compared in one
    dtype (int64 for integers, float64 when either is a float: the kernel reads both as one
    type); a 1-D sorted_sequence serves values of any shape."""
    if isinstance(sorted_sequence, _C.Tensor) and isinstance(values, _C.Tensor) and \
            sorted_sequence.dtype != values.dtype:
        floating = sorted_sequence.dtype.is_floating_point or values.dtype.is_floating_point
        common = _C.DataType.float64 if floating else _C.DataType.int64
        sorted_sequence, values = _ops.cast(sorted_sequence, common), _ops.cast(values, common)
    if isinstance(sorted_sequence, _C.Tensor) and isinstance(values, _C.Tensor) and \
            sorted_sequence.ndim == 1 and values.ndim > 1:
        flat = _ops.searchsorted(sorted_sequence, values.reshape([-1]), out_int32, right)
        return flat.reshape(list(values.shape))
    return _ops.searchsorted(sorted_sequence, values, out_int32, right)


def pow(x, y, name=None):  # noqa: A001  (Paddle's name)
    """x ** y for a float/int y or a Tensor y."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"pow: argument 'x' must be a Tensor, got {type(x).__name__}")
    return _pow(x, y)


mod = _ops.remainder
floor_mod = _ops.remainder
sigmoid = _ops.sigmoid

__all__ = _names + ["pow", "argmax", "argmin", "mod", "floor_mod", "randperm", "bernoulli",
                    "multinomial", "Generator", "default_generator"]
from . import _indexing  # noqa: E402,F401  (Tensor indexing; op shims: split, nonzero, where)
for _n in _NOT_TENSOR_METHODS:
    if _n in _C.Tensor.__dict__:
        delattr(_C.Tensor, _n)
