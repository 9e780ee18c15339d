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
