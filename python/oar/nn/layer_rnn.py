"""Recurrent layers with Paddle 3.x's constructors, gate orders and parameter names:
SimpleRNNCell, LSTMCell, GRUCell, RNN, BiRNN, SimpleRNN, LSTM, GRU.

Composed of differentiable ops (matmul, sigmoid, tanh, split, stack...). The input
projection x @ W_ih^T + b_ih of every time step is one matmul over the whole sequence;
each step then only multiplies the hidden state.

Gate orders (as Paddle): LSTM [i, f, g, o] (c = f*c + i*tanh(g), h = o*tanh(c)); GRU
[r, z, c] (c = tanh(x_c + r*(h W_hc + b_hc)), h = (h - c)*z + c). With
sequence_length, a sequence's states stop changing after its length and its outputs
there are 0.
"""
import math

import numpy as np

from .. import _C, _trace_state
from .._dtype import get_default_dtype
from . import functional as F
from . import initializer as init
from ._errors import check_count, check_fits
from .layer import Layer, LayerList

_ops = _C.ops

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "BiRNN", "SimpleRNN", "LSTM", "GRU"]


class RNNCellBase(Layer):
    """A cell maps (inputs [B, input_size], states) -> (outputs, new_states)."""

    _gates = 1

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        cls = type(self).__name__
        if not isinstance(input_size, int) or input_size <= 0:
            raise ValueError(f"{cls}: input_size must be a positive int, got {input_size!r}")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"{cls}: hidden_size must be a positive int, got {hidden_size!r}")
        self.input_size, self.hidden_size = input_size, hidden_size
        std = 1.0 / math.sqrt(hidden_size)
        u = init.Uniform(-std, std)
        g = self._gates * hidden_size
        self.weight_ih = self.create_parameter([g, input_size], weight_ih_attr,
                                               default_initializer=u)
        self.weight_hh = self.create_parameter([g, hidden_size], weight_hh_attr,
                                               default_initializer=u)
        self.bias_ih = self.create_parameter([g], bias_ih_attr, is_bias=True,
                                             default_initializer=u)
        self.bias_hh = self.create_parameter([g], bias_hh_attr, is_bias=True,
                                             default_initializer=u)

    # x @ W_ih^T + b_ih for any leading shape (one matmul for a whole sequence).
    def _project_inputs(self, x, bias=True):
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: inputs have {x.shape[-1]} features, "
                             f"expected input_size={self.input_size}")
        y = _ops.matmul(x, self.weight_ih, False, True)
        return y if self.bias_ih is None or not bias else y + self.bias_ih

    def _project_hidden(self, h):
        y = _ops.matmul(h, self.weight_hh, False, True)
        return y if self.bias_hh is None else y + self.bias_hh

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0,
                           batch_dim_idx=0):
        """States filled with init_value, batch size taken from batch_ref's dim
        batch_dim_idx. Built from batch_ref with shape-agnostic ops (no size read in
        Python), so a converted program keeps a dynamic batch dynamic."""
        dtype = dtype or batch_ref.dtype
        shapes = shape if shape is not None else self.state_shape
        rank = batch_ref.ndim
        if not -rank <= batch_dim_idx < rank:
            raise ValueError(f"{type(self).__name__}.get_initial_states: batch_dim_idx {batch_dim_idx} is out "
                             f"of range for batch_ref of shape {list(batch_ref.shape)}")
        bd = batch_dim_idx % rank
        others = [d for d in range(rank) if d != bd]
        ref = _ops.strided_slice_view(batch_ref, others, [0] * len(others), [1] * len(others),
                                         [1] * len(others)) if others else batch_ref
        ref = _ops.reshape(ref, [-1])  # [batch]

        def one(s):
            s = [int(d) for d in s]
            base = _ops.full_like(_ops.reshape(ref, [-1] + [1] * len(s)), init_value, dtype)
            return _ops.expand(base, [-1] + s)
        if isinstance(shapes[0], (list, tuple)):
            return tuple(one(s) for s in shapes)
        return one(shapes)

    def forward(self, inputs, states=None):
        if states is None:
            states = self.get_initial_states(inputs)
        return self._step(self._project_inputs(inputs), states)


