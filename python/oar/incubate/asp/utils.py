"""n:m sparsity masks on NumPy arrays (paddle.incubate.asp.utils). A 1-D n:m pattern zeroes at
least n of every m consecutive entries of each row; a 2-D one does so along both the rows and
the columns of every m x m block. Rows and columns are padded with zeros to multiples of m."""
import collections
import itertools
import threading
from enum import Enum

import numpy as np

__all__ = ["MaskAlgo", "CheckMethod", "calculate_density", "check_mask_1d", "get_mask_1d",
           "check_mask_2d", "get_mask_2d_greedy", "get_mask_2d_best", "create_mask",
           "check_sparsity"]


class MaskAlgo(Enum):
    MASK_1D = "get_mask_1d"
    MASK_2D_GREEDY = "get_mask_2d_greedy"
    MASK_2D_BEST = "get_mask_2d_best"


class CheckMethod(Enum):
    CHECK_1D = "check_mask_1d"
    CHECK_2D = "check_mask_2d"

    @staticmethod
    def get_checking_method(mask_algo):
        """The check that matches a mask algorithm (1-D for MASK_1D, else 2-D)."""
        if not isinstance(mask_algo, MaskAlgo):
            raise TypeError(f"get_checking_method: mask_algo must be a MaskAlgo, got "
                            f"{type(mask_algo).__name__}")
        return CheckMethod.CHECK_1D if mask_algo == MaskAlgo.MASK_1D else CheckMethod.CHECK_2D


def _check_nm(op, n, m):
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    if n > m:
        raise ValueError(f"{op}: n must not exceed m, got n={n}, m={m}")


def _matrix(op, mat):
    mat = np.asarray(mat)
    if mat.ndim == 1:
        mat = mat.reshape(1, -1)
    if mat.ndim != 2:
        raise ValueError(f"{op}: expected a 1-D or 2-D array, got shape {list(mat.shape)}")
    return mat


def calculate_density(x):
    """The fraction of non-zero entries of x."""
    x = np.asarray(x).ravel()
    if x.size == 0:
        raise ValueError("calculate_density: x is empty")
    return float(np.count_nonzero(x)) / x.size


def _groups_1d(mat, m):
    pad = (-mat.shape[1]) % m
    padded = np.pad(mat.astype(np.float64), [(0, 0), (0, pad)])
    return padded.reshape(-1, m), padded.shape


def check_mask_1d(mat, n, m):
    """True when every m consecutive entries of each row hold at most m - n non-zeros."""
    _check_nm("check_mask_1d", n, m)
    groups, _ = _groups_1d(_matrix("check_mask_1d", mat), m)
    return bool((np.count_nonzero(groups, axis=1) <= m - n).all())


def get_mask_1d(mat, n, m):
    """A mask keeping the m - n largest |entries| of every m consecutive entries of each row."""
    _check_nm("get_mask_1d", n, m)
    mat = _matrix("get_mask_1d", mat)
    groups, shape = _groups_1d(mat, m)
    mask = np.ones_like(groups)
    smallest = np.argsort(np.abs(groups), axis=1, kind="stable")[:, :n]
    np.put_along_axis(mask, smallest, 0.0, axis=1)
    return mask.reshape(shape)[:, :mat.shape[1]]


