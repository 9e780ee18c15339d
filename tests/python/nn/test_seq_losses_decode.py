"""rnnt_loss / RNNTLoss against a float64 NumPy sum over every RNN-T alignment (and the direct
alpha recursion), FastEmit's gradient rule, finite-difference gradients; edit_distance against
a plain Levenshtein; class_center_sample; flash_attention against float64 NumPy attention;
BeamSearchDecoder + dynamic_decode against an exhaustive NumPy beam search; bad inputs."""
import itertools

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import OpCase, case_id, check_case, tensor

I32 = lambda a: oar.to_tensor(np.asarray(a, np.int32))  # noqa: E731


# ---------------------------------------------------------------- rnnt_loss
def np_rnnt_paths(lp, labels, t_len, u_len, blank=0):
    """-log of the sum over every alignment: a path is the order of the T blanks and U labels
    (the last move is the blank that leaves frame T-1)."""
    out = []
    for k in range(lp.shape[0]):
        t_n, u_n, lab = t_len[k], u_len[k], labels[k]
        total = 0.0
        for emits in itertools.combinations(range(t_n - 1 + u_n), u_n):
            t = u = 0
            s = 0.0
            for step in range(t_n - 1 + u_n):
                if step in emits:
                    s += lp[k, t, u, lab[u]]
                    u += 1
                else:
                    s += lp[k, t, u, blank]
                    t += 1
            s += lp[k, t_n - 1, u_n, blank]
            total += np.exp(s)
        out.append(-np.log(total))
    return np.array(out)


LAB = np.array([[1, 2, 1], [2, 2, 0], [3, 0, 0]])
T_LEN, U_LEN = [4, 3, 2], [3, 2, 1]


def rnnt(x, *rest, **kw):
    if rest:  # bad inputs pass all four tensors
        return F.rnnt_loss(x, *rest, **kw)
    kw.setdefault("fastemit_lambda", 0.0)
    return F.rnnt_loss(x, I32(LAB), I32(T_LEN), I32(U_LEN), **kw)


def _lsm(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


RNNT_CASES = [
    OpCase("rnnt_loss", rnnt,
           lambda x, **kw: np_rnnt_paths(x, LAB, T_LEN, U_LEN), inputs=[(3, 4, 4, 5)],
           attrs={"reduction": "none"}, bad_inputs=[((tensor(np.ones((3, 4, 4))), I32(LAB), I32(T_LEN), I32(U_LEN)),
                        ValueError, "[B, Tmax, Umax+1, D]"),
                       ((tensor(np.ones((3, 4, 3, 5))), I32(LAB), I32(T_LEN), I32(U_LEN)),
                        ValueError, "Umax + 1"),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB + 5), I32(T_LEN), I32(U_LEN)),
                        ValueError, "class indices"),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB), I32([5, 1, 1]), I32(U_LEN)),
                        ValueError, "lengths out of range"),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB), I32([0, 1, 1]), I32(U_LEN)),
                        ValueError, "lengths out of range"),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB), I32(T_LEN), I32([1, 1])),
                        ValueError, "label_lengths"),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB), I32(T_LEN), I32(U_LEN)),
                        ValueError, "blank", {"blank": 5}),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB), I32(T_LEN), I32(U_LEN)),
                        ValueError, "reduction", {"reduction": "avg"}),
                       ((tensor(np.ones((3, 4, 4, 5))), I32(LAB), I32(T_LEN), I32(U_LEN)),
                        ValueError, "fastemit_lambda", {"fastemit_lambda": -1.0})]),
    OpCase("rnnt_loss_mean", lambda x: rnnt(F.log_softmax(x, -1)),
           lambda x: np_rnnt_paths(_lsm(x), LAB, T_LEN, U_LEN).sum() / 3,
           inputs=[(3, 4, 4, 5)], op="rnnt_loss"),
    OpCase("rnnt_loss_blank3_sum",
           lambda x: F.rnnt_loss(x, I32(np.where(LAB == 3, 4, LAB)), I32(T_LEN), I32(U_LEN),
                                 blank=3, fastemit_lambda=0.0, reduction="sum"),
           lambda x: np_rnnt_paths(x, np.where(LAB == 3, 4, LAB), T_LEN, U_LEN, 3).sum(),
           inputs=[(3, 4, 4, 5)], op="rnnt_loss"),
]


