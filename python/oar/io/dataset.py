"""Datasets (Paddle's oar.io): map-style and iterable datasets and their combinators."""

import bisect

import numpy as np

from .. import _C


class Dataset:
    """Map-style dataset: implement __getitem__(idx) and __len__()."""

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__}.__getitem__ is not implemented")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__}.__len__ is not implemented")


class IterableDataset(Dataset):
    """Stream dataset: implement __iter__(). With num_workers > 0 every worker iterates its own
    copy; split the stream with oar.io.get_worker_info()."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__}.__iter__ is not implemented")

    def __getitem__(self, idx):
        raise RuntimeError("IterableDataset does not support indexing; iterate over it")

    def __len__(self):
        raise RuntimeError("IterableDataset has no length")


class TensorDataset(Dataset):
    """Sample i is (t[i] for t in tensors); all tensors share their first dimension."""

    def __init__(self, tensors):
        tensors = list(tensors)
        if not tensors:
            raise ValueError("TensorDataset: 'tensors' must not be empty")
        n = tensors[0].shape[0]
        for i, t in enumerate(tensors):
            if not isinstance(t, (_C.Tensor, np.ndarray)):
                raise TypeError(
                    f"TensorDataset: tensors[{i}] must be a Tensor, got {type(t).__name__}"
                )
            if t.shape[0] != n:
                raise ValueError(
                    f"TensorDataset: tensors[{i}] has {t.shape[0]} rows, tensors[0] has {n}"
                )
        self.tensors = tensors

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


def _as_tuple(sample):
    return tuple(sample) if isinstance(sample, (list, tuple)) else (sample,)


class ComposeDataset(Dataset):
    """Joins the fields of equally long map-style datasets: sample i is the concatenation of
    each dataset's sample i (as a tuple)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ComposeDataset: 'datasets' must not be empty")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ComposeDataset: datasets[{i}] is an IterableDataset")
            if len(d) != len(self.datasets[0]):
                raise ValueError(
                    f"ComposeDataset: datasets[{i}] has {len(d)} samples, "
                    f"datasets[0] has {len(self.datasets[0])}"
                )

    def __len__(self):
        return len(self.datasets[0])

    def __getitem__(self, idx):
        out = []
        for d in self.datasets:
            out.extend(_as_tuple(d[idx]))
        return tuple(out)


class ChainDataset(IterableDataset):
    """Iterates the given iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: datasets[{i}] is not an IterableDataset")

    def __iter__(self):
        for d in self.datasets:
            yield from d


class ConcatDataset(Dataset):
    """Concatenates map-style datasets end to end."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: 'datasets' must not be empty")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        if not 0 <= idx < len(self):
            raise IndexError(f"ConcatDataset: index {idx} out of range for length {len(self)}")
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if d == 0 else int(self.cumulative_sizes[d - 1])
        return self.datasets[d][idx - start]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Splits `dataset` into non-overlapping random Subsets of the given lengths (or fractions
    summing to 1). The permutation comes from oar's generator, so oar.seed fixes it."""
    from .._random import randperm

    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1.0) < 1e-6:
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if any(int(x) != x or x < 0 for x in lengths):
        raise ValueError(
            f"random_split: lengths must be non-negative integers or fractions "
            f"summing to 1, got {lengths}"
        )
    if sum(lengths) != n:
        raise ValueError(
            f"random_split: sum of lengths {sum(lengths)} does not equal the dataset length {n}"
        )
    from ..base import framework

    with framework.outside_program():  # Python data, not part of a static program
        perm = randperm(n).numpy().tolist() if n else []
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset : offset + int(length)]))
        offset += int(length)
    return out
