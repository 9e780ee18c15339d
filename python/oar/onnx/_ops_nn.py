"""Translation rules for the nn ops (Note [ONNX export] in docs/notes/jit.md): convolutions,
pooling (ceil mode by end padding, adaptive pooling as global/equal-bin pools or per-bin
reductions), batch/layer/group norm, and scaled_dot_product_attention decomposed."""
import math

import numpy as np

from ._graph import dtype_name
from ._ops import _FLOATS, _norm_axis, rule


def _pads(v, paddings, nd):
    """Oar's paddings (one value, nd symmetric values, or before/after per dim) as ONNX pads
    (all befores, then all afters)."""
    p = [int(x) for x in paddings]
    if len(p) == 1:
        before, after = p * nd, p * nd
    elif len(p) == nd:
        before, after = p, p
    elif len(p) == 2 * nd:
        before, after = p[0::2], p[1::2]
    else:
        raise v.unsupported(f"paddings {p}")
    return before, after


def _spatial(v, vals, nd, name):
    vals = [int(x) for x in vals]
    if len(vals) == 1:
        return vals * nd
    if len(vals) != nd:
        raise v.unsupported(f"{name} {vals}")
    return vals


def _channels_last(v, nd):
    fmt = v.attrs.get("data_format", "NCHW")
    if fmt in ("NCHW", "NCDHW", "NCL"):
        return False
    if fmt in ("NHWC", "NDHWC", "NLC"):
        return True
    raise v.unsupported(f"data_format {fmt}")


def _to_first(g, x, nd):
    return g.transpose(x, [0, nd + 1] + list(range(1, nd + 1)))


def _to_last(g, x, nd):
    return g.transpose(x, [0] + list(range(2, nd + 2)) + [1])


def _conv_common(v, nd):
    """What Conv and ConvTranspose share: channels-last inputs moved first, and the
    attributes (strides, dilations, pads, group, kernel_shape). Returns (x, attrs, last)."""
    last = _channels_last(v, nd)
    x = _to_first(v.g, v.x(0), nd) if last else v.x(0)
    before, after = _pads(v, v.attrs["paddings"], nd)
    attrs = dict(strides=_spatial(v, v.attrs["strides"], nd, "strides"),
                 dilations=_spatial(v, v.attrs["dilations"], nd, "dilations"), pads=before + after,
                 group=int(v.attrs.get("groups", 1)), kernel_shape=v.shape(1)[2:])
    return x, attrs, last


@rule("pd_op.conv2d", "pd_op.conv3d", "pd_op.fused_conv2d")
def _conv(v):
    nd = 3 if v.name == "pd_op.conv3d" else 2
    g = v.g
    x, attrs, last = _conv_common(v, nd)
    inputs = [x, v.x(1)]
    if v.name == "pd_op.fused_conv2d":   # activation(conv + bias); the bias is [C_out]
        act = v.attrs.get("activation", "")
        if act not in ("", "relu"):
            raise v.unsupported(f"activation '{act}'")
        if v.present(2):
            inputs.append(v.g.node("Reshape", [v.x(2), g.ints([-1])]))
    y = g.node("Conv", inputs, **attrs)
    if v.name == "pd_op.fused_conv2d" and v.attrs.get("activation", "") == "relu":
        y = g.node("Relu", [y])
    v.out(_to_last(g, y, nd) if last else y)


@rule("pd_op.conv2d_transpose", "pd_op.conv3d_transpose")
def _conv_transpose(v):
    nd = 3 if v.name == "pd_op.conv3d_transpose" else 2
    g = v.g
    x, attrs, last = _conv_common(v, nd)
    out_pad = _spatial(v, v.attrs.get("output_padding", []) or [0], nd, "output_padding")
    y = g.node("ConvTranspose", [x, v.x(1)], output_padding=out_pad, **attrs)
    v.out(_to_last(g, y, nd) if last else y)


