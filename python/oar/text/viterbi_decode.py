"""paddle.text.viterbi_decode / ViterbiDecoder: the highest scoring tag sequence of a linear-
chain CRF (emission potentials plus tag-transition scores), per sequence length."""
import numpy as np

import oar
from oar.nn import Layer

__all__ = ["viterbi_decode", "ViterbiDecoder"]


def _check(potentials, transition_params, lengths):
    op = "viterbi_decode"
    for arg, t, nd in (("potentials", potentials, 3), ("transition_params", transition_params, 2),
                       ("lengths", lengths, 1)):
        if not isinstance(t, oar.Tensor) or t.ndim != nd:
            raise ValueError(f"{op}: {arg} must be a {nd}-D Tensor, got "
                             f"{getattr(t, 'shape', type(t).__name__)}")
    b, s, n = potentials.shape
    if list(transition_params.shape) != [n, n]:
        raise ValueError(f"{op}: transition_params must be [num_tags, num_tags] = [{n}, {n}], "
                         f"got {list(transition_params.shape)}")
    if lengths.shape[0] != b:
        raise ValueError(f"{op}: lengths must have one entry per batch row ({b}), got "
                         f"{lengths.shape[0]}")
    if lengths.dtype.name not in ("int32", "int64"):
        raise TypeError(f"{op}: lengths must be int32 or int64, got {lengths.dtype.name}")
    if potentials.dtype.name not in ("float32", "float64"):
        raise TypeError(f"{op}: potentials must be float32 or float64, got {potentials.dtype.name}")
    lens = lengths.numpy().astype(np.int64)
    if lens.size and (lens.min() < 0 or lens.max() > s):
        raise ValueError(f"{op}: lengths must lie in [0, sequence_length = {s}], got "
                         f"[{int(lens.min())}, {int(lens.max())}]")
    return lens


def viterbi_decode(potentials, transition_params, lengths, include_bos_eos_tag=True, name=None):
    """(scores [B], paths [B, max(lengths)]): the best tag path of each sequence over its first
    lengths[b] steps and its score (emissions plus transitions). With include_bos_eos_tag the
    last tag is the start tag (its row of transitions scores the first tag) and the second to
    last the stop tag (its column scores the last tag). Positions past a sequence's length hold
    0. A length of 0 scores 0 with an empty path."""
    lens = _check(potentials, transition_params, lengths)
    pot = potentials.numpy().astype(np.float64)
    trans = transition_params.numpy().astype(np.float64)
    b, _, n = pot.shape
    width = int(lens.max()) if lens.size else 0
    scores = np.zeros(b)
    paths = np.zeros((b, width), dtype=np.int64)
    for i in range(b):
        m = int(lens[i])
        if m == 0:
            continue
        alpha = pot[i, 0] + (trans[n - 1] if include_bos_eos_tag else 0.0)
        back = np.zeros((m, n), dtype=np.int64)
        for t in range(1, m):
            cand = alpha[:, None] + trans  # [from, to]
            back[t] = cand.argmax(axis=0)
            alpha = cand.max(axis=0) + pot[i, t]
        if include_bos_eos_tag:
            alpha = alpha + trans[:, n - 2]
        last = int(alpha.argmax())
        scores[i] = alpha[last]
        for t in range(m - 1, -1, -1):
            paths[i, t] = last
            last = int(back[t, last])
    return (oar.to_tensor(scores, dtype=potentials.dtype, place=potentials.place),
            oar.to_tensor(paths, place=potentials.place))


class ViterbiDecoder(Layer):
    """viterbi_decode with a fixed transition matrix: decoder(potentials, lengths)."""

    def __init__(self, transitions, include_bos_eos_tag=True, name=None):
        super().__init__()
        if not isinstance(transitions, oar.Tensor) or transitions.ndim != 2:
            raise ValueError(f"ViterbiDecoder: transitions must be a 2-D Tensor, got "
                             f"{getattr(transitions, 'shape', type(transitions).__name__)}")
        self.transitions = transitions
        self.include_bos_eos_tag = include_bos_eos_tag

    def forward(self, potentials, lengths):
        return viterbi_decode(potentials, self.transitions, lengths, self.include_bos_eos_tag)
