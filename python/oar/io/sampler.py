"""Samplers: which indices to load, and how to group them into batches (Paddle's oar.io)."""

import math

import numpy as np

from ..base import framework as _framework
from ..distributed import get_rank, get_world_size


def _randperm(n):
    """A permutation drawn from oar's global generator (reproducible under oar.seed);
    Python data, so never recorded into a static program."""
    from .._random import randperm

    with _framework.outside_program():
        return randperm(n).numpy().tolist() if n > 0 else []


class Sampler:
    """Base class: __iter__ yields dataset indices."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        return len(self.data_source)


class SequenceSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __iter__(self):
        return iter(range(len(self.data_source)))


class RandomSampler(Sampler):
    """A random permutation per epoch (or num_samples draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        self.replacement, self.generator = replacement, generator
        self._num_samples = num_samples
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement must be a bool, got {replacement!r}")
        if num_samples is not None and not replacement:
            raise ValueError("RandomSampler: num_samples can only be given with replacement=True")
        if num_samples is not None and (int(num_samples) != num_samples or num_samples <= 0):
            raise ValueError(
                f"RandomSampler: num_samples must be a positive integer, got {num_samples}"
            )

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is not None:
            yield from (int(i) for i in self.generator)
            return
        # NumPy's global generator, as Paddle's RandomSampler draws (np.random.choice): a
        # script seeding np.random (or oar.seed, which seeds it too) gets Paddle's order.
        if n == 0:
            return
        yield from np.random.choice(np.arange(n), self.num_samples if self.replacement else n,
                                    replace=self.replacement).tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices):
        super().__init__(None)
        self.indices = list(indices)

    def __iter__(self):
        return iter([self.indices[i] for i in _randperm(len(self.indices))])

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True):
        super().__init__(None)
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1 or w.size == 0:
            raise ValueError(
                f"WeightedRandomSampler: weights must be a non-empty 1-D sequence, "
                f"got shape {list(w.shape)}"
            )
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError(
                "WeightedRandomSampler: weights must be finite, non-negative and not all zero"
            )
        if int(num_samples) != num_samples or num_samples <= 0:
            raise ValueError(
                f"WeightedRandomSampler: num_samples must be a positive integer, got {num_samples}"
            )
        if not replacement and num_samples > (w > 0).sum():
            raise ValueError(
                f"WeightedRandomSampler: num_samples {num_samples} exceeds the "
                f"{int((w > 0).sum())} indices with non-zero weight (replacement=False)"
            )
        self.weights, self.num_samples, self.replacement = w, int(num_samples), replacement

    def __iter__(self):
        # NumPy's global generator through np.random.choice, as Paddle's sampler draws.
        p = self.weights / self.weights.sum()
        return iter(np.random.choice(len(p), self.num_samples, self.replacement, p).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` (or of a Sequence/RandomSampler over `dataset`) into
    lists of batch_size."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give exactly one of 'dataset' and 'sampler'")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"BatchSampler: batch_size must be a positive integer, got {batch_size!r}"
            )
        if not isinstance(shuffle, bool):
            raise TypeError(f"BatchSampler: shuffle must be a bool, got {shuffle!r}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"BatchSampler: drop_last must be a bool, got {drop_last!r}")
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        elif shuffle:
            raise ValueError("BatchSampler: 'shuffle' must be False when a sampler is given")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last
        self.dataset, self.shuffle = dataset, shuffle

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(int(idx))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return (
            n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
        )


class DistributedBatchSampler(BatchSampler):
    """Each of num_replicas ranks gets a disjoint 1/num_replicas of the (padded) dataset,
    batch by batch, as Paddle's DistributedBatchSampler. set_epoch(e) reseeds the shuffle."""

    def __init__(
        self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False, drop_last=False
    ):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"DistributedBatchSampler: batch_size must be a positive integer, "
                f"got {batch_size!r}"
            )
        self.dataset, self.batch_size, self.shuffle, self.drop_last = (
            dataset,
            batch_size,
            shuffle,
            drop_last,
        )
        # The launcher's environment is read in one place: oar.distributed's ParallelEnv.
        self.nranks = int(num_replicas if num_replicas is not None else get_world_size())
        self.local_rank = int(rank if rank is not None else get_rank())
        if self.nranks <= 0:
            raise ValueError(
                f"DistributedBatchSampler: num_replicas must be positive, got {self.nranks}"
            )
        if not 0 <= self.local_rank < self.nranks:
            raise ValueError(
                f"DistributedBatchSampler: rank {self.local_rank} not in [0, {self.nranks})"
            )
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) * 1.0 / self.nranks))
        self.total_size = self.num_samples * self.nranks
        self.sampler = None

    def __iter__(self):
        n = len(self.dataset)
        indices = list(range(n))
        indices += indices[: self.total_size - len(indices)]
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        if self.nranks > 1:
            sub = []
            last = self.total_size % (self.batch_size * self.nranks)
            last_local = last // self.nranks
            for i in range(
                self.local_rank * self.batch_size,
                len(indices) - last,
                self.batch_size * self.nranks,
            ):
                sub.extend(indices[i : i + self.batch_size])
            tail = indices[len(indices) - last :]
            sub.extend(tail[self.local_rank * last_local : (self.local_rank + 1) * last_local])
            indices = sub
        batch = []
        for idx in indices:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = self.num_samples
        return (
            n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
        )

    def set_epoch(self, epoch):
        self.epoch = int(epoch)
