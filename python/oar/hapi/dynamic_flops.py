"""oar.flops: multiply-accumulate counts per layer with Paddle's counting rules, collected
with forward post-hooks; layers are matched by class name so every layer family counts
without importing it."""

import numpy as np

from .. import _C
from ..autograd import no_grad
from .model_summary import _make_inputs, _place_of


def _numel(t):
    return (
        int(np.prod(t.shape))
        if isinstance(t, _C.Tensor) and t.shape
        else (1 if isinstance(t, _C.Tensor) else 0)
    )


def _attr(m, *names, default=None):
    for n in names:
        if hasattr(m, n):
            return getattr(m, n)
    return default


def count_convNd(m, x, y):
    w = _attr(m, "weight")
    kernel_ops = int(np.prod(w.shape[2:])) if w is not None else 1
    bias_ops = 1 if _attr(m, "bias") is not None else 0
    groups = _attr(m, "_groups", "groups", default=1) or 1
    in_ch = x[0].shape[1]
    return abs(int(_numel(y) * (in_ch / groups * kernel_ops + bias_ops)))


def count_leaky_relu(m, x, y):
    return _numel(x[0])


def count_bn(m, x, y):
    return 0 if m.training else abs(int(2 * _numel(x[0])))


def count_linear(m, x, y):
    return abs(int(m.weight.shape[0] * _numel(y)))


def count_avgpool(m, x, y):
    return _numel(y)


def count_adap_avgpool(m, x, y):
    kernel = np.array(x[0].shape[2:]) // np.maximum(np.array(y.shape[2:]), 1)
    return int((int(np.prod(kernel)) + 1) * _numel(y))


def count_zero_ops(m, x, y):
    return 0


def count_parameters(m):
    return sum(int(np.prod(p.shape)) for p in m._parameters.values() if p is not None)


_RULES = {
    "Conv1D": count_convNd,
    "Conv2D": count_convNd,
    "Conv3D": count_convNd,
    "Conv1DTranspose": count_convNd,
    "Conv2DTranspose": count_convNd,
    "Conv3DTranspose": count_convNd,
    "BatchNorm": count_bn,
    "BatchNorm1D": count_bn,
    "BatchNorm2D": count_bn,
    "BatchNorm3D": count_bn,
    "ReLU": count_zero_ops,
    "ReLU6": count_zero_ops,
    "Dropout": count_zero_ops,
    "LeakyReLU": count_leaky_relu,
    "Linear": count_linear,
    "AvgPool1D": count_avgpool,
    "AvgPool2D": count_avgpool,
    "AvgPool3D": count_avgpool,
    "AdaptiveAvgPool1D": count_adap_avgpool,
    "AdaptiveAvgPool2D": count_adap_avgpool,
    "AdaptiveAvgPool3D": count_adap_avgpool,
}


def flops(net, input_size, custom_ops=None, print_detail=False):
    """Total FLOPs of one forward pass on zeros of input_size (Paddle's counting rules;
    custom_ops maps a layer class to fn(layer, inputs, output) -> count). Prints the total
    (and with print_detail the per-layer table); returns the total as an int."""
    custom = {}
    for k, fn in (custom_ops or {}).items():
        custom[k if isinstance(k, str) else k.__name__] = fn
    rows, hooks, seen = [], [], set()

    def hook(layer, ins, out):
        cls = type(layer).__name__
        fn = custom.get(cls) or _RULES.get(cls)
        if fn is None:
            ops = 0
        else:
            ops = fn(layer, ins, out)
            if ops is None:  # a Paddle-style custom op accumulates into layer.total_ops
                ops = int(getattr(layer, "total_ops", 0))
        rows.append(
            (
                layer.full_name(),
                list(ins[0].shape) if ins and hasattr(ins[0], "shape") else [],
                list(out.shape) if hasattr(out, "shape") else [],
                count_parameters(layer),
                int(ops),
            )
        )

    for _, layer in net.named_sublayers(include_self=True):
        if layer._sub_layers:
            continue
        cls = type(layer)
        if cls not in seen:  # one line per layer type, as Paddle prints them
            seen.add(cls)
            if cls.__name__ in custom:
                print(f"Customize Function has been applied to {cls}")
            elif cls.__name__ in _RULES:
                print(f"{cls}'s flops has been counted")
            else:
                print(f"Cannot find suitable count function for {cls}. Treat it as zero FLOPs.")
        layer.total_ops = 0
        hooks.append(layer.register_forward_post_hook(hook))
    inputs = _make_inputs(input_size, None, _place_of(net))
    training = net.training
    try:
        net.eval()
        with no_grad():
            net(*inputs)
    finally:
        for h in hooks:
            h.remove()
        net.train(training)
        for _, layer in net.named_sublayers(include_self=True):
            layer.__dict__.pop("total_ops", None)
    total_ops = sum(r[4] for r in rows)
    total_params = sum(r[3] for r in rows)
    if print_detail:
        head = ("Layer Name", "Input Shape", "Output Shape", "Params", "Flops")
        cells = [(r[0], str(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows]
        widths = [
            max(len(head[i]), *(len(c[i]) for c in cells)) + 2 if cells else len(head[i]) + 2
            for i in range(5)
        ]
        sep = "+" + "+".join("-" * w for w in widths) + "+"
        out = [sep, "|" + "|".join(f"{head[i]:^{widths[i]}}" for i in range(5)) + "|", sep]
        out += ["|" + "|".join(f"{c[i]:^{widths[i]}}" for i in range(5)) + "|" for c in cells]
        out.append(sep)
        print("\n".join(out))
    print("Total Flops: {}     Total Params: {}".format(int(total_ops), int(total_params)))
    return int(total_ops)
