"""oar.autograd.saved_tensors_hooks (Paddle's paddle.autograd.saved_tensors_hooks)."""
from .. import _C


class saved_tensors_hooks:  # noqa: N801 (Paddle's name)
    """Within the block, every tensor a forward op saves for its backward (its inputs or
    outputs the backward formula reads; not those whose backward needs only their shape)
    and every tensor given to PyLayerContext.save_for_backward is passed to
    `pack_hook`, and only what it returns is kept; when the backward needs the tensor,
    `unpack_hook` gets that value back and must return a Tensor with the saved shape,
    dtype and values. Contexts nest: the innermost pair applies, and leaving it brings
    the outer one back (Paddle 3.3 drops every pair on leaving any context). An error
    raised by a hook propagates from the op that saved or from backward.

    Args:
        pack_hook (callable): Tensor -> anything.
        unpack_hook (callable): what pack_hook returned -> Tensor.
    """

    def __init__(self, pack_hook, unpack_hook):
        for arg, fn in (("pack_hook", pack_hook), ("unpack_hook", unpack_hook)):
            if not callable(fn):
                raise TypeError(f"saved_tensors_hooks: {arg} must be callable, got {type(fn).__name__}")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._depth = 0

    def __enter__(self):
        _C._saved_tensors_hooks_push(self.pack_hook, self.unpack_hook)
        self._depth += 1
        return self

    def __exit__(self, *exc):
        if self._depth:
            self._depth -= 1
            _C._saved_tensors_hooks_pop()
        return False
