"""Float32 GEMMs at 2 threads are split into panels on Oar's pool (Note [GEMM splits on the
pool], docs/notes/thread_pool.md): the products (OpenBLAS or oneDNN) equal the float64 NumPy
product (odd sizes, split along N or M, transposed operands, strided views, batches, 0-size),
whether the pool's worker runs a panel or the caller runs them all, and equal the unsplit
1-thread product within float32 rounding; two Python threads multiplying at once neither
deadlock nor mix results, no OpenMP worker thread is started by them, and the process uses
no CPU while idle after them (OpenBLAS's own pool spun for ~0.1 s after every call: 24-102
ms of CPU in the first 0.5 s idle). Each case runs in a fresh process with OMP_NUM_THREADS=2,
so the thread count is the one the library starts with."""

import os
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent(
    """
    import numpy as np, oar
    oar.set_num_threads(2)
    rng = np.random.default_rng(0)

    def check(got, a, b):
        ref = a.astype(np.float64) @ b.astype(np.float64)
        tol = 1e-4 * np.sqrt(max(a.shape[-1], 1))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=tol)
    """
)


def _run(body, timeout=240, **extra_env):
    env = dict(os.environ, OMP_NUM_THREADS="2", **extra_env)
    p = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


# wake: OAR_PARALLEL_WAKE_GRAIN, "0" wakes the pool's worker for every split product (the
# panels run on both threads), "67108864" (its cap) never does (the caller runs every panel).
# lib: the shape rule's choice (OpenBLAS for these on AVX2, oneDNN on AVX-512) or forced.
@pytest.mark.parametrize("lib", ["rule", "openblas", "onednn"])
@pytest.mark.parametrize("wake", ["0", "67108864"])
def test_large_products_at_two_threads(wake, lib):
    _run(
        """
        # (m, k, n): split along N (n >= m), along M, too narrow to split (max(m, n) < 64),
        # N < 16 (OpenBLAS on AVX-512), panels of whole 16-float vectors and a short last one
        shapes = [(384, 400, 392), (1023, 777, 1025), (512, 1024, 385), (1024, 1024, 256), (1001, 300, 40),
                  (2000, 129, 9), (33, 2000, 63), (17, 1000, 1041), (70, 4000, 65)]
        for (m, k, n) in shapes:
            for tx, ty in [(False, False), (True, False), (False, True), (True, True)]:
                a = rng.standard_normal((k, m) if tx else (m, k)).astype("float32")
                b = rng.standard_normal((n, k) if ty else (k, n)).astype("float32")
                ta, tb = oar.to_tensor(a), oar.to_tensor(b)
                got = oar.matmul(ta, tb, transpose_x=tx, transpose_y=ty).numpy()
                check(got, a.T if tx else a, b.T if ty else b)
                oar.set_num_threads(1)  # the unsplit product, one library call
                one = oar.matmul(ta, tb, transpose_x=tx, transpose_y=ty).numpy()
                oar.set_num_threads(2)
                np.testing.assert_allclose(got, one, rtol=1e-5, atol=2e-6 * np.sqrt(k) * np.abs(one).max())
        # strided views (leading dims larger than the columns), both operands, and transposed
        big = rng.standard_normal((600, 1100)).astype("float32")
        a = rng.standard_normal((500, 600)).astype("float32")
        check(oar.matmul(oar.to_tensor(a), oar.to_tensor(big)[:, 3:903]).numpy(), a, big[:, 3:903])
        av = oar.to_tensor(big)[5:505, 7:607]
        check(oar.matmul(av, oar.to_tensor(big)[:, 3:903]).numpy(), big[5:505, 7:607], big[:, 3:903])
        check(oar.matmul(oar.to_tensor(big)[:, 1:501], oar.to_tensor(big)[:, 10:710], transpose_x=True).numpy(),
              big[:, 1:501].T, big[:, 10:710])
        x = rng.standard_normal((3, 400, 448)).astype("float32")
        w = rng.standard_normal((3, 448, 392)).astype("float32")
        got = oar.matmul(oar.to_tensor(x), oar.to_tensor(w)).numpy()
        for i in range(3):
            check(got[i], x[i], w[i])
        # a Linear layer's weight on a batch of rows: one GEMM of 4 * 300 rows, split along M
        xs = rng.standard_normal((4, 300, 256)).astype("float32")
        wt = rng.standard_normal((256, 96)).astype("float32")
        got = oar.matmul(oar.to_tensor(xs), oar.to_tensor(wt)).numpy()
        check(got.reshape(-1, 96), xs.reshape(-1, 256), wt)
        z = oar.matmul(oar.zeros([0, 512]), oar.zeros([512, 512]))
        assert z.shape == [0, 512]
        z = oar.matmul(oar.zeros([512, 0]), oar.zeros([0, 700])).numpy()
        assert z.shape == (512, 700) and not z.any()
        """,
        OAR_PARALLEL_WAKE_GRAIN=wake,
        **({} if lib == "rule" else {"OAR_SGEMM": lib}),
    )