def _pool(v, op_type, nd):
    g = v.g
    a = v.attrs
    last = _channels_last(v, nd)
    shape = v.shape(0)
    spatial_in = shape[1:1 + nd] if last else shape[2:]
    spatial_out = v.rshape()[1:1 + nd] if last else v.rshape()[2:]
    x = _to_first(g, v.x(0), nd) if last else v.x(0)
    attrs = {}
    if a.get("adaptive", False):
        outs = _spatial(v, a["kernel_size"], nd, "output_size")
        if all(o == 1 for o in outs):
            y = g.node("GlobalAveragePool" if op_type == "AveragePool" else "GlobalMaxPool", [x])
            return v.out(_to_last(g, y, nd) if last else y)
        if -1 in spatial_in:
            raise v.unsupported(f"adaptive pooling from the dynamic size {spatial_in} to {outs}")
        if any(i % o for i, o in zip(spatial_in, outs)):
            y = _adaptive_bins(g, x, spatial_in, outs, "ReduceMean" if op_type == "AveragePool" else "ReduceMax")
            return v.out(_to_last(g, y, nd) if last else y)
        k = [i // o for i, o in zip(spatial_in, outs)]
        attrs.update(kernel_shape=k, strides=k, pads=[0] * (2 * nd))
    else:
        k = _spatial(v, a["kernel_size"], nd, "kernel_size")
        s = _spatial(v, a["strides"], nd, "strides")
        before, after = _pads(v, a["paddings"], nd)
        if a.get("ceil_mode", False):
            # Oar's ceil mode adds windows up to ceil((span - k) / s) + 1, with no further rule:
            # pad the end so that ONNX's floor mode gives the same windows.
            if -1 in spatial_in or -1 in spatial_out:
                raise v.unsupported("ceil_mode with dynamic spatial sizes")
            extra = [(o - 1) * st + kk - (i + b + e)
                     for o, st, kk, i, b, e in zip(spatial_out, s, k, spatial_in, before, after)]
            if any(e > 0 for e in extra) and op_type == "AveragePool" and not a.get("exclusive", True):
                raise v.unsupported("ceil_mode average pooling that counts padding")
            after = [e + max(x_, 0) for e, x_ in zip(after, extra)]
        attrs.update(kernel_shape=k, strides=s, pads=before + after)
        if op_type == "AveragePool":
            attrs["count_include_pad"] = 0 if a.get("exclusive", True) else 1
    y = g.node(op_type, [x], **attrs)
    v.out(_to_last(g, y, nd) if last else y)


def _adaptive_bins(g, x, spatial_in, outs, reduce):
    """Adaptive pooling with unequal bins ([o * in / out, ceil((o + 1) * in / out)) per dim,
    as Oar's kernels): bins are boxes, so each spatial dim is reduced on its own, one
    Slice + reduction per output index, concatenated."""
    for d, (n, m) in enumerate(zip(spatial_in, outs)):
        ax = 2 + d
        if n == m:
            continue
        parts = []
        for o in range(m):
            b, e = o * n // m, ((o + 1) * n + m - 1) // m
            parts.append(g.reduce(reduce, g.node("Slice", [x, g.ints([b]), g.ints([e]), g.ints([ax])]), [ax], True))
        x = g.node("Concat", parts, axis=ax)
    return x


@rule("pd_op.avg_pool2d", "pd_op.avg_pool3d")
def _avg_pool(v):
    _pool(v, "AveragePool", 2 if v.name.endswith("2d") else 3)


@rule("pd_op.max_pool2d_with_index", "pd_op.max_pool3d_with_index", "pd_op.max_pool2d")
def _max_pool(v):
    v.only_first_used("the argmax mask")
    _pool(v, "MaxPool", 2 if "2d" in v.name else 3)


@rule("pd_op.batch_norm")
def _batch_norm(v):
    a = v.attrs
    if a.get("training", False) and not a.get("use_global_stats", False):
        raise v.unsupported("batch statistics (training mode); call layer.eval() before exporting")
    for i in (3, 4):
        if v.used(i):
            raise v.unsupported("its saved mean/rstd results are used")
    g = v.g
    shape = v.shape(0)
    nd = len(shape) - 2
    fmt = a.get("data_format", "NCHW")
    last = len(shape) > 2 and fmt in ("NHWC", "NDHWC", "NLC")
    c = shape[-1] if last else shape[1]
    dt = v.np_dtype()
    if c == -1 and not (v.present(3) and v.present(4)):
        raise v.unsupported("a dynamic channel count without scale and bias")
    scale = v.x(3) if v.present(3) else g.const(np.ones([c], dt), "bn_scale")
    bias = v.x(4) if v.present(4) else g.const(np.zeros([c], dt), "bn_bias")
    x = _to_first(g, v.x(0), nd) if last else v.x(0)
    y = g.node("BatchNormalization", [x, scale, bias, v.x(1), v.x(2)], epsilon=float(a.get("epsilon", 1e-5)))
    v.out(_to_last(g, y, nd) if last else y)
    # in inference the running statistics pass through unchanged
    v.out(v.x(1), 1)
    v.out(v.x(2), 2)


@rule("pd_op.layer_norm")
def _layer_norm(v):
    g = v.g
    shape = v.shape(0)
    rank = len(shape)
    axis = _norm_axis(int(v.attrs.get("begin_norm_axis", 1)), rank)
    eps = float(v.attrs.get("epsilon", 1e-5))
    norm_shape = shape[axis:]
    dt = v.np_dtype()
    x = v.x(0)

    def param(i, fill):
        if not v.present(i):
            if -1 in norm_shape:
                return None
            return g.const(np.full(norm_shape, fill, dt), "ln_param")
        name = v.x(i)
        if v.shape(i) != norm_shape:
            if -1 in norm_shape:
                raise v.unsupported("a flattened scale/bias over dynamic normalized dims")
            name = g.node("Reshape", [name, g.ints(norm_shape)])
        return name

    scale, bias = param(1, 1.0), param(2, 0.0)
    want_stats = v.used(1) or v.used(2)
    if g.opset >= 17 and scale is not None:
        outs = g.node("LayerNormalization", [x, scale] + ([bias] if bias is not None else []),
                      outputs=3 if want_stats else 1, axis=axis, epsilon=eps)
        if want_stats:
            y, mean, inv = outs
            axes = list(range(axis, rank))
            v.out(g.squeeze(mean, axes), 1)
            v.out(g.squeeze(inv, axes), 2)
        else:
            y = outs
        v.out(y)
        return
    axes = list(range(axis, rank))
    mean = g.reduce("ReduceMean", x, axes, True)
    d = g.node("Sub", [x, mean])
    var = g.reduce("ReduceMean", g.node("Mul", [d, d]), axes, True)
    rstd = g.node("Reciprocal", [g.node("Sqrt", [g.node("Add", [var, g.scalar(eps, dt)])])])
    y = g.node("Mul", [d, rstd])
    if scale is not None:
        y = g.node("Mul", [y, scale])
    elif v.present(1):
        raise v.unsupported("scale over dynamic normalized dims")
    if bias is not None:
        y = g.node("Add", [y, bias])
    v.out(y)
    v.out(g.squeeze(mean, axes), 1)
    v.out(g.squeeze(rstd, axes), 2)


@rule("pd_op.group_norm")
def _group_norm(v):
    v.only_first_used("mean/rstd")
    g = v.g
    shape = v.shape(0)
    groups = int(v.attrs.get("groups", 1))
    c = shape[1]
    if c == -1:
        raise v.unsupported("a dynamic channel count")
    dt = v.np_dtype()
    eps = float(v.attrs.get("epsilon", 1e-5))
    x = v.x(0)
    xg = g.node("Reshape", [x, g.ints([0, groups, -1])])
    mean = g.reduce("ReduceMean", xg, [2], True)
    d = g.node("Sub", [xg, mean])
    var = g.reduce("ReduceMean", g.node("Mul", [d, d]), [2], True)
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [var, g.scalar(eps, dt)])])])
    y = g.node("Reshape", [y, g.node("Shape", [x])])
    bshape = [c] + [1] * (len(shape) - 2)
    if v.present(1):
        y = g.node("Mul", [y, g.node("Reshape", [v.x(1), g.ints(bshape)])])
    if v.present(2):
        y = g.node("Add", [y, g.node("Reshape", [v.x(2), g.ints(bshape)])])
    v.out(y)


