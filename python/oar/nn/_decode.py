"""paddle.nn.BeamSearchDecoder and paddle.nn.dynamic_decode (Paddle's Decoder protocol:
initialize(inits) -> (inputs, states, finished); step(time, inputs, states) -> (outputs,
next_states, next_inputs, finished); finalize(outputs, final_states, lengths)).

Beam search keeps, per batch entry, `beam_size` hypotheses with their summed log-probs. A
finished beam puts all its mass on `end_token` (log-prob 0 there, -1e9 elsewhere), so it is
carried unchanged with its score; lengths grow only for unfinished beams. `finalize` rebuilds
the full sequences from the per-step ids and parent beams by gather_tree."""
from collections import namedtuple

from .._C import Tensor
from .._creation import _full_on

__all__ = ["BeamSearchDecoder", "dynamic_decode"]

_KINF = 1e9  # Paddle's "minus infinity" for beams that must not be chosen (finite: no NaNs)


def _map(fn, *structs):
    """fn applied to the tensors of equally nested lists/tuples/namedtuples/dicts."""
    s = structs[0]
    if isinstance(s, dict):
        return {k: _map(fn, *(x[k] for x in structs)) for k in s}
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*(_map(fn, *xs) for xs in zip(*structs)))
    if isinstance(s, (list, tuple)):
        return type(s)(_map(fn, *xs) for xs in zip(*structs))
    return fn(*structs)


def _first_tensor(s):
    if isinstance(s, Tensor):
        return s
    items = s.values() if isinstance(s, dict) else s if isinstance(s, (list, tuple)) else ()
    for v in items:
        t = _first_tensor(v)
        if t is not None:
            return t
    return None


