"""paddle.tensor.random.uniform_random_batch_size_like: a uniform tensor whose one dim is
copied from another tensor's."""
import numbers

from . import _trace_state

__all__ = ["uniform_random_batch_size_like"]


def uniform_random_batch_size_like(input, shape, dtype="float32", input_dim_idx=0,  # noqa: A002
                                   output_dim_idx=0, min=-1.0, max=1.0, seed=0):  # noqa: A002
    """Uniform [min, max) values of `shape`, except that dim output_dim_idx takes input's
    dim input_dim_idx (Paddle's batch-size-like random op)."""
    import oar

    op = "uniform_random_batch_size_like"
    if not isinstance(input, oar.Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if not isinstance(shape, (list, tuple)) or not shape or not all(
            isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"{op}: shape must be a non-empty list of ints, got {shape!r}")
    shape = [int(s) for s in shape]
    for nm, idx, n in (("input_dim_idx", input_dim_idx, len(input.shape)),
                       ("output_dim_idx", output_dim_idx, len(shape))):
        if isinstance(idx, bool) or not isinstance(idx, numbers.Integral) or not 0 <= idx < n:
            raise ValueError(f"{op}: {nm} must be an int in [0, {n}), got {idx!r}")
    if any(s < 0 for i, s in enumerate(shape) if i != output_dim_idx):
        raise ValueError(f"{op}: shape must be non-negative, got {shape}")
    # a static program's dynamic batch is read when it runs (Note [Run-time random shapes])
    shape[output_dim_idx] = _trace_state.sizes_of(input)[input_dim_idx]
    return oar.uniform(shape, dtype, min, max, seed)