@rule("pd_op.scaled_dot_product_attention")
def _sdpa(v):
    """Decomposed: softmax(scale * Q K^T + mask) V in [B, H, S, D], back to [B, S, H, D]."""
    g = v.g
    qs, ks = v.shape(0), v.shape(1)
    rank = len(qs)
    if rank not in (3, 4):
        raise v.unsupported(f"rank {rank} inputs")
    dt = v.np_dtype()
    if v.rdtype() not in _FLOATS:
        raise v.unsupported(f"dtype {v.rdtype()}")
    head_dim = qs[-1]
    if head_dim == -1:
        raise v.unsupported("a dynamic head dim")
    scale = float(v.attrs.get("scale", 0.0)) or 1.0 / math.sqrt(head_dim)
    h, hk = qs[-2], ks[-2]
    if h == -1 or hk == -1:
        raise v.unsupported("a dynamic number of heads")
    q, k, val = v.x(0), v.x(1), v.x(2)
    if rank == 3:   # [S, H, D]: one batch
        q, k, val = (g.unsqueeze(t, [0]) for t in (q, k, val))
    q = g.transpose(q, [0, 2, 1, 3])             # [B, H, Sq, D]
    k = g.transpose(k, [0, 2, 3, 1])             # [B, Hk, D, Sk]
    val = g.transpose(val, [0, 2, 1, 3])         # [B, Hk, Sk, Dv]
    if h != hk:                                  # grouped-query attention: repeat the k/v heads
        if h % hk:
            raise v.unsupported(f"{h} query heads over {hk} key heads")
        rep = h // hk

        def repeat(t, d_last2):
            t = g.unsqueeze(t, [2])                                      # [B, Hk, 1, a, b]
            t = g.node("Expand", [t, g.ints([1, 1, rep, 1, 1])])        # [B, Hk, rep, a, b]
            return g.node("Reshape", [t, g.ints([0, h] + d_last2)])
        k = repeat(k, [head_dim, -1])
        dv = v.shape(2)[-1]
        if dv == -1:
            raise v.unsupported("a dynamic value head dim")
        val = repeat(val, [-1, dv])
    s = g.node("Mul", [g.node("MatMul", [q, k]), g.scalar(scale, dt)])  # [B, H, Sq, Sk]
    masked = False
    if v.present(3):
        mask = v.x(3)
        if v.dtype(3) == "bool":
            mask = g.node("Where", [mask, g.scalar(0.0, dt), g.scalar(-np.inf, dt)])
        else:
            mask = g.cast(mask, v.dtype(3), v.rdtype())
        s = g.node("Add", [s, mask])
        masked = True
    if v.attrs.get("is_causal", False):
        # top-left aligned: query i sees keys j <= i
        shp = g.node("Shape", [s])
        sq = g.node("Slice", [shp, g.ints([2]), g.ints([3])])
        sk = g.node("Slice", [shp, g.ints([3]), g.ints([4])])
        zero, one = g.const(np.asarray(0, np.int64)), g.const(np.asarray(1, np.int64))
        rows = g.node("Range", [zero, g.squeeze(sq, [0]), one])
        cols = g.node("Range", [zero, g.squeeze(sk, [0]), one])
        keep = g.node("LessOrEqual", [g.unsqueeze(cols, [0]), g.unsqueeze(rows, [1])])
        s = g.node("Where", [keep, s, g.scalar(-np.inf, dt)])
    p = g.node("Softmax", [s], axis=-1)
    if masked:
        # a row whose keys are all masked gives 0 in Oar (ONNX's softmax gives NaN)
        p = g.node("Where", [g.node("IsNaN", [p]), g.scalar(0.0, dt), p])
    o = g.node("MatMul", [p, val])                # [B, H, Sq, Dv]
    o = g.transpose(o, [0, 2, 1, 3])
    if rank == 3:
        o = g.squeeze(o, [0])
    v.out(o)
    if v.used(1):
        lse = g.reduce("ReduceLogSumExp", s, [-1], False)   # [B, H, Sq]
        if rank == 3:
            lse = g.squeeze(lse, [0])
        lse_t = dtype_name(v.results[1].dtype)
        v.out(g.cast(lse, v.rdtype(), lse_t), 1)


