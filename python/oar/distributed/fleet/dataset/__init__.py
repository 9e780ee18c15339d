"""fleet.dataset: Paddle's distributed-API datasets (init / update_settings) over oar.base.dataset."""
from .dataset import (  # noqa: F401
    BoxPSDataset, DatasetBase, FileInstantDataset, InMemoryDataset, QueueDataset)

__all__ = []
