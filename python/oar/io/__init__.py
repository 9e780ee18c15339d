"""oar.io: datasets, samplers and the DataLoader (Paddle's paddle.io)."""

from .dataset import (  # noqa: F401
    Dataset,
    IterableDataset,
    TensorDataset,
    ComposeDataset,
    ChainDataset,
    ConcatDataset,
    Subset,
    random_split,
)
from .sampler import (  # noqa: F401
    Sampler,
    SequenceSampler,
    RandomSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    BatchSampler,
    DistributedBatchSampler,
)
from .dataloader import DataLoader, get_worker_info, WorkerInfo  # noqa: F401
from .collate import default_collate_fn, default_convert_fn  # noqa: F401