# ---- the fused recurrent ops (Notes [Fused LSTM] and [Fused GRU and SimpleRNN]) as ONNX's
# LSTM / GRU / RNN. The ops take the input projection xw = x W_ih^T already done, so X is xw
# and W a constant permutation matrix that reorders Paddle's gates into ONNX's (LSTM: i, f,
# g, o -> i, o, f, c; GRU: r, z, c -> z, r, h with linear_before_reset, Paddle's candidate
# r * (h W_hc^T + b_hc)); R and the biases are the op's, reordered with Gather.
def _rnn_common(v, gates, perm):
    if v.rdtype() not in _FLOATS:
        raise v.unsupported(f"dtype {v.rdtype()}")
    hidden = v.shape(1)[-1]
    if hidden == -1:
        raise v.unsupported("a dynamic hidden size")
    g, dt = v.g, v.np_dtype()
    n = gates * hidden
    idx = np.concatenate([np.arange(b * hidden, (b + 1) * hidden) for b in perm])
    w = np.zeros([1, n, n], dt)
    w[0, np.arange(n), idx] = 1.0
    batch_first = bool(v.attrs.get("batch_first", False))
    x = g.transpose(v.x(0), [1, 0, 2]) if batch_first else v.x(0)

    def reorder(i):
        return g.node("Gather", [v.x(i), g.ints(list(idx))], axis=0)
    attrs = dict(hidden_size=int(hidden), direction="reverse" if v.attrs.get("reverse", False) else "forward")
    return g, x, g.const(w, "rnn_w"), reorder, attrs, n, dt, batch_first