def _blocks_2d(mat, m):
    """(blocks [B, m, m], padded shape): the m x m blocks of mat, row-major."""
    pr, pc = (-mat.shape[0]) % m, (-mat.shape[1]) % m
    padded = np.pad(mat.astype(np.float64), [(0, pr), (0, pc)])
    r, c = padded.shape
    blocks = padded.reshape(r // m, m, c // m, m).transpose(0, 2, 1, 3).reshape(-1, m, m)
    return blocks, padded.shape


def _unblock(blocks, shape, m, out_shape):
    r, c = shape
    full = blocks.reshape(r // m, c // m, m, m).transpose(0, 2, 1, 3).reshape(r, c)
    return full[:out_shape[0], :out_shape[1]]


def check_mask_2d(mat, n, m):
    """False when some m x m block has both a row and a column with more than m - n
    non-zeros. This is Paddle's documented rule (its examples call a block whose columns alone
    exceed the limit valid); a mask from get_mask_2d_* satisfies the stricter rule too."""
    _check_nm("check_mask_2d", n, m)
    blocks, _ = _blocks_2d(_matrix("check_mask_2d", mat), m)
    nz = blocks != 0
    bad_rows = (nz.sum(axis=2) > m - n).any(axis=1)
    bad_cols = (nz.sum(axis=1) > m - n).any(axis=1)
    return not bool((bad_rows & bad_cols).any())


def get_mask_2d_greedy(mat, n, m):
    """Per m x m block: keep entries from the largest |value| down while their row and column
    each hold fewer than n kept entries."""
    _check_nm("get_mask_2d_greedy", n, m)
    mat = _matrix("get_mask_2d_greedy", mat)
    blocks, shape = _blocks_2d(mat, m)
    masks = np.zeros_like(blocks)
    for b, block in enumerate(np.abs(blocks)):
        rows, cols = collections.Counter(), collections.Counter()
        for flat in np.argsort(block.ravel(), kind="stable")[::-1]:
            i, j = divmod(int(flat), m)
            if rows[i] < n and cols[j] < n:
                masks[b, i, j] = 1.0
                rows[i] += 1
                cols[j] += 1
    return _unblock(masks, shape, m, mat.shape)


_PATTERNS = {}
_PATTERNS_LOCK = threading.Lock()
_MAX_PATTERN_CANDIDATES = 10**6


def _valid_2d_patterns(n, m):
    """Every m x m 0/1 matrix with n ones in each row and at most n in each column."""
    key = (n, m)
    with _PATTERNS_LOCK:
        if key in _PATTERNS:
            return _PATTERNS[key]
    rows = [r for r in itertools.product((0.0, 1.0), repeat=m) if sum(r) == n] \
        if 2**m <= _MAX_PATTERN_CANDIDATES else []
    if not rows or len(rows) ** m > _MAX_PATTERN_CANDIDATES:
        raise ValueError(f"get_mask_2d_best: {n}:{m} has too many candidate patterns to "
                         f"enumerate (more than {_MAX_PATTERN_CANDIDATES}); use "
                         "get_mask_2d_greedy")
    cand = np.array(list(itertools.product(rows, repeat=m)))
    valid = cand[(cand.sum(axis=1) <= n).all(axis=1)]
    with _PATTERNS_LOCK:
        _PATTERNS[key] = valid
    return valid


def get_mask_2d_best(mat, n, m):
    """Per m x m block: the valid 2-D n:m pattern keeping the largest sum of |values|."""
    _check_nm("get_mask_2d_best", n, m)
    mat = _matrix("get_mask_2d_best", mat)
    patterns = _valid_2d_patterns(n, m)
    blocks, shape = _blocks_2d(mat, m)
    scores = np.abs(blocks).reshape(-1, m * m) @ patterns.reshape(len(patterns), m * m).T
    return _unblock(patterns[np.argmax(scores, axis=1)], shape, m, mat.shape)


def _as_2d(op, tensor):
    """1-D -> [1, k]; 3-D [a, b, c] -> [a*b, c]; 4-D (conv weights) [a, b, h, w] -> [a*b*w, h]."""
    shape = tensor.shape
    t = np.asarray(tensor).astype(np.float64)
    if len(shape) == 1:
        return t.reshape(1, shape[0])
    if len(shape) == 2:
        return t
    if len(shape) == 3:
        return t.reshape(shape[0] * shape[1], shape[2])
    if len(shape) == 4:
        return t.transpose(0, 1, 3, 2).reshape(shape[0] * shape[1] * shape[3], shape[2])
    raise ValueError(f"{op}: tensor must be 1-D to 4-D, got shape {list(shape)}")


def create_mask(tensor, func_name=MaskAlgo.MASK_1D, n=2, m=4):
    """The n:m mask of tensor (a NumPy array of 1 to 4 dims) by func_name, in tensor's dtype."""
    if not isinstance(func_name, MaskAlgo):
        raise TypeError(f"create_mask: func_name must be a MaskAlgo, got "
                        f"{type(func_name).__name__}")
    tensor = np.asarray(tensor)
    mask = globals()[func_name.value](_as_2d("create_mask", tensor), n=n, m=m)
    shape = tensor.shape
    if len(shape) == 4:
        mask = mask.reshape(shape[0], shape[1], shape[3], shape[2]).transpose(0, 1, 3, 2)
    return mask.reshape(shape).astype(tensor.dtype)


def check_sparsity(tensor, func_name=CheckMethod.CHECK_1D, n=2, m=4):
    """Whether tensor (1 to 4 dims) follows the n:m pattern func_name checks."""
    if not isinstance(func_name, CheckMethod):
        raise TypeError(f"check_sparsity: func_name must be a CheckMethod, got "
                        f"{type(func_name).__name__}")
    return globals()[func_name.value](_as_2d("check_sparsity", np.asarray(tensor)), n=n, m=m)
