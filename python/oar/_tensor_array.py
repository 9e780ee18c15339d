"""Paddle's tensor arrays in dynamic mode (paddle.tensor.array and
paddle.tensor.manipulation.tensor_array_to_tensor): a tensor array is a Python list of
Tensors, indexed by an int or a one-element integer Tensor."""
import numpy as np

__all__ = ["create_array", "array_write", "array_read", "array_length",
           "tensor_array_to_tensor"]


def _oar():
    import oar

    return oar


def _index(op, i):
    oar = _oar()
    if isinstance(i, oar.Tensor):
        if i.size != 1 or not str(i.dtype).replace("paddle.", "").startswith(("int", "uint")):
            raise TypeError(f"{op}: i must be an integer Tensor of one element, got shape "
                            f"{list(i.shape)} dtype {i.dtype}")
        i = int(i.numpy().reshape(-1)[0])
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"{op}: i must be an int or a one-element integer Tensor, got {i!r}")
    if i < 0:
        raise IndexError(f"{op}: i must be non-negative, got {i}")
    return int(i)


def _check_array(op, array):
    if not isinstance(array, list):
        raise TypeError(f"{op}: array must be a tensor array (a list), got "
                        f"{type(array).__name__}")


def create_array(dtype, initialized_list=None):
    """A new tensor array (a list), optionally holding the Tensors of initialized_list."""
    oar = _oar()
    items = list(initialized_list or [])
    for k, t in enumerate(items):
        if not isinstance(t, oar.Tensor):
            raise TypeError(f"create_array: initialized_list[{k}] must be a Tensor, got "
                            f"{type(t).__name__}")
    return items


def array_write(x, i, array=None):
    """Writes x at position i of array (appending when i == len(array)); returns array."""
    oar = _oar()
    if not isinstance(x, oar.Tensor):
        raise TypeError(f"array_write: x must be a Tensor, got {type(x).__name__}")
    k = _index("array_write", i)
    if array is None:
        array = create_array(x.dtype)
    _check_array("array_write", array)
    if k < len(array):
        array[k] = x
    elif k == len(array):
        array.append(x)
    else:
        raise IndexError(f"array_write: i ({k}) must be at most the array's length "
                         f"({len(array)})")
    return array


def array_read(array, i):
    """The Tensor at position i of array."""
    _check_array("array_read", array)
    k = _index("array_read", i)
    if k >= len(array):
        raise IndexError(f"array_read: i ({k}) is out of range for an array of length "
                         f"{len(array)}")
    return array[k]


def array_length(array):
    """The number of Tensors in array (an int, as in Paddle's dynamic mode)."""
    _check_array("array_length", array)
    return len(array)


def tensor_array_to_tensor(input, axis=1, use_stack=False, name=None):  # noqa: A002
    """Concatenates (or stacks, use_stack=True) the Tensors of a tensor array along axis;
    returns (the result, an int32 Tensor of each item's size along axis)."""
    oar = _oar()
    _check_array("tensor_array_to_tensor", input)
    if not input:
        raise ValueError("tensor_array_to_tensor: input must hold at least one Tensor")
    if use_stack:
        out = oar.stack(input, axis=axis)
        sizes = [1] * len(input)
    else:
        out = oar.concat(input, axis=axis)
        sizes = [t.shape[axis] for t in input]
    return out, oar.to_tensor(np.array(sizes, np.int32))
