"""paddle.incubate.asp: n:m structured-sparsity masks (utils); decorate/prune_model (pruning a
model's layers during training) are not provided."""
from . import utils  # noqa: F401
from .utils import (  # noqa: F401
    CheckMethod, MaskAlgo, calculate_density, check_mask_1d, check_mask_2d, check_sparsity,
    create_mask, get_mask_1d, get_mask_2d_best, get_mask_2d_greedy,
)

__all__ = ["calculate_density"]