def _rnn_outputs(v, g, y, hs, batch_first):
    out = g.squeeze(y, [1])                       # [T, 1, B, H] -> [T, B, H]
    v.out(g.transpose(out, [1, 0, 2]) if batch_first else out)
    for i, h in enumerate(hs, start=1):
        v.out(g.squeeze(h, [0]), i)


@rule("pd_op.lstm_sequence")
def _lstm_sequence(v):
    for i in (3, 4):
        if v.used(i):
            raise v.unsupported("its saved gates/cells are used")
    g, x, w, reorder, attrs, n, dt, bf = _rnn_common(v, 4, [0, 3, 1, 2])
    r = g.unsqueeze(reorder(1), [0])
    b = g.unsqueeze(g.node("Concat", [reorder(2), g.const(np.zeros([n], dt), "rnn_rb")], axis=0), [0])
    y, yh, yc = g.node("LSTM", [x, w, r, b, "", g.unsqueeze(v.x(3), [0]), g.unsqueeze(v.x(4), [0])],
                       outputs=3, **attrs)
    _rnn_outputs(v, g, y, [yh, yc], bf)


@rule("pd_op.gru_sequence")
def _gru_sequence(v):
    if v.used(2):
        raise v.unsupported("its saved gates are used")
    g, x, w, reorder, attrs, n, dt, bf = _rnn_common(v, 3, [1, 0, 2])
    r = g.unsqueeze(reorder(1), [0])
    b = g.unsqueeze(g.node("Concat", [reorder(2), reorder(3)], axis=0), [0])
    y, yh = g.node("GRU", [x, w, r, b, "", g.unsqueeze(v.x(4), [0])], outputs=2, linear_before_reset=1,
                   **attrs)
    _rnn_outputs(v, g, y, [yh], bf)


@rule("pd_op.rnn_sequence")
def _rnn_sequence(v):
    act = v.attrs.get("activation", "tanh")
    g, x, w, reorder, attrs, n, dt, bf = _rnn_common(v, 1, [0])
    r = g.unsqueeze(v.x(1), [0])
    b = g.unsqueeze(g.node("Concat", [v.x(2), g.const(np.zeros([n], dt), "rnn_rb")], axis=0), [0])
    y, yh = g.node("RNN", [x, w, r, b, "", g.unsqueeze(v.x(3), [0])], outputs=2,
                   activations=["Relu" if act == "relu" else "Tanh"], **attrs)
    _rnn_outputs(v, g, y, [yh], bf)