@pytest.mark.parametrize("case", RNNT_CASES, ids=case_id)
def test_rnnt_forward_grad_bad(case):
    check_case(case)


def test_rnnt_paddle_example_value_and_layer():
    acts = np.array([[[[0.1, 0.6, 0.1, 0.1, 0.1], [0.1, 0.1, 0.6, 0.1, 0.1],
                       [0.1, 0.1, 0.2, 0.8, 0.1]],
                      [[0.1, 0.6, 0.1, 0.1, 0.1], [0.1, 0.1, 0.2, 0.1, 0.1],
                       [0.7, 0.1, 0.2, 0.1, 0.1]]]])
    args = (oar.to_tensor(acts), I32([[1, 2]]), I32([2]), I32([2]))
    loss = oar.nn.RNNTLoss(reduction="sum", fastemit_lambda=0.0)(*args)
    np.testing.assert_allclose(loss.numpy(), -2.85042443558358, rtol=1e-12)
    # with normalized log-probs: warp-transducer's reference cost of this example
    lsm = oar.to_tensor(_lsm(acts))
    np.testing.assert_allclose(F.rnnt_loss(lsm, *args[1:], reduction="sum").numpy(),
                               4.495666773770733, rtol=1e-12)


def test_rnnt_fastemit_scales_label_gradient_only():
    rng = np.random.default_rng(3)
    x = oar.to_tensor(_lsm(rng.standard_normal((3, 4, 4, 5))), stop_gradient=False)
    a = F.rnnt_loss(x, I32(LAB), I32(T_LEN), I32(U_LEN), fastemit_lambda=0.0, reduction="sum")
    b = F.rnnt_loss(x, I32(LAB), I32(T_LEN), I32(U_LEN), fastemit_lambda=0.5, reduction="sum")
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14)
    ga, gb = oar.grad([a], [x])[0].numpy(), oar.grad([b], [x])[0].numpy()
    is_label = np.zeros(ga.shape, bool)
    for k in range(3):
        for u in range(U_LEN[k]):
            is_label[k, :, u, LAB[k, u]] = True
    np.testing.assert_allclose(gb[is_label], 1.5 * ga[is_label], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gb[~is_label], ga[~is_label], rtol=1e-12, atol=1e-15)
    assert np.abs(ga[is_label]).sum() > 0


def test_rnnt_empty_labels_zero_batch_and_float32():
    rng = np.random.default_rng(4)
    lp = _lsm(rng.standard_normal((2, 3, 1, 4)))
    out = F.rnnt_loss(oar.to_tensor(lp), oar.zeros([2, 0], "int32"), I32([3, 2]), I32([0, 0]),
                      reduction="none")
    want = [-lp[0, :3, 0, 0].sum(), -lp[1, :2, 0, 0].sum()]  # only blanks
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    z = F.rnnt_loss(oar.zeros([0, 2, 2, 3]), oar.zeros([0, 1], "int32"), I32([]), I32([]),
                    reduction="none")
    assert z.shape == [0]
    lp32 = _lsm(rng.standard_normal((3, 4, 4, 5))).astype(np.float32)
    got = rnnt(oar.to_tensor(lp32), reduction="none")
    assert got.dtype == oar.float32
    np.testing.assert_allclose(got.numpy(), np_rnnt_paths(lp32.astype(np.float64), LAB, T_LEN, U_LEN),
                               rtol=1e-5)


# ---------------------------------------------------------------- edit_distance
def levenshtein(a, b):
    d = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[len(b)]