class Decoder:
    """The protocol dynamic_decode drives (Paddle's paddle.nn.decode.Decoder)."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over a cell's outputs: each step scores every (beam, token) extension by
    its summed log-softmax and keeps the best `beam_size` per batch entry."""
    OutputWrapper = namedtuple("OutputWrapper", "scores predicted_ids parent_ids")
    StateWrapper = namedtuple("StateWrapper", "cell_states log_probs finished lengths")

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None,
                 output_fn=None):
        op = "BeamSearchDecoder"
        for n, v in (("start_token", start_token), ("end_token", end_token)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{op}: {n} must be a non-negative int token id, got {v!r}")
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size <= 0:
            raise ValueError(f"{op}: beam_size must be a positive int, got {beam_size!r}")
        if not callable(cell):
            raise TypeError(f"{op}: cell must be a callable RNN cell, got {type(cell).__name__}")
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = start_token
        self.end_token = end_token
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """[batch, ...] -> [batch * beam_size, ...], each entry repeated beam_size times."""
        import oar
        if not isinstance(x, Tensor) or x.ndim == 0:
            raise ValueError("tile_beam_merge_with_batch: x must be a Tensor of shape [batch, ...]")
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size <= 0:
            raise ValueError(f"tile_beam_merge_with_batch: beam_size must be a positive int, "
                             f"got {beam_size!r}")
        return oar.repeat_interleave(x, beam_size, axis=0)

    def _split(self, x):
        return x.reshape([-1, self.beam_size, *x.shape[1:]])

    def _merge(self, x):
        return x.reshape([-1, *x.shape[2:]])

    def _expand(self, x):
        import oar
        return oar.repeat_interleave(x.unsqueeze(1), self.beam_size, axis=1)

    def _gather(self, x, idx):
        """x [batch, beam, ...] reordered along beams by idx [batch, beam]."""
        import oar
        full = idx.reshape([*idx.shape, *([1] * (x.ndim - 2))])
        return oar.take_along_axis(x, full.expand([*idx.shape, *x.shape[2:]]), axis=1)

    def initialize(self, initial_cell_states):
        import oar
        first = _first_tensor(initial_cell_states)
        if first is None or first.ndim == 0:
            raise ValueError("BeamSearchDecoder.initialize: initial_cell_states must hold "
                             "tensors of shape [batch, ...]")
        b = first.shape[0]
        dtype = oar.get_default_dtype()
        cell_states = _map(self._expand, initial_cell_states)
        place = first.place  # the beams live beside the cell's states
        ids = _full_on(place, [b, self.beam_size], self.start_token, "int64")
        row = [0.0] + [-_KINF] * (self.beam_size - 1)  # only beam 0 is alive at the start
        log_probs = oar.to_tensor([row] * b, dtype, place).reshape([b, self.beam_size])
        finished = _full_on(place, [b, self.beam_size], False, "bool")
        lengths = _full_on(place, [b, self.beam_size], 0, "int64")
        inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        import oar
        vocab = logits.shape[-1]
        if not 0 <= self.end_token < vocab:
            raise ValueError(f"BeamSearchDecoder: end_token {self.end_token} is not a token of "
                             f"the cell's {vocab}-way output")
        step_lp = oar.nn.functional.log_softmax(logits, axis=-1)
        only_end = _full_on(step_lp.place, [vocab], -_KINF, step_lp.dtype)
        only_end[self.end_token] = 0.0
        fin = beam_state.finished.unsqueeze(-1)
        step_lp = oar.where(fin, only_end.expand(step_lp.shape), step_lp)
        total = step_lp + beam_state.log_probs.astype(step_lp.dtype).unsqueeze(-1)
        flat = total.reshape([-1, self.beam_size * vocab])
        scores, top = oar.topk(flat, self.beam_size, axis=-1)
        parents = top // vocab
        tokens = top % vocab
        cell_states = _map(lambda s: self._gather(s, parents), next_cell_states)
        finished = self._gather(beam_state.finished, parents)
        lengths = self._gather(beam_state.lengths, parents)
        lengths = lengths + oar.logical_not(finished).astype(lengths.dtype)
        finished = oar.logical_or(finished, tokens == self.end_token)
        out = self.OutputWrapper(scores, tokens, parents)
        return out, self.StateWrapper(cell_states, scores, finished, lengths)

    def step(self, time, inputs, states, **kwargs):
        inputs = _map(self._merge, inputs)
        cell_states = _map(self._merge, states.cell_states)
        outputs, next_states = self.cell(inputs, cell_states, **kwargs)
        outputs = _map(self._split, outputs)
        next_states = _map(self._split, next_states)
        if self.output_fn is not None:
            outputs = self.output_fn(outputs)
        out, state = self._beam_search_step(time, outputs, next_states, states)
        ids = out.predicted_ids
        ids.stop_gradient = True
        next_inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        return out, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        from .functional import gather_tree
        ids = gather_tree(outputs.predicted_ids, outputs.parent_ids)
        return ids.astype(outputs.predicted_ids.dtype), final_states

    @property
    def tracks_own_finished(self):
        return True


def _step_limit(max_step_num):
    if max_step_num is None:
        return None
    if isinstance(max_step_num, bool) or not isinstance(max_step_num, int) or max_step_num < 0:
        raise ValueError(f"dynamic_decode: max_step_num must be None or an int >= 0, got "
                         f"{max_step_num!r}")
    return max_step_num


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False,
                   impute_finished=False, is_test=False, return_length=False, **kwargs):
    """Runs decoder.step until every entry is finished or max_step_num + 1 steps have run
    (Paddle's count); outputs are stacked over time ([batch, time, ...] unless
    output_time_major). Without max_step_num the loop ends only when the decoder finishes."""
    import oar
    if not all(hasattr(decoder, m) for m in ("initialize", "step")):
        raise TypeError(f"dynamic_decode: decoder must implement initialize and step, got "
                        f"{type(decoder).__name__}")
    limit = _step_limit(max_step_num)
    inputs, states, finished = decoder.initialize(inits)
    lengths = _full_on(finished.place, finished.shape, 0, "int64")
    steps = []
    t = 0
    own = getattr(decoder, "tracks_own_finished", False)
    while not bool(oar.all(finished)):
        time = _full_on(finished.place, [1], t, "int64")
        out, next_states, next_inputs, next_finished = decoder.step(time, inputs, states, **kwargs)
        if own:
            lengths = getattr(next_states, "lengths", lengths)
        else:
            next_finished = oar.logical_or(next_finished, finished)
            lengths = lengths + oar.logical_not(finished).astype("int64")
            if impute_finished:  # finished entries keep their last state
                def keep(old, new, done=finished):
                    m = done.reshape([done.shape[0], *([1] * (new.ndim - 1))])
                    return oar.where(m, old, new)
                next_states = _map(keep, states, next_states)
        steps.append(out)
        inputs, states, finished = next_inputs, next_states, next_finished
        t += 1
        if limit is not None and t > limit:
            break
    if not steps:
        raise ValueError("dynamic_decode: every entry was finished before the first step; "
                         "there is nothing to decode")
    outputs = _map(lambda *xs: oar.stack(list(xs), axis=0), *steps)
    try:
        outputs, states = decoder.finalize(outputs, states, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        outputs = _map(lambda x: x.transpose([1, 0, *range(2, x.ndim)]), outputs)
    return (outputs, states, lengths) if return_length else (outputs, states)
