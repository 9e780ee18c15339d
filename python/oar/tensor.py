"""oar.tensor: Paddle's `paddle.tensor` namespace, where its tensor functions are defined
(paddle.tensor.math.frexp, paddle.tensor.creation.to_tensor, paddle.tensor.argwhere...).
Every name resolves to the public oar function; the submodule names resolve to this
module, so paddle.tensor.<submodule>.<function> is oar.<function>."""
_SUBMODULES = ("math", "creation", "manipulation", "linalg", "logic", "search", "stat",
               "random", "attribute", "einsum", "array", "ops", "to_string", "layer_function_generator")


_ARRAY_NAMES = ("create_array", "array_write", "array_read", "array_length",
                "tensor_array_to_tensor")


def __getattr__(name):
    import sys

    import oar
    if name in _SUBMODULES:
        return sys.modules[__name__]
    if name == "create_tensor":
        return _create_tensor
    if name in _ARRAY_NAMES:
        from . import _tensor_array
        return getattr(_tensor_array, name)
    if name == "uniform_random_batch_size_like":
        from ._random_batch_like import uniform_random_batch_size_like
        return uniform_random_batch_size_like
    if not name.startswith("_") and hasattr(oar, name):
        return getattr(oar, name)
    raise AttributeError(f"module 'oar.tensor' has no attribute '{name}'")


def _create_tensor(dtype, name=None, persistable=False):
    """An empty (0-element) tensor of dtype (paddle.tensor.create_tensor)."""
    import oar
    out = oar.zeros([0], dtype)
    out.persistable = bool(persistable)
    return out
