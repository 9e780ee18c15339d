"""oar.nn.functional: activations, linear, softmax and losses."""
from .. import _C
from ._inference_ops import F32_F64 as _F32_F64, no_grad_flows as _no_grad_flows

_ops = _C.ops


relu = _ops.relu
relu_ = _ops.relu_
sigmoid = _ops.sigmoid
tanh = _ops.tanh


def gelu(x, approximate=False, name=None):
    """x * Phi(x); approximate True or 'tanh' uses the tanh formula, False or 'none' the exact
    erf one (Paddle 3.3 takes either form)."""
    if isinstance(approximate, str):
        if approximate not in ("tanh", "none"):
            raise ValueError(f"gelu: approximate must be a bool, 'tanh' or 'none', got "
                             f"'{approximate}'")
        approximate = approximate == "tanh"
    return _ops.gelu(x, bool(approximate))


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias, with weight of shape [in_features, out_features] (Paddle layout); a
    1-D weight [in_features] contracts x's last dimension away (matmul's rule, as Paddle)."""
    if weight.ndim not in (1, 2) or x.ndim == 0 or x.shape[-1] != weight.shape[0]:
        raise ValueError(f"linear: x's last dimension must equal weight's first, got x of shape "
                         f"{list(x.shape)} and weight of shape {list(weight.shape)} ([in, out])")
    if (bias is not None and weight.ndim == 2 and list(bias.shape) == [weight.shape[1]]
            and _no_grad_flows((x, weight, bias), _F32_F64)):
        return _ops.fused_linear(x, weight, bias, False, False)  # Note [Eager inference ops]
    out = _ops.matmul(x, weight)
    return out if bias is None else out + bias


def softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = x.astype(dtype)
    return _ops.softmax(x, axis)


def log_softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = x.astype(dtype)
    return _ops.log_softmax(x, axis)


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean",  # noqa: A002
                  soft_label=False, axis=-1, use_softmax=True, label_smoothing=0.0, name=None):
    """Softmax cross-entropy (Paddle semantics): hard int64 labels of shape [N] or [N, 1],
    or soft labels of the input's shape; 'mean' averages over non-ignored samples."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")
    if label_smoothing and not soft_label and isinstance(label, _C.Tensor) and \
            isinstance(input, _C.Tensor) and label.dtype.is_floating_point and \
            list(label.shape) == list(input.shape):
        soft_label = True  # as Paddle: smoothed float labels of the input's shape are soft
        if label.dtype != input.dtype:
            label = label.astype(input.dtype)
    return _ops.cross_entropy(input, label, weight, soft_label, use_softmax, ignore_index, axis,
                              float(label_smoothing), reduction)


def mse_loss(input, label, reduction="mean", name=None):  # noqa: A002
    # square, as Paddle: its backward is one product with the difference, where d * d's
    # computed two and added them (forward + backward of [1024, 1024] 2.55 -> 1.94 ms)
    return _reduce(_ops.square(input - label), reduction, "mse_loss")


def l1_loss(input, label, reduction="mean", name=None):  # noqa: A002
    return _reduce((input - label).abs(), reduction, "l1_loss")


from ._errors import named_errors as _named_errors  # noqa: E402

linear = _named_errors("linear")(linear)
mse_loss = _named_errors("mse_loss")(mse_loss)
l1_loss = _named_errors("l1_loss")(l1_loss)

from ._functional_cnn import *  # noqa: E402,F401,F403  (conv, pool, norm, activations, dropout)
from ._functional_manip import *  # noqa: E402,F401,F403  (pad, interpolate, embedding, ...)
from ._functional_attention import *  # noqa: E402,F401,F403  (scaled_dot_product_attention)
from . import _functional_loss  # noqa: E402,F401
from ._functional_loss import *  # noqa: E402,F401,F403  (nll_loss, bce, kl_div, bilinear, ...)
diag_embed = _ops.diag_embed  # Paddle has it as paddle.diag_embed and F.diag_embed


# hinge/triplet/focal/dice losses, maxout, swiglu... load on first use (oar._lazy);
# paddle.nn.functional.loss.<functional> is oar.nn.loss
from .. import _lazy  # noqa: E402
_lazy.install(globals(), "oar.nn.functional", _lazy.NN_FUNCTIONAL, base="oar.nn",
              namespaces={"loss": "oar.nn.loss", "flash_attention": "oar.nn.functional.flash_attention"})

# Paddle's paddle.nn.functional.<submodule> paths (flash_attention) import from this folder
__path__ = [__import__("os").path.join(__import__("os").path.dirname(__file__), "_functional_sub")]
