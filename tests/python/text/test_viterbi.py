"""paddle.text.viterbi_decode / ViterbiDecoder against brute force over every tag path (with and
without start/stop tags, varied lengths including 0), and bad inputs."""
import itertools

import numpy as np
import pytest

import oar

RNG = np.random.default_rng(3)


def brute_force(pot, trans, lens, bos_eos):
    b, _, n = pot.shape
    width = max(lens) if len(lens) else 0
    scores, paths = np.zeros(b), np.zeros((b, width), dtype=np.int64)
    for i in range(b):
        m = lens[i]
        if m == 0:
            continue
        best = None
        for path in itertools.product(range(n), repeat=m):
            s = sum(pot[i, t, path[t]] for t in range(m))
            s += sum(trans[path[t - 1], path[t]] for t in range(1, m))
            if bos_eos:
                s += trans[n - 1, path[0]] + trans[path[-1], n - 2]
            if best is None or s > best[0] + 1e-12:
                best = (s, path)
        scores[i] = best[0]
        paths[i, :m] = best[1]
    return scores, paths


@pytest.mark.parametrize("bos_eos", [True, False])
@pytest.mark.parametrize("lens", [[4, 2, 1], [3, 3, 3], [0, 2, 1], [1]])
def test_viterbi_against_brute_force(bos_eos, lens):
    n = 4
    pot = RNG.standard_normal((len(lens), 4, n))
    trans = RNG.standard_normal((n, n))
    scores, paths = oar.text.viterbi_decode(oar.to_tensor(pot), oar.to_tensor(trans),
                                            oar.to_tensor(lens), bos_eos)
    ref_s, ref_p = brute_force(pot, trans, lens, bos_eos)
    np.testing.assert_allclose(scores.numpy(), ref_s, rtol=1e-12)
    np.testing.assert_array_equal(paths.numpy(), ref_p)
    assert scores.dtype == oar.float64 and paths.dtype == oar.int64
    dec = oar.text.ViterbiDecoder(oar.to_tensor(trans), include_bos_eos_tag=bos_eos)
    s2, p2 = dec(oar.to_tensor(pot), oar.to_tensor(lens))
    np.testing.assert_array_equal(p2.numpy(), ref_p)


def test_viterbi_bad_inputs():
    pot, trans = oar.zeros([2, 3, 4]), oar.zeros([4, 4])
    with pytest.raises(ValueError, match=r"viterbi_decode: transition_params must be \[num_tags, num_tags\]"):
        oar.text.viterbi_decode(pot, oar.zeros([3, 3]), oar.to_tensor([1, 2]))
    with pytest.raises(ValueError, match=r"viterbi_decode: lengths must lie in \[0, sequence_length = 3\]"):
        oar.text.viterbi_decode(pot, trans, oar.to_tensor([1, 5]))
    with pytest.raises(ValueError, match="viterbi_decode: lengths must have one entry per batch row"):
        oar.text.viterbi_decode(pot, trans, oar.to_tensor([1]))
    with pytest.raises(TypeError, match="viterbi_decode: lengths must be int32 or int64"):
        oar.text.viterbi_decode(pot, trans, oar.to_tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="viterbi_decode: potentials must be a 3-D Tensor"):
        oar.text.viterbi_decode(oar.zeros([3, 4]), trans, oar.to_tensor([1, 2]))
