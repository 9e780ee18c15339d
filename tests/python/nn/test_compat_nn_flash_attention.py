"""paddle.nn.functional.flash_attention.flash_attention on the CPU (python/oar/nn/
flash_attention.py): float64 NumPy attention (plain and causal), central differences, the
seeded dropout of Paddle's example, bad inputs."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import OpCase, case_id, check_case


def np_attention(q, k, v, causal=False):
    q, k, v = (np.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -1e4), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.transpose(p @ v, (0, 2, 1, 3))


FA = [
    OpCase("flash_attention", lambda q, k, v: F.flash_attention.flash_attention(q, k, v)[0],
           np_attention, inputs=[(2, 5, 3, 4), (2, 6, 3, 4), (2, 6, 3, 2)],
           shapes=[[(2, 5, 3, 4), (2, 6, 3, 4), (2, 6, 3, 2)], [(0, 5, 2, 4)] * 3,
                   [(1, 1, 1, 3)] * 3]),
    OpCase("flash_attention_causal",
           lambda q, k, v: F.flash_attention.flash_attention(q, k, v, causal=True)[0],
           lambda q, k, v: np_attention(q, k, v, True), inputs=[(1, 6, 2, 4)] * 3,
           op="flash_attention",
           bad_inputs=[(lambda: [oar.ones([2, 3, 4])] * 3, ValueError, "must be 4-D"),
                       (lambda: [oar.ones([1, 2, 2, 4]), oar.ones([1, 2, 2, 3]), oar.ones([1, 2, 2, 4])],
                        ValueError, "share batch and head_dim")]),
]


@pytest.mark.parametrize("case", FA, ids=case_id)
def test_flash_attention(case):
    check_case(case)


def test_flash_attention_dropout_and_paddle_example():
    # Paddle 3.3.1's docstring: seeded rand, dropout 0.9 on the weights (upscale_in_train)
    oar.seed(2023)
    q = oar.rand((1, 128, 2, 16))
    out, sm = F.flash_attention.flash_attention(q, q, q, 0.9, False, False)
    assert sm is None
    np.testing.assert_allclose(out.numpy()[0, 0, 0, :3], [0.34992966, 0.34456208, 0.45826620],
                               rtol=1e-5)
    np.testing.assert_allclose(out.numpy()[0, -1, 1, -3:], [0.38860250, 0.40526697, 0.60541755],
                               rtol=1e-5)
    # the same draw through F.dropout on the softmax weights
    oar.seed(7)
    out, w = F.flash_attention.flash_attention(q, q, q, 0.5, return_softmax=True)
    ref = np.transpose(w.numpy() @ np.transpose(q.numpy(), (0, 2, 1, 3)), (0, 2, 1, 3))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    kept = w.numpy() != 0
    assert 0.3 < kept.mean() < 0.7
    # eval: no dropout
    out_eval, _ = F.flash_attention.flash_attention(q, q, q, 0.9, training=False)
    np.testing.assert_allclose(out_eval.numpy(), np_attention(*[q.numpy().astype(np.float64)] * 3),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="flash_attention: dropout"):
        F.flash_attention.flash_attention(q, q, q, 1.5)