def test_gemms_start_no_openmp_worker():
    # Every float32 GEMM runs its library on one thread (Note [GEMM splits on the pool]): a
    # training loop of matmuls, linears and gathers at 2 threads starts the pool's worker and
    # no OpenMP worker (libgomp starts one at its first 2-thread region and keeps it).
    out = _run(
        """
        import os
        def tasks():
            return len(os.listdir("/proc/self/task"))
        base = tasks()
        lin = oar.nn.Linear(512, 512)
        head = oar.nn.Linear(512, 10)
        emb = oar.nn.Embedding(1000, 512)
        opt = oar.optimizer.SGD(learning_rate=0.01, parameters=lin.parameters() + head.parameters() + emb.parameters())
        ids = oar.to_tensor(rng.integers(0, 1000, (128,)).astype("int64"))
        for _ in range(5):
            h = oar.nn.functional.relu(lin(emb(ids)))
            loss = head(h).sum() + oar.matmul(h, h, transpose_y=True).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
        x = oar.randn([64, 256, 256])
        (x @ x).sum()
        print(base, tasks(), oar._C._parallel_info()["workers"])
        """,
        OAR_PARALLEL_WAKE_GRAIN="0",
    )
    base, after, workers = (int(v) for v in out.split()[-3:])
    assert after - base == workers, (base, after, workers)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_batched_small_products_one_per_thread(dtype):
    # matmul_kernel.cc runs a batch of small products one per pool chunk, float32 and the
    # 16-bit floats (oneDNN's bf16 primitive, or sgemm on widened copies): batched,
    # broadcast batch dims, transposed operands, strided views, odd sizes, an OpenBLAS-routed
    # shape (ldb a multiple of 512) and a single-element batch. The 16-bit results are checked
    # against the float64 product of the rounded inputs, within the result's rounding (2^-8
    # relative for bf16, 2^-10 for float16) plus the float accumulation's.
    _run(
        """
        dtype = %r
        def to(a):  # the tensor of dtype and the float64 values it holds
            t = oar.to_tensor(a.astype("float32")).astype(dtype)
            return t, t.astype("float32").numpy().astype(np.float64)

        def close(got, a, b):
            ref = np.matmul(a, b)
            assert got.shape == ref.shape, (got.shape, ref.shape)
            if dtype == "float32":
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.sqrt(a.shape[-1]))
                return
            rel = 2.0**-8 if dtype == "bfloat16" else 2.0**-10
            bound = rel * np.abs(ref) + 2.0**-16 * np.matmul(np.abs(a), np.abs(b)) + 1e-30
            err = np.abs(got.astype(np.float64) - ref)
            assert np.all(err <= bound), f"max err/bound {np.max(err / bound)}"

        cases = [((64, 128, 64), (64, 64, 128), False, False), ((5, 3, 33, 17), (3, 17, 29), False, False),
                 ((7, 40, 31), (7, 50, 40), True, True), ((2, 9, 16, 64), (1, 64, 512), False, False),
                 ((1, 20, 30), (1, 30, 10), False, False), ((6, 0, 8), (6, 8, 5), False, False),
                 ((32, 128, 64), (32, 128, 64), False, True)]
        for xs, ys, tx, ty in cases:
            (xt, x), (yt, y) = to(rng.standard_normal(xs)), to(rng.standard_normal(ys))
            got = oar.matmul(xt, yt, transpose_x=tx, transpose_y=ty)
            assert got.dtype == xt.dtype
            a = np.swapaxes(x, -1, -2) if tx else x
            b = np.swapaxes(y, -1, -2) if ty else y
            close(got.astype("float32").numpy(), a, b)
        bigt, big = to(rng.standard_normal((12, 40, 70)))
        wt, w = to(rng.standard_normal((12, 64, 24)))
        got = oar.matmul(bigt[:, 3:35, 5:69], wt)  # strided batch of 32 x 64 views
        close(got.astype("float32").numpy(), big[:, 3:35, 5:69], w)
        """ % dtype
    )


@pytest.mark.parametrize("lib", ["openblas", "onednn"])
def test_two_python_threads_multiply_at_once(lib):
    _run(
        """
        import threading
        a = [rng.standard_normal((700, 640)).astype("float32") for _ in range(2)]
        b = [rng.standard_normal((640, 520)).astype("float32") for _ in range(2)]
        out, errs = [None, None], []

        def work(i):
            try:
                for _ in range(15):
                    out[i] = oar.matmul(oar.to_tensor(a[i]), oar.to_tensor(b[i])).numpy()
            except Exception as e:  # noqa: BLE001
                errs.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        assert not any(t.is_alive() for t in ts), "deadlock"
        assert not errs, errs
        for i in range(2):
            check(out[i], a[i], b[i])
        """,
        OAR_SGEMM=lib,
    )


@pytest.mark.skipif(os.cpu_count() < 2, reason="needs 2 cpus for a threaded GEMM")
@pytest.mark.parametrize("lib", ["openblas", "onednn"])
def test_no_cpu_while_idle_after_threaded_gemms(lib):
    out = _run(
        """
        import time
        x = oar.randn([512, 512])
        for _ in range(20):
            (x @ x).sum()
        time.sleep(0.05)  # OpenMP's own short spin after the last region (PASSIVE: none)
        t0 = time.process_time()
        time.sleep(0.5)
        print(time.process_time() - t0)
        """,
        OAR_SGEMM=lib,
    )
    idle_ms = float(out.split()[-1]) * 1e3
    # OpenBLAS's pool spun 24-102 ms here; a pool at rest costs ~0.1 ms.
    assert idle_ms < 10.0, f"{idle_ms:.1f} ms of CPU while idle"
