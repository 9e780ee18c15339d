"""BeamSearchDecoder and dynamic_decode (python/oar/nn/decode.py): a beam as wide as every
sequence finds the exhaustive search's best one and its score; beam 1 is greedy decoding;
finished beams stay finished; Paddle's docstring example; bad arguments."""
import itertools

import numpy as np
import pytest

import oar
from oar.nn import BeamSearchDecoder, dynamic_decode

V, END, START = 4, 1, 0
TABLE = np.random.default_rng(0).standard_normal((V, V))  # logits of the next token by previous


class TableCell:
    """A cell whose logits depend only on the previous token (its input)."""

    def __call__(self, inputs, states):
        logits = oar.to_tensor(TABLE)[inputs.astype("int64")]
        return logits, states


def np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


LP = np_log_softmax(TABLE)


def score(seq):
    total, prev = 0.0, START
    for tok in seq:
        if prev == END:  # a finished sequence only repeats the end token, at no cost
            if tok != END:
                return -np.inf
            continue
        total += LP[prev, tok]
        prev = tok
    return total


def decode(beam, steps, batch=2):
    dec = BeamSearchDecoder(TableCell(), START, END, beam)
    init = oar.zeros([batch, 1])
    return dynamic_decode(dec, init, max_step_num=steps - 1, return_length=True)


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_wide_beam_is_exhaustive_search(steps):
    (ids, states, lengths) = decode(V ** steps, steps)
    seqs = list(itertools.product(range(V), repeat=steps))
    scores = np.array([score(s) for s in seqs])
    best = seqs[int(np.argmax(scores))]
    got = ids.numpy()  # [batch, time, beam]
    assert got.shape[1] <= steps
    top = tuple(got[0, :, 0])
    assert top == best[:len(top)], (top, best)
    np.testing.assert_allclose(states.log_probs.numpy()[0, 0], scores.max(), rtol=1e-6, atol=1e-6)
    want_len = best.index(END) + 1 if END in best else steps
    assert lengths.numpy()[0, 0] == want_len


def test_beam_one_is_greedy():
    ids, _ = decode(1, 5, batch=1)[:2]
    prev, want = START, []
    for _ in range(ids.shape[1]):
        tok = END if prev == END else int(np.argmax(LP[prev]))
        want.append(tok)
        prev = tok
    assert ids.numpy()[0, :, 0].tolist() == want


def test_paddle_example_and_time_major():
    emb, out = oar.nn.Embedding(100, 32), oar.nn.Linear(32, 32)
    cell = oar.nn.GRUCell(input_size=32, hidden_size=32)
    dec = BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=4, embedding_fn=emb,
                            output_fn=out)
    enc = oar.ones((4, 8, 32))
    ids, states = dynamic_decode(dec, cell.get_initial_states(enc), max_step_num=10)
    assert ids.shape[0] == 4 and ids.shape[2] == 4 and ids.shape[1] <= 11
    assert list(states.log_probs.shape) == [4, 4]
    tm, _ = dynamic_decode(dec, cell.get_initial_states(enc), max_step_num=2,
                           output_time_major=True)
    assert tm.shape[1:] == [4, 4]
    tiled = BeamSearchDecoder.tile_beam_merge_with_batch(oar.to_tensor([[1.0], [2.0]]), 3)
    assert tiled.numpy().ravel().tolist() == [1, 1, 1, 2, 2, 2]


def test_bad_arguments():
    with pytest.raises(ValueError, match="BeamSearchDecoder: beam_size"):
        BeamSearchDecoder(TableCell(), 0, 1, 0)
    with pytest.raises(ValueError, match="BeamSearchDecoder: end_token"):
        BeamSearchDecoder(TableCell(), 0, -1, 2)
    with pytest.raises(TypeError, match="dynamic_decode: decoder"):
        dynamic_decode(object(), None)
    dec = BeamSearchDecoder(TableCell(), 0, 1, 2)
    with pytest.raises(ValueError, match="dynamic_decode: max_step_num"):
        dynamic_decode(dec, oar.zeros([1, 1]), max_step_num=-1)
    with pytest.raises(ValueError, match="BeamSearchDecoder: end_token 9"):
        dynamic_decode(BeamSearchDecoder(TableCell(), 0, 9, 2), oar.zeros([1, 1]), max_step_num=1)
