"""fleet.data_generator: Paddle's MultiSlot text writers for dataset pipe commands."""
from .data_generator import DataGenerator, MultiSlotDataGenerator, MultiSlotStringDataGenerator  # noqa: F401

__all__ = []