def test_edit_distance_random_against_levenshtein():
    rng = np.random.default_rng(5)
    hyp, ref = rng.integers(0, 4, (30, 7)), rng.integers(0, 4, (30, 9))
    hl, rl = rng.integers(0, 8, 30), rng.integers(1, 10, 30)
    for normalized in (False, True):
        for ignored in (None, [3], [0, 2]):
            a_s = [[t for t in hyp[k, :hl[k]] if not ignored or t not in ignored] for k in range(30)]
            b_s = [[t for t in ref[k, :rl[k]] if not ignored or t not in ignored] for k in range(30)]
            args = (oar.to_tensor(hyp), oar.to_tensor(ref), normalized, ignored,
                    oar.to_tensor(hl), oar.to_tensor(rl))
            if normalized and any(not b for b in b_s):
                with pytest.raises(ValueError, match="edit_distance.*length 0"):
                    F.loss.edit_distance(*args)
                continue
            num, dist = F.loss.edit_distance(*args)
            assert num.dtype == oar.int64 and num.numpy().tolist() == [30]
            assert dist.dtype == oar.float32 and dist.shape == [30, 1]
            want = [levenshtein(a, b) / (len(b) if normalized else 1) for a, b in zip(a_s, b_s)]
            np.testing.assert_allclose(dist.numpy()[:, 0], want, rtol=1e-6)


def test_edit_distance_kitten_defaults_and_errors():
    kitten, sitting = [[10, 8, 19, 19, 4, 13, 0]], [[18, 8, 19, 19, 8, 13, 6]]
    _, d = F.loss.edit_distance(oar.to_tensor(kitten), oar.to_tensor(sitting), normalized=False)
    assert d.numpy().tolist() == [[3.0]]  # k->s, e->i (+ the final letter)
    _, d = F.loss.edit_distance(oar.to_tensor(kitten), oar.to_tensor(sitting))
    np.testing.assert_allclose(d.numpy(), [[3 / 7]], rtol=1e-6)
    _, d = F.loss.edit_distance(oar.zeros([2, 0], "int64"), oar.to_tensor([[1, 2], [3, 3]]),
                                normalized=False)
    assert d.numpy().tolist() == [[2.0], [2.0]]
    x = oar.to_tensor([[1, 2]])
    with pytest.raises(ValueError, match="edit_distance.*2-D"):
        F.loss.edit_distance(oar.to_tensor([1, 2]), x)
    with pytest.raises(ValueError, match="edit_distance.*batch size"):
        F.loss.edit_distance(x, oar.to_tensor([[1], [2]]))
    with pytest.raises(ValueError, match="edit_distance.*input_length"):
        F.loss.edit_distance(x, x, input_length=oar.to_tensor([3]), label_length=oar.to_tensor([2]))
    with pytest.raises(ValueError, match="edit_distance.*length 0"):
        F.loss.edit_distance(x, x, label_length=oar.to_tensor([0]))
    with pytest.raises(TypeError, match="edit_distance.*ignored_tokens"):
        F.loss.edit_distance(x, x, ignored_tokens=["a"])
    with pytest.raises(TypeError, match="edit_distance.*Tensor"):
        F.loss.edit_distance([[1]], x)


# ---------------------------------------------------------------- class_center_sample
def test_class_center_sample_positives_then_negatives():
    rng = np.random.default_rng(6)
    for n_cls, n_samp in ((20, 6), (50, 30), (8, 8), (1000, 10)):
        lab = rng.integers(0, n_cls, 12)
        oar.seed(7)
        remap, centers = F.class_center_sample(oar.to_tensor(lab), n_cls, n_samp)
        c, r = centers.numpy(), remap.numpy()
        pos = np.unique(lab)
        assert c.dtype == np.int64 and r.shape == (12,)
        assert len(c) == max(n_samp, len(pos)) and len(set(c.tolist())) == len(c)
        assert (c[:len(pos)] == pos).all() and ((c >= 0) & (c < n_cls)).all()
        assert (c[r] == lab).all()  # the remapped label indexes its own center
        oar.seed(7)
        assert (F.class_center_sample(oar.to_tensor(lab), n_cls, n_samp)[1].numpy() == c).all()
    x = oar.to_tensor([1, 2])
    for args, msg in (((x, 5, 6), "num_samples"), ((x, 0, 1), "num_classes"),
                      ((x, 2, 1), "in \\[0, 2\\)"), ((oar.zeros([0], "int64"), 3, 1), "empty"),
                      ((oar.zeros([2, 2], "int64"), 3, 1), "1-D")):
        with pytest.raises(ValueError, match="class_center_sample.*" + msg):
            F.class_center_sample(*args)


