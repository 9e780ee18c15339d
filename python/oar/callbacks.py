"""oar.callbacks: callbacks for oar.Model (Paddle's paddle.callbacks)."""

from .hapi.callbacks import (  # noqa: F401
    Callback,
    ProgBarLogger,
    ModelCheckpoint,
    LRScheduler,
    EarlyStopping,
    VisualDL,
    ReduceLROnPlateau,
)
from .hapi.tfevents import SummaryWriter, read_scalars  # noqa: F401