class SimpleRNNCell(RNNCellBase):
    """h = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act 'tanh' or 'relu'."""

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        if activation not in ("tanh", "relu"):
            raise ValueError(f"SimpleRNNCell: activation must be 'tanh' or 'relu', got "
                             f"{activation!r}")
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr)
        self.activation = activation
        self._act = _ops.tanh if activation == "tanh" else _ops.relu

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def _step(self, xp, h):
        h = self._act(xp + self._project_hidden(h))
        return h, h


class LSTMCell(RNNCellBase):
    """LSTM cell, gates [i, f, g, o]; states (h, c)."""

    _gates = 4

    @property
    def state_shape(self):
        return ((self.hidden_size,), (self.hidden_size,))

    def _step(self, xp, states):
        h, c = states
        gates = xp + self._project_hidden(h)
        i, f, g, o = _ops._split_with_num(gates, 4, -1)
        c = _ops.sigmoid(f) * c + _ops.sigmoid(i) * _ops.tanh(g)
        h = _ops.sigmoid(o) * _ops.tanh(c)
        return h, (h, c)


class GRUCell(RNNCellBase):
    """GRU cell, gates [r, z, c]."""

    _gates = 3

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def _step(self, xp, h):
        hp = self._project_hidden(h)
        x_r, x_z, x_c = _ops._split_with_num(xp, 3, -1)
        h_r, h_z, h_c = _ops._split_with_num(hp, 3, -1)
        r = _ops.sigmoid(x_r + h_r)
        z = _ops.sigmoid(x_z + h_z)
        c = _ops.tanh(x_c + r * h_c)
        h = (h - c) * z + c
        return h, h


def _bias(cell, which, xw):
    """The cell's bias `which` (b_ih, b_hh or their sum), zeros for a cell without it."""
    parts = [b for b in ((cell.bias_ih, cell.bias_hh) if which == "sum" else (getattr(cell, which),))
             if b is not None]
    if not parts:
        return _ops.full([xw.shape[-1]], 0.0, xw.dtype, xw.place)
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


def _lstm_fused(xw, cell, states, batch_first, reverse):
    h0, c0 = states
    out, h, c, _, _ = _ops._lstm_sequence(xw, cell.weight_hh, _bias(cell, "sum", xw), h0, c0,
                                          batch_first, reverse)
    return out, (h, c)


def _gru_fused(xw, cell, h0, batch_first, reverse):
    out, h, _ = _ops._gru_sequence(xw, cell.weight_hh, _bias(cell, "bias_ih", xw),
                                   _bias(cell, "bias_hh", xw), h0, batch_first, reverse)
    return out, h


def _simple_fused(xw, cell, h0, batch_first, reverse):
    out, h = _ops._rnn_sequence(xw, cell.weight_hh, _bias(cell, "sum", xw), h0, batch_first,
                                reverse, cell.activation)
    return out, h


# The cells that RNN runs as one fused op over the whole sequence (Notes [Fused LSTM] and
# [Fused GRU and SimpleRNN] in phi_kernels/cpu/rnn_kernels.cc): cell type -> runner.
_FUSED = {LSTMCell: _lstm_fused, GRUCell: _gru_fused, SimpleRNNCell: _simple_fused}


def _map(fn, *structs):
    if isinstance(structs[0], (tuple, list)):
        return type(structs[0])(_map(fn, *parts) for parts in zip(*structs))
    return fn(*structs)


def _step_mask(sequence_length, t, dtype):
    """[B, 1] float mask of time step t (an int or a 0-d int tensor): 1 where t < length."""
    m = _ops.greater_than(_ops.reshape(sequence_length, [-1]), t if isinstance(t, _C.Tensor) else
                          _ops.full([], int(t), sequence_length.dtype, sequence_length.place))
    return _ops.unsqueeze(_ops.cast(m, dtype), [-1])


