"""Note [Packed key/value blocks] (phi_kernels/cpu/attention_kernels.cc): the forward copies
each head's keys and values into dense rows (the whole head once when Sk (D + Dv) <= 2^20
floats, else block by block). Against a float64 NumPy reference: several key blocks, heads
whose rows are a multiple of 2 KiB apart, grouped heads, the block-by-block path, masks,
causal, non-contiguous inputs."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import oar
import oar.nn.functional as F


def ref(q, k, v, mask=None, causal=False):
    g = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)
    s = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(q.shape[-1])
    if causal:
        s = s + np.where(np.tril(np.ones((q.shape[1], k.shape[1]))) > 0, 0.0, -np.inf)
    if mask is not None:
        s = s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhij,bjhd->bihd", e / e.sum(-1, keepdims=True), v)


# (q, k, v shapes, causal, float mask shape or None)
CASES = [
    ((2, 130, 8, 64), (2, 600, 8, 64), (2, 600, 8, 64), False, None),  # 2 key blocks, 2 KiB rows
    ((2, 130, 8, 64), (2, 600, 8, 64), (2, 600, 8, 64), True, None),
    ((1, 257, 4, 16), (1, 257, 2, 16), (1, 257, 2, 24), True, None),   # grouped heads, Dv != D
    ((1, 3, 2, 128), (1, 4200, 2, 128), (1, 4200, 2, 128), False, None),  # block by block
    ((1, 5, 3, 8), (1, 1030, 3, 8), (1, 1030, 3, 8), False, (1, 3, 5, 1030)),
    ((2, 7, 1, 32), (2, 9, 1, 32), (2, 9, 1, 32), False, None),        # one head: no copy
    ((1, 19, 3, 12), (1, 45, 3, 12), (1, 45, 3, 20), False, None),     # K^T tiles' ragged edges
    # Note [Keys packed transposed]: whole heads of 512 and 1024 keys (K^T's rows padded
    # off 2-KiB multiples), 8 heads of 64
    ((1, 70, 8, 64), (1, 512, 8, 64), (1, 512, 8, 64), True, None),
    ((1, 33, 8, 64), (1, 1024, 8, 64), (1, 1024, 8, 64), False, (1, 8, 33, 1024)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_packed_forward_vs_float64(case):
    qs, ks, vs, causal, ms = CASES[case]
    rng = np.random.default_rng(case)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in (qs, ks, vs))
    mask = rng.standard_normal(ms).astype(np.float32) if ms else None
    out = F.scaled_dot_product_attention(oar.to_tensor(q), oar.to_tensor(k), oar.to_tensor(v),
                                         None if mask is None else oar.to_tensor(mask), is_causal=causal)
    expect = ref(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                 None if mask is None else mask.astype(np.float64), causal)
    np.testing.assert_allclose(out.numpy(), expect, rtol=2e-4, atol=2e-5)


def test_strided_inputs_match_contiguous():
    # q/k/v as transposed views of [B, H, S, D] tensors (the kernel copies them to [B, S, H, D])
    rng = np.random.default_rng(7)
    arrs = [rng.standard_normal((2, 8, 300, 64)).astype(np.float32) for _ in range(3)]
    views = [oar.to_tensor(a).transpose([0, 2, 1, 3]) for a in arrs]
    dense = [oar.to_tensor(np.ascontiguousarray(a.transpose(0, 2, 1, 3))) for a in arrs]
    for causal in (False, True):
        a = F.scaled_dot_product_attention(*views, is_causal=causal).numpy()
        b = F.scaled_dot_product_attention(*dense, is_causal=causal).numpy()
        np.testing.assert_array_equal(a, b)
        expect = ref(*[x.transpose(0, 2, 1, 3).astype(np.float64) for x in arrs], causal=causal)
        np.testing.assert_allclose(a, expect, rtol=2e-4, atol=2e-5)


def test_two_threads_match_one():
    rng = np.random.default_rng(8)
    q, k, v = (oar.to_tensor(rng.standard_normal((3, 200, 8, 64)).astype(np.float32)) for _ in range(3))
    prev = oar.get_num_threads() if hasattr(oar, "get_num_threads") else None
    outs = []
    for t in (1, 2):
        oar.set_num_threads(t)
        outs.append(F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy())
    if prev is not None:
        oar.set_num_threads(prev)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(os.environ.get("OAR_TEST_CHILD") == "1", reason="the child itself")
def test_rows_form_under_avx2():
    """Note [Keys packed transposed]: with oneDNN capped to AVX2 the keys stay packed as
    [keys, D] rows (the NT product); the float64 cases in a child process."""
    env = dict(os.environ, OAR_TEST_CHILD="1", DNNL_MAX_CPU_ISA="AVX2", ONEDNN_MAX_CPU_ISA="AVX2")
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-p", "no:cacheprovider",
                        "-k", "vs_float64 or strided"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(rf"\b{len(CASES) + 1} passed", r.stdout), r.stdout[-3000:]  # the cases and strided
