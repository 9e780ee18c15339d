"""paddle.sparse: COO and CSR sparse tensors (Note in sparse/_tensor.py) and their functions.
Loaded on first use (`oar.sparse`, `Tensor.to_sparse_coo()`...), not by `import oar`."""
from . import nn  # noqa: F401
from .binary import add, divide, is_same_shape, mask_as, masked_matmul, matmul, multiply, mv, \
    subtract
from .creation import sparse_coo_tensor, sparse_csr_tensor
from .multiary import addmm
from .unary import abs, asin, asinh, atan, atanh, cast, coalesce, deg2rad, expm1, isnan, \
    log1p, neg, pca_lowrank, pow, rad2deg, reshape, sin, sinh, slice, sqrt, square, sum, tan, \
    tanh, transpose

__all__ = [
    "sparse_coo_tensor", "sparse_csr_tensor", "sin", "tan", "asin", "atan", "sinh", "tanh",
    "asinh", "atanh", "sqrt", "square", "log1p", "abs", "pow", "pca_lowrank", "cast", "neg",
    "deg2rad", "rad2deg", "expm1", "mv", "matmul", "mask_as", "masked_matmul", "addmm", "add",
    "subtract", "transpose", "sum", "multiply", "divide", "coalesce", "is_same_shape", "reshape",
    "isnan", "slice",
]