# ---------------------------------------------------------------- flash_attention
def np_attention(q, k, v, causal, scale=None):
    q, k, v = (np.transpose(a, (0, 2, 1, 3)) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * (scale or q.shape[-1] ** -0.5)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return np.transpose(w @ v, (0, 2, 1, 3)), w


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_numpy(causal):
    from oar.nn.functional.flash_attention import flash_attention
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 5, 3, 4)) for _ in range(3))
    want, w = np_attention(q, k, v, causal)
    for rs in (False, True):
        out, sm = flash_attention(*(oar.to_tensor(a) for a in (q, k, v)), 0.0, causal, rs)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
        assert (sm is None) if not rs else np.allclose(sm.numpy(), w, rtol=1e-12, atol=1e-14)
    out, _ = F.flash_attention.flash_attention(*(oar.to_tensor(a) for a in (q, k, v)),
                                               causal=causal, softmax_scale=0.3)
    np.testing.assert_allclose(out.numpy(), np_attention(q, k, v, causal, 0.3)[0], rtol=1e-12)
    ts = [oar.to_tensor(a, stop_gradient=False) for a in (q, k, v)]
    out, _ = F.flash_attention.flash_attention(*ts, causal=causal)
    (out * out).sum().backward()
    eps, i = 1e-6, (1, 2, 0, 3)
    qp, qm = q.copy(), q.copy()
    qp[i] += eps
    qm[i] -= eps
    num = ((np_attention(qp, k, v, causal)[0] ** 2).sum() -
           (np_attention(qm, k, v, causal)[0] ** 2).sum()) / (2 * eps)
    np.testing.assert_allclose(ts[0].grad.numpy()[i], num, rtol=1e-5)


def test_flash_attention_dropout_and_errors():
    from oar.nn.functional.flash_attention import flash_attention
    q = oar.rand([1, 6, 2, 4], "float64")
    out, sm = flash_attention(q, q, q, 0.5, return_softmax=True)
    kept = sm.numpy()
    assert ((kept == 0) | (kept > 0)).all() and (kept == 0).any()
    np.testing.assert_allclose(out.numpy(),
                               np.transpose(kept @ np.transpose(q.numpy(), (0, 2, 1, 3)),
                                            (0, 2, 1, 3)), rtol=1e-12)
    same, _ = flash_attention(q, q, q, 0.5, training=False)
    np.testing.assert_allclose(same.numpy(), np_attention(*(q.numpy(),) * 3, False)[0], rtol=1e-12)
    with pytest.raises(ValueError, match="flash_attention.*dropout"):
        flash_attention(q, q, q, 1.5)
    with pytest.raises(ValueError, match="flash_attention.*4-D"):
        flash_attention(q[0], q[0], q[0])
    with pytest.raises(TypeError, match="flash_attention.*query"):
        flash_attention(q.numpy(), q, q)
    empty = oar.zeros([0, 3, 2, 4], "float64")
    assert flash_attention(empty, empty, empty)[0].shape == [0, 3, 2, 4]


# ---------------------------------------------------------------- beam search decoding
class TableCell(oar.nn.Layer):
    """A cell whose logits depend only on the previous token: state = the token's one-hot."""

    def __init__(self, table):
        super().__init__()
        self.table = oar.to_tensor(table)

    def forward(self, inputs, states):
        return self.table[inputs.astype("int64")], states + 1


