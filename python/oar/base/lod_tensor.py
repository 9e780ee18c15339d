"""paddle.base.create_lod_tensor / create_random_int_lodtensor: a tensor of sequences
concatenated along dim 0 with their lengths (Paddle's LoD, kept as the tensor's
recursive_sequence_lengths(); Oar's ops see the dense tensor)."""
import numpy as np


def _check_lens(recursive_seq_lens, rows, who):
    if not isinstance(recursive_seq_lens, (list, tuple)) or not recursive_seq_lens:
        raise ValueError(f"{who}: recursive_seq_lens must be a non-empty list of lists of lengths, got "
                         f"{recursive_seq_lens!r}")
    lens = [list(level) for level in recursive_seq_lens]
    for i, level in enumerate(lens):
        if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0 for n in level):
            raise ValueError(f"{who}: recursive_seq_lens[{i}] must hold lengths >= 0, got {level}")
        if i + 1 < len(lens) and len(lens[i + 1]) != sum(level):
            raise ValueError(f"{who}: level {i} sums to {sum(level)} sequences but level {i + 1} has "
                             f"{len(lens[i + 1])}")
    if rows is not None and sum(lens[-1]) != rows:
        raise ValueError(f"{who}: the lengths {lens[-1]} sum to {sum(lens[-1])}, but the data has {rows} rows")
    return lens


def _with_lod(t, lens):
    t._recursive_seq_lens = lens
    return t


def create_lod_tensor(data, recursive_seq_lens, place):
    """A tensor from `data` (a NumPy array, a Tensor, or a list of sequences) whose rows
    are split into sequences by recursive_seq_lens."""
    import oar

    if isinstance(data, list):  # a list of sequences: their lengths are the last level
        seqs = [np.asarray(s).reshape(-1, 1) if np.ndim(s) <= 1 else np.asarray(s) for s in data]
        if [len(s) for s in seqs] != list(recursive_seq_lens[-1]):
            raise ValueError(f"create_lod_tensor: the sequences' lengths {[len(s) for s in seqs]} differ from "
                             f"recursive_seq_lens {list(recursive_seq_lens[-1])}")
        data = np.concatenate(seqs) if seqs else np.zeros([0, 1], "int64")
    arr = data.numpy() if isinstance(data, oar.Tensor) else np.asarray(data)
    if arr.ndim == 0:
        raise ValueError("create_lod_tensor: data must have a row dim, got a scalar")
    lens = _check_lens(recursive_seq_lens, arr.shape[0], "create_lod_tensor")
    return _with_lod(oar.to_tensor(arr), lens)


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """A tensor of random ints in [low, high] with sum(recursive_seq_lens[-1]) rows of
    shape base_shape."""
    if low > high:
        raise ValueError(f"create_random_int_lodtensor: low must be <= high, got low={low}, high={high}")
    lens = _check_lens(recursive_seq_lens, None, "create_random_int_lodtensor")
    shape = [sum(lens[-1])] + list(base_shape)
    if any(d < 0 for d in shape) or int(np.prod(shape)) > (1 << 31):
        raise ValueError(f"create_random_int_lodtensor: bad shape {shape}")
    return create_lod_tensor(np.random.randint(low, high + 1, shape).astype("int64"), lens, place)
