"""oar.linalg (matmul for now; decompositions arrive with the op-library issue)."""
from . import _C

matmul = _C.ops.matmul