def np_beam_search(table, start, end, beam, steps):
    """Plain beam search over the same token-transition log-probs (finished beams carry
    their score through end tokens)."""
    lp = _lsm(table)
    beams = [([start], 0.0, False)] + [([start], -1e9, False)] * (beam - 1)
    for _ in range(steps):
        cands = []
        for bi, (seq, score, done) in enumerate(beams):
            for tok in range(table.shape[1]):
                if done:
                    s = score + (0.0 if tok == end else -1e9)
                else:
                    s = score + lp[seq[-1], tok]
                cands.append((s, bi * table.shape[1] + tok, seq + [tok], done or tok == end))
        cands.sort(key=lambda c: (-c[0], c[1]))
        beams = [(c[2], c[0], c[3]) for c in cands[:beam]]
        if all(b[2] for b in beams):
            break
    return [b[0][1:] for b in beams], [b[1] for b in beams]


@pytest.mark.parametrize("max_step", [None, 2, 6])
def test_beam_search_matches_numpy(max_step):
    rng = np.random.default_rng(9)
    table = rng.standard_normal((6, 6)) * 2
    cell = TableCell(table)
    dec = oar.nn.BeamSearchDecoder(cell, start_token=0, end_token=5, beam_size=3)
    init = oar.zeros([2, 4], "float64")
    ids, states, lengths = oar.nn.dynamic_decode(dec, init, max_step_num=max_step,
                                                 return_length=True)
    n_steps = ids.shape[1]
    want, scores = np_beam_search(table, 0, 5, 3, 40 if max_step is None else max_step + 1)
    assert n_steps == len(want[0])
    for b in range(2):  # both batch entries start identically
        assert ids.numpy()[b].T.tolist() == want
        np.testing.assert_allclose(states.log_probs.numpy()[b], scores, rtol=1e-9)
    for k, seq in enumerate(want):  # the length counts tokens up to the first end token
        n = seq.index(5) + 1 if 5 in seq else len(seq)
        assert lengths.numpy()[0, k] == n
    assert list(states.cell_states.shape) == [2, 3, 4]
    tm, _ = oar.nn.dynamic_decode(dec, init, max_step_num=max_step, output_time_major=True)
    assert (tm.numpy().transpose(1, 0, 2) == ids.numpy()).all()


def test_beam_search_with_gru_embedding_and_errors():
    oar.seed(1)
    emb, out_fn = oar.nn.Embedding(20, 8), oar.nn.Linear(8, 20)
    cell = oar.nn.GRUCell(8, 8)
    dec = oar.nn.BeamSearchDecoder(cell, 0, 1, 4, embedding_fn=emb, output_fn=out_fn)
    enc = oar.ones([3, 5, 8])
    outputs, _ = oar.nn.dynamic_decode(dec, cell.get_initial_states(enc), max_step_num=4)
    assert outputs.shape == [3, 5, 4] and outputs.dtype == oar.int64
    assert ((outputs.numpy() >= 0) & (outputs.numpy() < 20)).all()
    tiled = oar.nn.BeamSearchDecoder.tile_beam_merge_with_batch(oar.to_tensor([[1, 2], [3, 4]]), 2)
    assert tiled.numpy().tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]]
    for kw, msg in (({"beam_size": 0}, "beam_size"), ({"end_token": -1}, "end_token")):
        args = {"cell": cell, "start_token": 0, "end_token": 1, "beam_size": 2, **kw}
        with pytest.raises(ValueError, match="BeamSearchDecoder.*" + msg):
            oar.nn.BeamSearchDecoder(**args)
    with pytest.raises(ValueError, match="dynamic_decode.*max_step_num"):
        oar.nn.dynamic_decode(dec, cell.get_initial_states(enc), max_step_num=-1)
    with pytest.raises(TypeError, match="dynamic_decode.*decoder"):
        oar.nn.dynamic_decode(object())
    bad = oar.nn.BeamSearchDecoder(cell, 0, 50, 2, embedding_fn=emb, output_fn=out_fn)
    with pytest.raises(ValueError, match="end_token 50"):
        oar.nn.dynamic_decode(bad, cell.get_initial_states(enc), max_step_num=2)
