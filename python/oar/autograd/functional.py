"""autograd.jacobian / autograd.hessian (Paddle's): Jacobian objects evaluated on first
indexing, one reverse pass per output element (the output's size bounds the loop), kept
differentiable (create_graph) so hessian is the jacobian of a gradient."""
from .. import _C

__all__ = ["jacobian", "hessian", "Jacobian", "Hessian"]


def _check(t, batch_axis, op, name):
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor or a sequence of Tensors, got "
                        f"{type(t).__name__}")
    lo = 0 if batch_axis is None else 1
    if not lo <= t.ndim <= lo + 1:
        raise ValueError(f"{op}: with batch_axis={batch_axis} {name} must be {lo}-D or "
                         f"{lo + 1}-D, got shape {list(t.shape)}")


class Jacobian:
    """d ys / d xs: shape [M, N] (batch_axis=None) or [B, M, N] (batch_axis=0), a 0-D or
    per-sample-scalar side dropping its dim. Indexing evaluates it (once)."""

    def __init__(self, ys, xs, batch_axis=None, op="jacobian"):
        self._ys, self._xs, self._batch = ys, xs, batch_axis
        self._value = None
        b = [] if batch_axis is None else [ys.shape[0]]
        lo = 0 if batch_axis is None else 1
        self._m = ys.shape[lo] if ys.ndim > lo else None
        self._n = xs.shape[lo] if xs.ndim > lo else None
        if batch_axis is not None and xs.shape[0] != ys.shape[0]:
            raise ValueError(f"{op}: ys and xs have batch sizes {ys.shape[0]} and {xs.shape[0]}")
        self.shape = b + [d for d in (self._m, self._n) if d is not None]

    def _evaluate(self):
        import oar
        ys, xs = self._ys, self._xs
        if ys.stop_gradient:  # ys does not depend on any input (a linear ys' gradient): 0
            return oar.zeros(self.shape, xs.dtype)
        rows = []
        for m in range(self._m or 1):
            seed = oar.zeros(ys.shape, ys.dtype)
            if self._m is not None:
                seed[..., m] = 1.0
            else:
                seed = oar.ones(ys.shape, ys.dtype)
            g = _C.grad([ys], [xs], [seed], True, True, True)[0]
            rows.append(oar.zeros(xs.shape, xs.dtype) if g is None else g)
        axis = 0 if self._batch is None else 1
        value = oar.stack(rows, axis=axis) if self._m is not None else rows[0]
        return value.reshape(self.shape)

    def __getitem__(self, index):
        if self._value is None:
            self._value = self._evaluate()
        return self._value[index]

    def __repr__(self):
        return f"Jacobian(shape={self.shape})"


Hessian = Jacobian


def _nest(ys, xs, fn):
    ys_seq, xs_seq = isinstance(ys, (list, tuple)), isinstance(xs, (list, tuple))
    if ys_seq and xs_seq:
        return tuple(tuple(fn(y, x) for x in xs) for y in ys)
    if ys_seq:
        return tuple(fn(y, xs) for y in ys)
    if xs_seq:
        return tuple(fn(ys, x) for x in xs)
    return fn(ys, xs)


def _batch_axis(batch_axis, op):
    if batch_axis not in (None, 0) or isinstance(batch_axis, bool):
        raise ValueError(f"{op}: batch_axis must be None or 0, got {batch_axis!r}")


def jacobian(ys, xs, batch_axis=None):
    """The Jacobian of ys w.r.t. xs; tuples give tuples (over ys, then over xs)."""
    _batch_axis(batch_axis, "jacobian")
    for name, v in (("ys", ys), ("xs", xs)):
        for t in (v if isinstance(v, (list, tuple)) else [v]):
            _check(t, batch_axis, "jacobian", name)
    return _nest(ys, xs, lambda y, x: Jacobian(y, x, batch_axis))


def hessian(ys, xs, batch_axis=None):
    """The Hessian of a scalar ys ([B] per sample with batch_axis=0) w.r.t. xs; a tuple of
    xs gives a tuple of tuples H[i][j] = d2 ys / dxs[i] dxs[j]."""
    _batch_axis(batch_axis, "hessian")
    if not isinstance(ys, _C.Tensor) or ys.ndim != (0 if batch_axis is None else 1):
        raise ValueError(f"hessian: ys must be a {'0-D' if batch_axis is None else '1-D [B]'} "
                         f"Tensor, got {getattr(ys, 'shape', type(ys).__name__)}")
    seq = isinstance(xs, (list, tuple))
    xs_list = list(xs) if seq else [xs]
    for x in xs_list:
        _check(x, batch_axis, "hessian", "xs")
    grads = _C.grad([ys], xs_list, None, True, True, True)
    import oar
    grads = [oar.zeros(x.shape, x.dtype) if g is None else g for g, x in zip(grads, xs_list)]
    if not seq:
        return Jacobian(grads[0], xs, batch_axis, "hessian")
    return tuple(tuple(Jacobian(g, x, batch_axis, "hessian") for x in xs_list) for g in grads)
