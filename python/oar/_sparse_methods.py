"""Dense Tensor's side of paddle.sparse: Tensor.to_sparse_coo/to_sparse_csr (which load
oar.sparse on first call) and the format queries a dense tensor answers itself."""
import importlib


def _to_sparse_coo(self, sparse_dim=None):
    """This tensor as a COO sparse tensor over its first sparse_dim dims (default: all)."""
    return importlib.import_module("oar.sparse._tensor").dense_to_coo(self, sparse_dim)


def _to_sparse_csr(self):
    """This 2-D or 3-D tensor as a CSR sparse tensor."""
    return importlib.import_module("oar.sparse._tensor").dense_to_csr(self)


def _to_dense(self):
    """A dense tensor is its own dense form."""
    return self


def _false(self):
    return False


def _true(self):
    return True


def _sparse_dim(self):
    """A dense tensor has no sparse dims."""
    return 0


def _dense_dim(self):
    """Every dim of a dense tensor is dense."""
    return self.ndim


METHODS = {"to_sparse_coo": _to_sparse_coo, "to_sparse_csr": _to_sparse_csr,
           "to_dense": _to_dense, "is_sparse": _false, "is_sparse_coo": _false,
           "is_sparse_csr": _false, "is_dense": _true, "sparse_dim": _sparse_dim,
           "dense_dim": _dense_dim}


def install(tensor_cls):
    for name, fn in METHODS.items():
        if not hasattr(tensor_cls, name):
            setattr(tensor_cls, name, fn)