def _dynamic_time(x):
    """True while to_static traces x and its time dim (dim 0) is dynamic."""
    tracer = _trace_state.tracer()
    return tracer is not None and tracer.is_traced(x) and tracer.dims_of(x)[0] == -1


class RNN(Layer):
    """Runs a cell over a sequence ([B, T, ...], or [T, B, ...] with time_major).
    Returns (outputs [.., T, .., hidden], final_states)."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        self.cell = cell
        if not hasattr(self.cell, "call"):
            self.cell.call = self.cell.forward
        self.is_reverse = is_reverse
        self.time_major = time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        if inputs.ndim < 2:
            raise ValueError(f"RNN: inputs must have a batch and a time dimension, got shape "
                             f"{list(inputs.shape)}")
        fast = hasattr(self.cell, "_step") and not kwargs
        if fast and sequence_length is None and inputs.ndim == 3 and type(self.cell) in _FUSED and \
                inputs.dtype.name in ("float32", "float64"):
            return self._fused(inputs, initial_states)
        x = inputs if self.time_major else _ops.transpose(
            inputs, [1, 0] + list(range(2, inputs.ndim)))
        states = initial_states
        if states is None:
            states = self.cell.get_initial_states(x, batch_dim_idx=1)
        if sequence_length is not None:
            if not isinstance(sequence_length, _C.Tensor):  # once, not per step
                sequence_length = _C.to_tensor(np.asarray(sequence_length, dtype=np.int64), None, x.place, True)
            n = sequence_length.shape[0]
            if n != x.shape[1]:
                raise ValueError(f"RNN: sequence_length has {n} entries, the batch has {x.shape[1]}")
        if fast and _dynamic_time(x):
            outputs, states = self._time_loop(x, self.cell._project_inputs(x), states,
                                              sequence_length)
        else:
            xp = self.cell._project_inputs(x) if fast else None  # [T, B, gates*hidden]
            outputs, states = self._unrolled(x, xp, states, sequence_length, fast, kwargs)
        if not self.time_major:
            outputs = _ops.transpose(outputs, [1, 0] + list(range(2, outputs.ndim)))
        return outputs, states

    def _fused(self, inputs, states):
        """The whole sequence in one fused op (Note [Fused LSTM] in
        phi_kernels/cpu/rnn_kernels.cc): the same numbers as the unrolled cell, a fraction of
        its ops. The input projection is one matmul on the caller's layout (batch-first or
        time-major, no transposes); both biases are added by the op, which also walks the
        steps in reverse for is_reverse (no flips)."""
        batch_first = not self.time_major
        if inputs.shape[1 if batch_first else 0] == 0:
            raise ValueError("RNN: inputs have no time steps")
        cell = self.cell
        if states is None:
            states = cell.get_initial_states(inputs, batch_dim_idx=0 if batch_first else 1)
        xw = cell._project_inputs(inputs, bias=False)
        return _FUSED[type(cell)](xw, cell, states, batch_first, self.is_reverse)

    def _unrolled(self, x, xp, states, sequence_length, fast, kwargs):
        steps = x.shape[0]
        if steps == 0:
            raise ValueError("RNN: inputs have no time steps")
        order = range(steps - 1, -1, -1) if self.is_reverse else range(steps)
        outs = [None] * steps
        for t in order:
            if fast:
                out, new_states = self.cell._step(xp[t], states)
            else:
                out, new_states = self.cell(x[t], states, **kwargs)
            if sequence_length is not None:
                m = _step_mask(sequence_length, t, x.dtype)
                new_states = _map(lambda s, n: n * m + s * (1.0 - m), states, new_states)
                out = out * m
            states = new_states
            outs[t] = out
        return _ops.stack(outs, 0), states

    def _time_loop(self, x, xp, states, sequence_length):
        """The time steps as one while_loop (cf.while) when to_static traces a dynamic
        sequence length: the step index is a loop variable, each step reads its row of
        the projected inputs and writes its row of the outputs (scatter)."""
        rank = x.ndim
        ones = _ops.full_like(_ops.strided_slice_view(x, list(range(1, rank)), [0] * (rank - 1), [1] * (rank - 1),
                                                     [1] * (rank - 1)), 1, "int64")
        n = _ops.sum(ones)  # the number of time steps, as a 0-d tensor
        hidden = self.cell.hidden_size
        buf = _ops.expand(_ops.full_like(_ops.strided_slice_view(x, [rank - 1], [0], [1], [1]), 0.0, x.dtype),
                          [-1] * (rank - 1) + [hidden])
        flat = list(states) if isinstance(states, (tuple, list)) else [states]
        packed = isinstance(states, (tuple, list))
        t0 = _ops.subtract(n, _ops.full([], 1, "int64", n.place)) if self.is_reverse else \
            _ops.full([], 0, "int64", n.place)

        def cond(t, *rest):
            return t >= 0 if self.is_reverse else t < n

        def body(t, *rest):
            cur, out_buf = list(rest[:-1]), rest[-1]
            st = tuple(cur) if packed else cur[0]
            idx = _ops.reshape(t, [1])
            out, new = self.cell._step(_ops.squeeze(_ops.index_select(xp, idx, 0), [0]), st)
            new = list(new) if packed else [new]
            if sequence_length is not None:
                m = _step_mask(sequence_length, t, x.dtype)
                new = [a * m + b * (1.0 - m) for a, b in zip(new, cur)]
                out = out * m
            out_buf = _ops.scatter(out_buf, idx, _ops.unsqueeze(out, [0]), True)
            step = -1 if self.is_reverse else 1
            return [t + step] + new + [out_buf]

        res = _trace_state.while_loop(cond, body, [t0] + flat + [buf])  # oar.static.nn.while_loop
        final = res[1:-1]
        return res[-1], (tuple(final) if packed else final[0])


class BiRNN(Layer):
    """A forward and a backward RNN over the same inputs; outputs concatenated on the
    last axis, final states (fw_states, bw_states)."""

    def __init__(self, cell_fw, cell_bw, time_major=False):
        super().__init__()
        self.cell_fw, self.cell_bw = cell_fw, cell_bw
        if cell_fw.input_size != cell_bw.input_size:
            raise ValueError(f"BiRNN: cell_fw and cell_bw must have the same input_size, got "
                             f"{cell_fw.input_size} and {cell_bw.input_size}")
        self.time_major = time_major
        # Runners kept outside the sublayers: the parameters stay under cell_fw/cell_bw
        # (Paddle's names).
        object.__setattr__(self, "_runners", (RNN(cell_fw, False, time_major),
                                              RNN(cell_bw, True, time_major)))

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        fw_s, bw_s = (None, None) if initial_states is None else initial_states
        fw, bw = self._runners
        out_fw, st_fw = fw(inputs, fw_s, sequence_length, **kwargs)
        out_bw, st_bw = bw(inputs, bw_s, sequence_length, **kwargs)
        return _ops.concat([out_fw, out_bw], -1), (st_fw, st_bw)


class RNNBase(LayerList):
    """Stacked (and optionally bidirectional) recurrent layers: SimpleRNN, LSTM, GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, **cell_kwargs):
        super().__init__()
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "SimpleRNN")
        if direction not in ("forward", "bidirect", "bidirectional"):
            raise ValueError(f"{name}: direction must be 'forward', 'bidirect' or "
                             f"'bidirectional', got {direction!r}")
        check_count(num_layers, name, "num_layers")
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            check_count(v, name, arg)
        # The layers are built one at a time in a loop over num_layers: their parameters
        # (default dtype) are checked against the machine's memory before the first.
        gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hidden_size
        dirs = 1 if direction == "forward" else 2
        per_layer = [gates * ((input_size if i == 0 else hidden_size * dirs) + hidden_size + 2)
                     for i in (0, 1)]
        itemsize = {"float64": 8, "float16": 2, "bfloat16": 2}.get(str(get_default_dtype()), 4)
        check_fits(name, f"num_layers={num_layers} layers of hidden_size={hidden_size}",
                   dirs * itemsize * (per_layer[0] + (num_layers - 1) * per_layer[1]))
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout must be in [0, 1], got {dropout}")
        self.mode = mode
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.direction = num_layers, direction
        self.num_directions = 2 if direction != "forward" else 1
        self.time_major, self.dropout = time_major, dropout
        self.state_components = 2 if mode == "LSTM" else 1
        cell_cls = {"LSTM": LSTMCell, "GRU": GRUCell}.get(mode, SimpleRNNCell)
        attrs = (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)

        def cell(in_size):
            return cell_cls(in_size, hidden_size, *(() if mode in ("LSTM", "GRU") else
                                                     (cell_kwargs.get("activation", "tanh"),)),
                            *attrs)
        for i in range(num_layers):
            in_size = input_size if i == 0 else hidden_size * self.num_directions
            if self.num_directions == 1:
                self.append(RNN(cell(in_size), False, time_major))
            else:
                self.append(BiRNN(cell(in_size), cell(in_size), time_major))
        # Paddle's flat parameter names: weight_ih_l{k}{_reverse}, ...
        for k, layer in enumerate(self):
            cells = [layer.cell] if self.num_directions == 1 else [layer.cell_fw, layer.cell_bw]
            for d, c in enumerate(cells):
                suffix = "_reverse" if d == 1 else ""
                for pname in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    p = getattr(c, pname)
                    if p is not None:
                        self.add_parameter(f"{pname}_l{k}{suffix}", p)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def _split_states(self, states):
        """[L*D, B, H] (or a tuple of them for LSTM) -> per layer, per direction."""
        n = self.num_layers * self.num_directions
        comps = states if self.state_components == 2 else (states,)
        for s in comps:
            if s.ndim != 3 or s.shape[0] != n or s.shape[2] != self.hidden_size:
                raise ValueError(f"{type(self).__name__}: initial state of shape {list(s.shape)} "
                                 f"should be [{n}, batch_size, {self.hidden_size}]")
        parts = [_ops.unstack(s, 0, n) for s in comps]
        out = []
        for k in range(self.num_layers):
            per_dir = []
            for d in range(self.num_directions):
                idx = k * self.num_directions + d
                per_dir.append(tuple(p[idx] for p in parts) if self.state_components == 2
                               else parts[0][idx])
            out.append(per_dir[0] if self.num_directions == 1 else tuple(per_dir))
        return out

    def forward(self, inputs, initial_states=None, sequence_length=None):
        if inputs.ndim != 3 or inputs.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: inputs must be [batch, time, "
                             f"{self.input_size}] (or time-major), got shape {list(inputs.shape)}")
        states = [None] * self.num_layers if initial_states is None else \
            self._split_states(initial_states)
        x = inputs
        finals = []
        for k, layer in enumerate(self):
            if k > 0 and self.dropout > 0.0:
                x = F.dropout(x, self.dropout, training=self.training, mode="upscale_in_train")
            x, st = layer(x, states[k], sequence_length)
            finals.extend([st] if self.num_directions == 1 else list(st))
        if self.state_components == 2:
            final = tuple(_ops.stack([s[i] for s in finals], 0) for i in range(2))
        else:
            final = _ops.stack(finals, 0)
        return x, final

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.direction != "forward":
            s += f", direction={self.direction}"
        return s


class SimpleRNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, activation="tanh", weight_ih_attr=None,
                 weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__("RNN_" + activation.upper(), input_size, hidden_size, num_layers,
                         direction, time_major, dropout, weight_ih_attr, weight_hh_attr,
                         bias_ih_attr, bias_hh_attr, activation=activation)
        self.activation = activation


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, proj_size=0, name=None):
        if proj_size:
            raise NotImplementedError("LSTM: proj_size > 0 is not supported yet")
        super().__init__("LSTM", input_size, hidden_size, num_layers, direction, time_major,
                         dropout, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward",
                 time_major=False, dropout=0.0, weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, direction, time_major,
                         dropout, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)
