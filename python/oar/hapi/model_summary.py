"""oar.summary: the layer table Paddle prints (layer, input/output shapes, parameters),
collected with forward post-hooks during one forward pass on zeros."""

import numbers

import numpy as np

from .. import _C
from ..autograd import no_grad

_CONTAINERS = ("Sequential", "LayerList", "LayerDict", "ParameterList", "ParameterDict")


def _shape_of(x):
    if isinstance(x, _C.Tensor):
        return list(x.shape)
    if isinstance(x, (list, tuple)):
        return [_shape_of(v) for v in x]
    return []


def _numel(x):
    if isinstance(x, _C.Tensor):
        return int(np.prod(x.shape)) if x.shape else 1
    if isinstance(x, (list, tuple)):
        return sum(_numel(v) for v in x)
    return 0


def _normalize_sizes(input_size):
    """One size (tuple of ints) or a list/dict of sizes -> list of shapes; batch -1/None -> 1."""

    def one(s):
        if hasattr(s, "shape") and not isinstance(s, (list, tuple)):
            s = s.shape
        s = [1 if d is None or d == -1 else d for d in s]
        for d in s:
            if not isinstance(d, numbers.Integral) or d <= 0:
                raise ValueError(
                    f"summary: input_size dimensions must be positive integers (or "
                    f"-1/None for the batch), got {tuple(s)}"
                )
        return [int(d) for d in s]

    if isinstance(input_size, dict):
        return [one(s) for s in input_size.values()]
    if hasattr(input_size, "shape") and not isinstance(input_size, (list, tuple)):
        return [one(input_size)]
    if (
        isinstance(input_size, (list, tuple))
        and input_size
        and all(isinstance(d, numbers.Integral) or d is None for d in input_size)
    ):
        return [one(input_size)]
    if isinstance(input_size, (list, tuple)) and input_size:
        return [one(s) for s in input_size]
    raise ValueError(f"summary: cannot understand input_size {input_size!r}")


def _collect(net, inputs):
    """Runs net on inputs; returns one row per hooked layer (name, shapes, parameter counts,
    output size)."""
    rows, hooks, counts = [], [], {}

    def hook(layer, ins, out):
        cls = type(layer).__name__
        counts[cls] = counts.get(cls, 0) + 1
        params = trainable = 0
        for p in layer._parameters.values():
            if p is None:
                continue
            n = int(np.prod(p.shape)) if p.shape else 1
            params += n
            if getattr(p, "trainable", True) and not p.stop_gradient:
                trainable += n
        rows.append(
            {
                "name": f"{cls}-{counts[cls]}",
                "input": [_shape_of(x) for x in ins],
                "output": _shape_of(out),
                "params": params,
                "trainable": trainable,
                "numel": _numel(out),
                "layer": layer,
            }
        )

    for _, layer in net.named_sublayers(include_self=True):
        if type(layer).__name__ in _CONTAINERS or (layer is net and layer._sub_layers):
            continue
        hooks.append(layer.register_forward_post_hook(hook))
    training = net.training
    try:
        net.eval()
        with no_grad():
            net(*inputs)
    finally:
        for h in hooks:
            h.remove()
        net.train(training)
    return rows


def _input_tensors(input):
    """The tensors of a given `input` (a Tensor, a list/tuple of them or a dict of them)."""
    if isinstance(input, _C.Tensor):
        return [input]
    values = list(input.values()) if isinstance(input, dict) else \
        list(input) if isinstance(input, (list, tuple)) else None
    if values is None or not all(isinstance(v, _C.Tensor) for v in values):
        raise ValueError(f"summary: input must be a Tensor or a list, tuple or dict of Tensors, "
                         f"got {type(input).__name__}; or give input_size")
    return values


def _place_of(net):
    """Where net's parameters (else its buffers) live; None (the current device) without any."""
    for _, t in net.named_parameters():  # a generator: stops at the first
        return t.place
    for t in net.buffers():
        return t.place
    return None


def _make_inputs(input_size, dtypes, place):
    """Zeros of each input size, on `place` (the network's): a network on a device met
    inputs made on the current device, and its first op raised."""
    from .._creation import _full_on

    shapes = _normalize_sizes(input_size)
    if dtypes is None:
        dtypes = ["float32"] * len(shapes)
    elif isinstance(dtypes, str):
        dtypes = [dtypes] * len(shapes)
    if len(dtypes) != len(shapes):
        raise ValueError(f"summary: {len(dtypes)} dtypes for {len(shapes)} inputs")
    return [_full_on(place, s, 0.0, d) for s, d in zip(shapes, dtypes)]


def summary(net, input_size=None, dtypes=None, input=None):  # noqa: A002 (Paddle's name)
    """Prints the table of each non-container layer's input/output shapes and parameter
    count, the totals and the memory estimate, as paddle.summary; returns
    {'total_params': n, 'trainable_params': n}."""
    if input_size is None and input is None:
        raise ValueError("summary: give input_size or input")
    if input is not None:
        # as Paddle: a given input is passed whole, as the network's one argument
        inputs = _input_tensors(input)
        rows = _collect(net, [input])
    else:
        inputs = _make_inputs(input_size, dtypes, _place_of(net))
        rows = _collect(net, inputs)
    header = ("Layer (type)", "Input Shape", "Output Shape", "Param #")
    cells = [(r["name"], str(r["input"]), str(r["output"]), f"{r['params']:,}") for r in rows]
    # Paddle's layout: columns at least 15, 20, 20 and 15 wide (or their longest cell), the
    # rules at least 75 (or the columns and 5)
    widths = [max([15, 20, 20, 15][i], *(len(c[i]) for c in cells)) for i in range(3)]
    widths.append(max(15, *(len(str(r["params"])) for r in rows)))
    total_width = max(75, sum(widths) + 5)
    fmt = "{:^{}} {:^{}} {:^{}} {:^{}}"
    lines = [
        "-" * total_width,
        fmt.format(
            header[0], widths[0], header[1], widths[1], header[2], widths[2], header[3], widths[3]
        ),
        "=" * total_width,
    ]
    for c in cells:
        lines.append(fmt.format(c[0], widths[0], c[1], widths[1], c[2], widths[2], c[3], widths[3]))
    total = sum(r["params"] for r in rows)
    trainable = sum(r["trainable"] for r in rows)
    in_mb = sum(int(np.prod(t.shape)) * 4 for t in inputs) / (1024**2)
    act_mb = abs(2.0 * sum(r["numel"] for r in rows) * 4.0 / (1024**2))
    param_mb = total * 4.0 / (1024**2)
    lines += [
        "=" * total_width,
        f"Total params: {total:,}",
        f"Trainable params: {trainable:,}",
        f"Non-trainable params: {total - trainable:,}",
        "-" * total_width,
        f"Input size (MB): {in_mb:0.2f}",
        f"Forward/backward pass size (MB): {act_mb:0.2f}",
        f"Params size (MB): {param_mb:0.2f}",
        f"Estimated Total Size (MB): {in_mb + act_mb + param_mb:0.2f}",
        "-" * total_width,
    ]
    print("\n".join(lines))
    return {"total_params": total, "trainable_params": trainable}
