"""paddle.sparse.addmm: beta * input + alpha * (x @ y) with a sparse x."""
import oar

from ._tensor import _SparseTensor, _fail
from .binary import add, matmul
from .unary import check_sparse

__all__ = ["addmm"]


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002 (Paddle's name)
    """beta * input + alpha * (x @ y): dense when y is dense (input dense), sparse in x's
    format when input and y are sparse."""
    check_sparse("addmm", x)
    for arg, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            _fail("addmm", f"{arg} must be a Python number, got {type(v).__name__}", TypeError)
    prod = matmul(x, y)
    if list(input.shape) != list(prod.shape):
        _fail("addmm", f"input must have the product's shape {list(prod.shape)}, got "
              f"{list(input.shape)}")
    if isinstance(input, _SparseTensor):
        if not isinstance(prod, _SparseTensor):
            _fail("addmm", "a sparse input needs a sparse y (the result is sparse)", TypeError)
        return add(input * beta, prod * alpha)
    if not isinstance(input, oar.Tensor):
        _fail("addmm", f"input must be a Tensor or a sparse tensor, got {type(input).__name__}",
              TypeError)
    if isinstance(prod, _SparseTensor):
        prod = prod.to_dense()
    return input * beta + prod * alpha
