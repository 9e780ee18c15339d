"""oar.nn.loss: Paddle's `paddle.nn.loss` module (the loss layers, paddle.nn.loss.MSELoss...);
as `paddle.nn.functional.loss` it also resolves the loss functionals (F.loss.dice_loss)."""
from .layer_common import CrossEntropyLoss, L1Loss, MSELoss  # noqa: F401
from .layer_loss import *  # noqa: F401,F403
from .layer_more import (  # noqa: F401
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MultiLabelSoftMarginLoss,
    MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)


def __getattr__(name):
    if name == "edit_distance":  # Paddle has it only as paddle.nn.functional.loss.edit_distance
        from ._functional_seq import edit_distance
        return edit_distance
    from . import functional
    if not name.startswith("_") and hasattr(functional, name):
        return getattr(functional, name)
    raise AttributeError(f"module 'oar.nn.loss' has no attribute '{name}'")
