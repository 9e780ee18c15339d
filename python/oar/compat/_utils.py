"""Shared checks of oar.compat: torch-style keyword names, `out=` buffers."""
import functools

from .._C import Tensor


def torch_keywords(func_name, correct_name, illegal):
    """oar.compat functions take PyTorch's argument names; Paddle's names (x, axis...) are a
    TypeError that points at the Paddle function, as Paddle's ForbidKeywordsDecorator does."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            found = sorted(k for k in illegal if k in kwargs)
            if found:
                keys = ", ".join(f"'{k}'" for k in found)
                raise TypeError(f"{func_name}() received unexpected keyword argument"
                                f"{'s' if len(found) > 1 else ''} {keys}. Did you mean to use "
                                f"{correct_name}() instead?")
            return fn(*args, **kwargs)
        return run
    return wrap


def check_out(op, out, pair=False):
    """`out` is None, one Tensor, or (pair=True) a list/tuple of two Tensors."""
    if out is None:
        return
    if pair:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{op}: out must be a list or tuple of two tensors, got "
                            f"{type(out).__name__}")
        if not all(isinstance(o, Tensor) for o in out):
            raise TypeError(f"{op}: out must hold Tensors, got ({type(out[0]).__name__}, "
                            f"{type(out[1]).__name__})")
    elif not isinstance(out, Tensor):
        raise TypeError(f"{op}: out must be a Tensor, got {type(out).__name__}")


def write_out(result, out):
    """Copies result (a Tensor or a pair) into out, returning out's structure of results."""
    from .. import assign
    if out is None:
        return result
    if isinstance(result, tuple):
        for r, o in zip(result, out):
            assign(r, o)
        return result
    assign(result, out)
    return out
