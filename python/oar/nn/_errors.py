"""Errors of composite functionals name the functional the user called.

A functional built from other ops (conv1d through conv2d, linear through matmul, mse_loss
through subtract) would otherwise report the inner op's name ("conv2d: input has 2
channels..."). `named_errors(op)` prefixes the message of a ValueError / IndexError /
TypeError raised inside with "op: " unless it already names op."""
import functools


def named_errors(op):
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (ValueError, IndexError, TypeError) as e:
                msg = str(e)
                if msg.startswith(op + ":") or f"{op}(" in msg:
                    raise  # already names op (or is a Python argument error of op itself)
                try:
                    renamed = type(e)(f"{op}: {msg}")
                except Exception:  # an exception type with another constructor: keep it
                    raise e from None
                raise renamed from None
        return run
    return wrap


def check_count(n, op, arg):
    """A count of layers/copies about to be built in a Python loop: a positive int."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"{op}: {arg} must be a positive int, got {n!r}")


def check_fits(op, what, nbytes):
    """Parameters of `nbytes` in all are about to be built one layer at a time: more than this
    machine's memory is a MemoryError before the first (a loop over 2**31 layers would
    otherwise build for hours before failing)."""
    import os
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return
    if nbytes > ram:
        raise MemoryError(f"{op}: {what} need {nbytes} bytes of parameters, more than this "
                          f"machine's {ram}")


def check_copies(n, layer, op, arg="num_layers"):
    """`n` copies of `layer` are about to be built, one at a time: a count that is not a
    positive int, or whose parameters could not fit in this machine's memory, is rejected
    before the first copy."""
    check_count(n, op, arg)
    per_copy = sum(p.size * p.element_size() for p in layer.parameters())
    check_fits(op, f"{arg}={n} copies of {per_copy} parameter bytes", n * max(per_copy, 1))
