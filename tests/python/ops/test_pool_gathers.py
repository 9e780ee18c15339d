"""The gathers that ran on OpenMP loops run on parallel_for (Note [Thread pool]): gather's
gradient (the (outer row, 256-column block) pairs split across threads; repeated indices add
up), gather_nd and index_get (advanced indexing) equal NumPy at 2 threads above the
parallel grain, with odd sizes and 0-size, whether the pool's worker runs a chunk (wake
grain 0) or the caller runs them all (the grain at its cap). Each case runs in a fresh
process with OMP_NUM_THREADS=2."""

import os
import subprocess
import sys
import textwrap

import pytest

BODY = textwrap.dedent(
    """
    import numpy as np, oar
    oar.set_num_threads(2)
    rng = np.random.default_rng(1)

    # gather's gradient along axis 1 of [outer, n, inner]: inner 700 is 3 blocks of 256, the
    # last short; indices repeat, so rows of the gradient sum several rows of grad_out
    for shape, axis, m in [((3, 50, 700), 1, 90), ((200, 333), 0, 250), ((7, 40, 5), 1, 2000), ((2, 0, 9), 1, 0)]:
        x = rng.standard_normal(shape).astype("float32")
        idx = rng.integers(0, max(shape[axis], 1), (m,)).astype("int64")
        xt = oar.to_tensor(x)
        xt.stop_gradient = False
        out = oar.gather(xt, oar.to_tensor(idx), axis=axis)
        g = rng.standard_normal(out.shape).astype("float32")
        (out * oar.to_tensor(g)).sum().backward()
        ref = np.zeros(x.shape, np.float64)
        if m:
            np.add.at(ref, (slice(None),) * axis + (idx,), g.astype(np.float64))
        np.testing.assert_allclose(out.numpy(), np.take(x, idx, axis=axis), rtol=0, atol=0)
        np.testing.assert_allclose(xt.grad.numpy(), ref, rtol=1e-5, atol=1e-5)

    # gather of single elements (inner 1) along the last axis: the tight per-row loop, with
    # the split between the two threads falling inside an outer row; int32 and negative
    # indices, and an empty index
    x = rng.standard_normal((9, 70001)).astype("float32")
    for idx in (rng.integers(-70001, 70001, 50003).astype("int32"), rng.integers(0, 70001, 3).astype("int64"),
                np.zeros((0,), np.int64)):
        got = oar.gather(oar.to_tensor(x), oar.to_tensor(idx), axis=1).numpy()
        np.testing.assert_array_equal(got, np.take(x, idx, axis=1))

    # gather_nd: rows of [40, 30, 77] picked by (i, j) pairs, and whole [30, 77] blocks by i
    x = rng.standard_normal((40, 30, 77)).astype("float32")
    ij = np.stack([rng.integers(0, 40, 999), rng.integers(0, 30, 999)], -1).astype("int64")
    got = oar.gather_nd(oar.to_tensor(x), oar.to_tensor(ij)).numpy()
    np.testing.assert_array_equal(got, x[ij[:, 0], ij[:, 1]])
    i = rng.integers(0, 40, (5, 3, 1)).astype("int64")
    got = oar.gather_nd(oar.to_tensor(x), oar.to_tensor(i)).numpy()
    np.testing.assert_array_equal(got, x[i[..., 0]])
    got = oar.gather_nd(oar.to_tensor(x), oar.to_tensor(np.zeros((0, 2), np.int64))).numpy()
    assert got.shape == (0, 77)

    # index_get (advanced indexing): an index tensor on the first dim, two broadcast ones,
    # and a strided view indexed
    x = rng.standard_normal((300, 129)).astype("float32")
    rows = rng.integers(0, 300, (1001,)).astype("int64")
    np.testing.assert_array_equal(oar.to_tensor(x)[oar.to_tensor(rows)].numpy(), x[rows])
    y = rng.standard_normal((60, 50, 41)).astype("float32")
    a = rng.integers(0, 60, (17, 1)).astype("int64")
    b = rng.integers(0, 50, (1, 23)).astype("int64")
    np.testing.assert_array_equal(oar.to_tensor(y)[oar.to_tensor(a), oar.to_tensor(b)].numpy(), y[a, b])
    v = oar.to_tensor(y)[:, ::2, 1:40]
    np.testing.assert_array_equal(v[oar.to_tensor(rows % 60)].numpy(), y[:, ::2, 1:40][rows % 60])
    assert oar.to_tensor(x)[oar.to_tensor(np.zeros((0,), np.int64))].shape == [0, 129]
    print("ok")
    """
)


@pytest.mark.parametrize("wake", ["0", "67108864"])
def test_gathers_on_the_pool(wake):
    env = dict(os.environ, OMP_NUM_THREADS="2", OAR_PARALLEL_WAKE_GRAIN=wake)
    p = subprocess.run([sys.executable, "-c", BODY], env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split()[-1] == "ok"
