"""paddle.incubate.autograd: vjp/jvp of a function and its Jacobian/Hessian as matrices over the
flattened, concatenated inputs. Results keep their graph (create_graph), as Paddle's do."""
import oar
from oar._creation import _full_on

__all__ = ["vjp", "jvp", "Jacobian", "Hessian"]


def _as_list(xs, op, name):
    seq = isinstance(xs, (list, tuple))
    items = list(xs) if seq else [xs]
    for t in items:
        if not isinstance(t, oar.Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor or a sequence of Tensors, got "
                            f"{type(t).__name__}")
    return seq, items


def _call(func, op, xs):
    seq, items = _as_list(xs, op, "xs")
    leaves = [x.detach() for x in items]
    for x in leaves:
        x.stop_gradient = False
    ys = func(*leaves)
    return seq, leaves, ys


def _grads(ys, xs, vs):
    gs = oar.grad(ys, xs, vs, retain_graph=True, create_graph=True, allow_unused=True)
    return [_full_on(x.place, x.shape, 0.0, x.dtype) if g is None else g for g, x in zip(gs, xs)]


def _check_v(v, like, op):
    _, vs = _as_list(v, op, "v")
    if len(vs) != len(like) or any(list(a.shape) != list(b.shape) for a, b in zip(vs, like)):
        raise ValueError(f"{op}: v must match the shapes {[list(t.shape) for t in like]}, got "
                         f"{[list(t.shape) for t in vs]}")
    return vs


def vjp(func, xs, v=None):
    """(func(xs), v^T J): v defaults to ones shaped like the outputs."""
    seq, leaves, ys = _call(func, "vjp", xs)
    _, ys_list = _as_list(ys, "vjp", "func's output")
    vs = [oar.ones_like(y) for y in ys_list] if v is None else _check_v(v, ys_list, "vjp")
    g = _grads(ys_list, leaves, vs)
    return ys, (g if seq else g[0])


def jvp(func, xs, v=None):
    """(func(xs), J v) by the double-vjp trick: v defaults to ones shaped like the inputs."""
    seq, leaves, ys = _call(func, "jvp", xs)
    yseq, ys_list = _as_list(ys, "jvp", "func's output")
    vs = [oar.ones_like(x) for x in leaves] if v is None else _check_v(v, leaves, "jvp")
    us = [oar.zeros_like(y) for y in ys_list]
    for u in us:
        u.stop_gradient = False
    gx = oar.grad(ys_list, leaves, us, retain_graph=True, create_graph=True, allow_unused=True)
    pairs = [(g, w) for g, w in zip(gx, vs) if g is not None]
    if not pairs:
        out = [oar.zeros_like(y) for y in ys_list]
    else:
        out = _grads([g for g, _ in pairs], us, [w for _, w in pairs])
    return ys, (out if yseq else out[0])


def _matrix(ys, xs, batched):
    """[M, N] (or [B, M, N]) d flatten(ys) / d concat(flatten(xs)), one reverse pass per row."""
    flat = ys.reshape([ys.shape[0], -1] if batched else [-1])
    m = flat.shape[-1]
    rows = []
    for i in range(m):
        seed = _full_on(flat.place, flat.shape, 0.0, flat.dtype)
        seed[..., i] = 1.0
        gs = _grads([flat], xs, [seed])
        shape = [flat.shape[0], -1] if batched else [-1]
        rows.append(oar.concat([g.reshape(shape) for g in gs], axis=-1))
    n = sum(x.size // (x.shape[0] if batched else 1) for x in xs)
    if not rows:
        return _full_on(ys.place, [ys.shape[0], 0, n] if batched else [0, n], 0.0, ys.dtype)
    out = oar.stack(rows, axis=1 if batched else 0)
    out.stop_gradient = False  # differentiable like every create_graph result, even if constant
    return out


class Jacobian:
    """Jacobian(func, xs, is_batched=False)[index]: rows are func's flattened outputs, columns
    the flattened inputs concatenated; is_batched keeps axis 0 of both as a batch ([B, M, N])."""

    def __init__(self, func, xs, is_batched=False):
        _, self._xs, ys = _call(func, type(self).__name__, xs)
        if isinstance(ys, (list, tuple)):
            ys = oar.concat([y.reshape([y.shape[0], -1] if is_batched else [-1]) for y in ys],
                            axis=-1)
        self._check(ys, is_batched)
        self._ys, self._batched, self._value = ys, is_batched, None

    def _check(self, ys, batched):
        if batched and (ys.ndim < 1 or any(x.ndim < 1 or x.shape[0] != ys.shape[0]
                                           for x in self._xs)):
            raise ValueError(f"{type(self).__name__}: is_batched needs inputs and outputs that "
                             "share axis 0")

    def _evaluate(self):
        return _matrix(self._ys, self._xs, self._batched)

    @property
    def shape(self):
        return list(self[:].shape) if self._value is None else list(self._value.shape)

    def __getitem__(self, index):
        if self._value is None:
            self._value = self._evaluate()
        return self._value[index]


class Hessian(Jacobian):
    """Hessian(func, xs, is_batched=False): func returns a scalar (or [B] with is_batched); the
    [N, N] (or [B, N, N]) second derivatives over the concatenated flattened inputs."""

    def _check(self, ys, batched):
        super()._check(ys, batched)
        if ys.size != (ys.shape[0] if batched and ys.ndim else 1):
            raise ValueError(f"Hessian: func must return one value (per sample with "
                             f"is_batched), got shape {list(ys.shape)}")

    def _evaluate(self):
        ys = self._ys.reshape([self._ys.shape[0]] if self._batched else [])
        gs = _grads([ys], self._xs, [oar.ones_like(ys)])
        shape = [ys.shape[0], -1] if self._batched else [-1]
        g = oar.concat([t.reshape(shape) for t in gs], axis=-1)
        return _matrix(g, self._xs, self._batched)


# ---- Paddle's primitive-operator switch: FLAGS_prim_all, which makes Oar's program
# pipelines decompose ops with a decomp: rule into primitives (cinn/decompose). Programs keep
# their original ops; the decomposition happens when they are lowered.
def enable_prim():
    """Programs are lowered through the primitive-op decompositions."""
    from .. import _C

    _C.set_flag("prim_all", "true")


def disable_prim():
    from .. import _C

    _C.set_flag("prim_all", "false")


def prim_enabled():
    """Whether the decompositions are on."""
    from .. import _C

    return str(_C.get_flag("prim_all")).lower() in ("true", "1")


def prim2orig(block=None, blacklist=None):
    """The program's ops back as original ops: an Oar program always holds them (the
    primitives exist only in the lowered copy), so there is nothing to convert."""
    _check_block(block, "prim2orig")


def orig2prim(block=None):
    """Primitive ops in place of original ones: Oar decomposes when it lowers a program
    (with prim enabled), not in the program, so the program is left as it is."""
    _check_block(block, "orig2prim")


def _check_block(block, who):
    if block is not None and not hasattr(block, "ops"):
        raise TypeError(f"{who}: block must be a program block or None, got {type(block).__name__}")


__all__ += ["enable_prim", "disable_prim", "prim_enabled", "prim2orig", "orig2prim"]
