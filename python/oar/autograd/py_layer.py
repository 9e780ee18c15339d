"""PyLayer: an operation whose forward and backward are Python functions (Paddle's
paddle.autograd.PyLayer, PyTorch's autograd.Function).

    class Tanh(PyLayer):
        @staticmethod
        def forward(ctx, x):
            y = oar.tanh(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensor()
            return dy * (1 - y * y)

    z = Tanh.apply(x)

forward runs with gradient recording off; its Tensor outputs get one autograd node
(oar._C.pylayer_apply) whose backward calls `backward(ctx, *output_grads)`, which returns
one gradient (or None) per Tensor argument of forward, in order. Under
oar.jit.to_static both functions are traced like any other code.
"""
from .. import _C, _trace_state


def _unpack_saved(unpack, packed, shape, dtype):
    t = unpack(packed)
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"saved_tensors_hooks: unpack_hook must return a Tensor, got {type(t).__name__}")
    if list(t.shape) != list(shape) or t.dtype != dtype:
        raise ValueError(f"saved_tensors_hooks: unpack_hook returned a tensor of shape {list(t.shape)} and "
                         f"dtype {t.dtype}; the saved tensor had shape {list(shape)} and dtype {dtype}")
    return t


class PyLayerContext:
    """What forward leaves for backward: saved tensors, plus any attribute set on it."""

    def __init__(self):
        self._saved = ()
        self._non_differentiable = set()
        self._materialize = True
        self._inputs = ()
        self._grad_in_dtype_consistent = True

    def save_for_backward(self, *tensors):
        """Keeps tensors for backward (read them back with saved_tensor())."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"PyLayerContext.save_for_backward: argument {i} must be a Tensor or None, "
                                f"got {type(t).__name__}")
        inputs = {id(t) for t in self._inputs}
        # A tensor forward made keeps only its data here: the output's own handle will
        # point at the node, and the node at this context (a cycle that is never freed
        # when backward is not run). Inputs are kept as they are (their history is theirs).
        saved = tuple(t if t is None or id(t) in inputs else t.detach() for t in tensors)
        hooks = _C._saved_tensors_hooks_top()  # an active saved_tensors_hooks context packs them
        if hooks is not None:
            pack, unpack = hooks
            saved = tuple(None if t is None else (unpack, pack(t), t.shape, t.dtype) for t in saved)
        self._saved = saved

    def saved_tensor(self):
        """The tensors given to save_for_backward, in order (unpacked again on each call when
        they were saved under saved_tensors_hooks)."""
        if any(type(t) is tuple for t in self._saved):
            return tuple(t if type(t) is not tuple else _unpack_saved(*t) for t in self._saved)
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient (indices, masks): backward receives zeros for them."""
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_not_inplace(self, *tensors):
        """Accepted for Paddle compatibility: outputs never share the inputs' autograd
        state here (an input returned as is gets a new handle on its data)."""

    def set_grad_in_dtype_consistent(self, choice):
        """Paddle's switch for casting the gradients backward receives to the dtypes of
        forward's outputs (True, the default) or not. Oar's engine always delivers each
        gradient in the dtype of the tensor it belongs to (a float16 gradient returned for a
        float32 input arrives as float32), so both choices give backward the outputs'
        dtypes; the choice is kept on the context."""
        if not isinstance(choice, bool):
            raise TypeError(f"PyLayerContext.set_grad_in_dtype_consistent: choice must be a "
                            f"bool, got {type(choice).__name__}")
        self._grad_in_dtype_consistent = choice

    def set_materialize_grads(self, value):
        """False: backward gets None (not zeros) for outputs no gradient reached."""
        self._materialize = bool(value)


def _note_static_recording(name, inputs):
    """A PyLayer applied while a static program records: the program gets its ops, not its
    custom backward (a backward is recorded from the program's ops, _specialize.py), so
    static.gradients / append_backward / minimize on that program refuse (_backward.py)
    instead of differentiating the forward's ops. Forward-only use is fine. (oar.static,
    above autograd, registers the hook in oar._trace_state.)"""
    if _trace_state.active and _trace_state.note_pylayer is not None:
        _trace_state.note_pylayer(name, inputs)


class PyLayer:
    """Subclass with static forward(ctx, *args, **kwargs) and backward(ctx, *grads); call
    apply(*args, **kwargs)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("PyLayer: subclasses must define forward(ctx, *args, **kwargs)")

    @staticmethod
    def backward(ctx, *args):
        raise NotImplementedError("PyLayer: subclasses must define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        from . import no_grad

        name = cls.__name__
        ctx = PyLayerContext()
        inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, _C.Tensor)]
        ctx._inputs = tuple(inputs)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        single = isinstance(out, _C.Tensor)
        items = [out] if single else (list(out) if isinstance(out, (tuple, list)) else None)
        if items is None:
            raise TypeError(f"{name}.forward must return a Tensor or a tuple/list of Tensors, got "
                            f"{type(out).__name__}")
        pos = [i for i, o in enumerate(items) if isinstance(o, _C.Tensor)]
        if not pos:
            raise TypeError(f"{name}.forward returned no Tensor")
        tensors = [items[i] for i in pos]
        diff = [id(t) not in ctx._non_differentiable for t in tensors]
        n_in = len(inputs)

        def run_backward(grads):
            res = cls.backward(ctx, *grads)
            # A single-input layer may return the gradient bare.
            if n_in == 1 and not isinstance(res, (tuple, list)):
                res = (res,)
            return res

        _note_static_recording(name, inputs)
        linked = _C.pylayer_apply(name, run_backward, inputs, tensors, diff, ctx._materialize)
        for i, t in zip(pos, linked):
            items[i] = t
        if single:
            return items[0]
        return tuple(items) if isinstance(out, tuple) else items


class LegacyPyLayer(PyLayer):
    """Paddle's older name for the same API."""


def once_differentiable(backward):
    """Decorator for a backward that cannot itself be differentiated: runs it with
    gradient recording off."""
    import functools

    @functools.wraps(backward)
    def wrapper(ctx, *args):
        from . import no_grad
        with no_grad():
            return backward(ctx, *args)
    return wrapper
