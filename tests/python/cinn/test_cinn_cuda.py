"""The CUDA C generator (docs/notes/cinn.md, "The CUDA code generator"): the groups of
the test models (RMSNorm, LayerNorm, softmax, GELU + bias, an Adam update written as
ops, a Transformer block's forward) emitted as CUDA C and compiled by NVRTC to sm_90
CUBINs, with the source's structure checked. No GPU: nothing is launched."""
import re

import numpy as np
import pytest

import oar
from oar import _C

import cuda_check  # noqa: E402
from test_cinn import MODELS  # noqa: E402

needs_nvrtc = pytest.mark.skipif(not _C.cinn.compiled_with_nvrtc(), reason="built without NVRTC")


CINN_NVRTC = False


def adam(p, g, m, v):
    m1 = m * 0.9 + g * 0.1
    v1 = v * 0.999 + g * g * 0.001
    return p - (m1 / (oar.sqrt(v1) + 1e-8)) * 1e-3, m1, v1


def kernels_made_by(fn, *args):
    """fn under to_static(backend='CINN'): the function, its output, and the CUDA C of
    the kernels its executed program runs (one entry per distinct kernel)."""
    static = oar.jit.to_static(fn, backend="CINN")
    out = static(*args)
    names = set(re.findall(r'kernel_name = "(cinn_\w+)"', str(static.concrete_programs[-1].executed_program)))
    made = {k["name"]: k for k in _C.cinn.cuda_kernels() if k["name"] in names}
    assert set(made) == names
    return static, out, list(made.values())


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_group_of_the_test_models_compiles_with_nvrtc(dtype):
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((6, 300)).astype(dtype))
    w = oar.to_tensor(rng.standard_normal(300).astype(dtype))
    schedules = {}
    for name, fn in sorted(MODELS.items()):
        _, _, made = kernels_made_by(fn, x, w)
        assert made, name
        schedules[name] = sorted(k["schedule"] for k in made)
    small = oar.to_tensor(rng.standard_normal((6, 64)).astype(dtype))
    _, _, made = kernels_made_by(MODELS["softmax"], small, small[0])
    schedules["softmax64"] = sorted(k["schedule"] for k in made)
    p, g, m, v = (oar.to_tensor(rng.standard_normal((33, 17)).astype(dtype)) for _ in range(4))
    _, outs, made = kernels_made_by(adam, p, g, m, v)
    schedules["adam"] = sorted(k["schedule"] for k in made)
    assert schedules == {"gelu_bias": ["elementwise"], "layer_norm": ["block_per_row"],
                         "rms_norm": ["block_per_row"], "softmax": ["block_per_row"],
                         "softmax64": ["warp_per_row"], "adam": ["elementwise"]}
    cuda_check.check_new_kernels()


@needs_nvrtc
def test_a_transformer_blocks_forward_groups_compile_with_nvrtc():
    oar.seed(0)
    layer = oar.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu")
    layer.eval()
    x = oar.randn([2, 16, 64])
    with oar.no_grad():  # inference: the lambda's layer is its state (Note [Captured state]), no backward
        static, out, made = kernels_made_by(lambda t: layer(t), x)
    np.testing.assert_allclose(out.numpy(), layer(x).numpy(), rtol=1e-4, atol=1e-5)
    text = str(static.concrete_programs[-1].executed_program)
    # residual + LayerNorm twice (one kernel), bias + GELU; attention is a library call.
    assert text.count("kernel.compiled_kernel") == 3, text
    assert len(made) == 2 and {k["schedule"] for k in made} == {"warp_per_row", "elementwise"}, made
    cuda_check.check_new_kernels()
    assert all(k["name"] in cuda_check._checked for k in made)


def test_structure_check_and_nvrtc_fail_on_bad_sources():
    k = {"name": "cinn_x", "block": 128, "schedule": "block_per_row", "loop_kernel": "n1:row = reduce_sum(n0)",
         "source": 'extern "C" __global__ void __launch_bounds__(128) cinn_x(long long rows, long long cols) {}'}
    assert cuda_check.structure_errors(k) == ["vector body test", "block-per-row reductions"]
    k["source"] = "__global__ void cinn_x() {}"
    assert "kernel signature" in cuda_check.structure_errors(k)
    if _C.cinn.compiled_with_nvrtc():
        with pytest.raises(Exception, match=r'(?s)NVRTC cannot compile the CUDA C of bad.*"nope" is undefined'):
            _C.cinn.nvrtc_compile('extern "C" __global__ void bad() { nope = 1; }', "bad")
        r = _C.cinn.nvrtc_compile('extern "C" __global__ void ok(float* a) { a[0] = 1.0f; }', "ok", False)
        assert b".entry ok" in r["binary"] and b".target sm_90" in r["binary"]
        assert _C.cinn.cuda_target().startswith("nvrtc-") and _C.cinn.cuda_target().endswith("sm_90")


def test_kernel_calls_are_recorded_for_gpu_replay():
    """record_kernel_calls / take_kernel_calls (bench/cinn_gpu.py replays them on a GPU):
    the first call of each kernel, its inputs before and outputs after the CPU kernel ran,
    with the launch the CUDA C needs; calls over max_bytes and repeated calls are not kept."""
    rng = np.random.default_rng(1)
    xn = rng.standard_normal((5, 37)).astype("float32")
    x, w = oar.to_tensor(xn), oar.to_tensor(rng.standard_normal(37).astype("float32"))
    big = oar.to_tensor(rng.standard_normal((64, 37)).astype("float32"))

    def colmax_plus(x, w):  # a row sum and a column max (one kernel)
        return (x * w).sum(axis=-1), oar.max(x + 1.0, axis=0)

    earlier = _C.cinn.take_kernel_calls()  # bench/cinn_gpu.py export records the whole suite
    was = _C.cinn.record_kernel_calls(True, 4096)
    try:
        f = oar.jit.to_static(colmax_plus, backend="CINN")
        want = [o.numpy() for o in f(x, w)]
        f(x, w)  # the second call of each kernel is not kept
        f(big, w)  # over max_bytes: not kept
        calls = _C.cinn.take_kernel_calls()
    finally:
        _C.cinn.record_kernel_calls(*was)
        cuda_check.keep_calls(earlier)
    kernels = {k["name"]: k for k in _C.cinn.cuda_kernels()}
    names = set(re.findall(r'kernel_name = "(cinn_\w+)"', str(f.concrete_programs[0].executed_program)))
    assert names and sorted(c["name"] for c in calls) == sorted(names)  # once each, the big call not at all
    seen_outputs = []
    for c in calls:
        k = kernels[c["name"]]
        assert (c["rows"], c["cols"], c["inner"]) == (5, 37, 0)
        assert c["block"] == k["block"] and c["grid"] >= 1
        ins = [np.frombuffer(raw, dt).reshape(dims) for dt, dims, raw in c["inputs"]]
        assert any(a.shape == (5, 37) and np.array_equal(a, xn) for a in ins)
        assert len(c["outputs"]) == len(k["output_init"])
        for (dt, dims, raw), init in zip(c["outputs"], k["output_init"]):
            seen_outputs.append((tuple(dims), init, np.frombuffer(raw, dt).reshape(dims)))
    by_shape = {s: (init, a) for s, init, a in seen_outputs}
    assert by_shape[(5,)][0] == "none" and by_shape[(37,)][0] == "-inf"  # column max: compared into -inf
    np.testing.assert_allclose(by_shape[(5,)][1], want[0], rtol=1e-6)
    np.testing.assert_array_equal(by_shape[(37,)][1], want[1])
    assert was[0] or _C.cinn.take_kernel_calls() == []


def test_gpu_output_init_per_reduction_kind():
    """What a GPU launcher writes into each output first: zeros for column sums and means,
    -inf / +inf for column max / min, nothing for stored outputs."""
    x = oar.to_tensor(np.random.default_rng(2).standard_normal((9, 21)).astype("float32"))

    def cols(x):
        y = x * 2.0
        return y.sum(axis=0), (y * y).mean(axis=0), y.max(axis=0), y.min(axis=0), y + 1.0

    static = oar.jit.to_static(cols, backend="CINN")
    static(x)
    names = set(re.findall(r'kernel_name = "(cinn_\w+)"', str(static.concrete_programs[-1].executed_program)))
    inits = sorted(i for k in _C.cinn.cuda_kernels() if k["name"] in names for i in k["output_init"])
    assert inits == ["-inf", "inf", "none", "zero", "zero"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rows_that_fit_in_registers_get_a_resident_body(dtype):
    """Note [CUDA resident rows]: a row kernel whose static row is at most 8 chunks of V per
    thread keeps it in registers (a third body, for the launch it was planned for); rows
    that end inside a chunk guard it. The models on such rows equal eager (the CPU kernels
    are unchanged), and bench/cinn_gpu.py export records these calls for the GPU replay."""
    rng = np.random.default_rng(3)
    V = 2 if dtype == "float64" else 4
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    # (shape, resident chunks per thread): warp rows of 96 and 128, block rows (128
    # threads up to 1024 columns, 256 above) of 1000, 1024 and 4096
    cases = [((6, 96), -(-96 // (32 * V))), ((4, 128), 128 // (32 * V)), ((5, 1000), -(-1000 // (128 * V))),
             ((3, 1024), 1024 // (128 * V)), ((2, 4096), 4096 // (256 * V))]
    for shape, K in cases:
        x = oar.to_tensor(rng.standard_normal(shape).astype("float32")).astype(dtype)
        w = oar.to_tensor(rng.standard_normal(shape[-1]).astype("float32")).astype(dtype)
        for name in ("rms_norm", "softmax", "layer_norm"):
            static, out, made = kernels_made_by(MODELS[name], x, w)
            want = MODELS[name](x, w)
            np.testing.assert_allclose(out.astype("float32").numpy(), want.astype("float32").numpy(),
                                       rtol=tol, atol=tol)
            resident = [k for k in made if k["schedule"] != "elementwise"]
            assert resident, (name, shape)
            for k in resident:
                marks = re.findall(r"// the row in registers: (\d+) chunks of (\d+) per thread", k["source"])
                assert marks == [(str(K), str(V))], (name, shape, marks)
                assert ("if (c < cols) {" in k["source"]) == (shape[-1] % (V * (32 if shape[-1] <= 256 else 128 if
                                                                                shape[-1] <= 1024 else 256)) != 0)
    cuda_check.check_new_kernels()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_column_reductions_get_the_column_schedule(dtype):
    """Note [CUDA column reductions]: a kernel with column reductions and no row reduction
    sums each thread's columns over a group of rows in registers, then adds into the output
    once (one atomic per column and row group, not per element); over middle axes
    (col_outer) it keeps the elementwise schedule."""
    rng = np.random.default_rng(4)
    x = oar.to_tensor(rng.standard_normal((37, 24)).astype(dtype))
    b = oar.to_tensor(rng.standard_normal(24).astype(dtype))

    def bias_grads(x, b):
        d = x * (x + b > 0)
        return d, d.sum(axis=0), (x * 2.0).max(axis=0), (x - 1.0).mean(axis=0)

    _, out, made = kernels_made_by(bias_grads, x, b)
    xn, bn = x.numpy(), b.numpy()
    d = xn * (xn + bn > 0)
    for got, want in zip(out, [d, d.sum(0), (xn * 2.0).max(0), (xn - 1.0).mean(0)]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)
    assert [k["schedule"] for k in made] == ["columns"], made
    src = made[0]["source"]
    V = 2 if dtype == "float64" else 4
    assert src.count("for (long long row = rg; row < rows; row += groups) {") == 2
    # one add or compare per column of the thread, after its rows: V in the vector body, 1 after;
    # a float32 sum or mean adds the vector body's V columns with one float4 atomic on sm_90
    # (its V scalar adds under #else), so its outputs join the vector body's alignment test
    f32 = dtype == "float32"
    assert src.count("atomicAdd(reinterpret_cast<float4*>(") == (2 if f32 else 0)
    assert src.count("atomicAdd(") == 2 * (V + 1 + f32) and src.count("oar_atomic_max(&") == V + 1
    test = re.search(r"if \((cols % \d == 0[^{]*)\) \{", src).group(1)
    assert ("(unsigned long long)out1 & 15ULL" in test) == f32 and "out2" not in test  # out2: the max
    y = oar.to_tensor(rng.standard_normal((3, 5, 8)).astype(dtype))
    _, got, made = kernels_made_by(lambda y: (y * 2.0).sum(axis=1), y)  # over a middle axis
    np.testing.assert_allclose(got.numpy(), (y.numpy() * 2.0).sum(1), rtol=1e-5 if f32 else 1e-12, atol=1e-5)
    assert [k["schedule"] for k in made] == ["elementwise"], made
    assert made[0]["source"].count("atomicAdd(reinterpret_cast<float4*>(") == (1 if f32 else 0)
    cuda_check.check_new_kernels()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_column_launch_takes_32_row_groups_with_float4_atomics(dtype):
    """Note [CUDA column reductions]: the columns schedule's row groups are >= 32 rows when
    every column reduction is a float32 sum or mean (one float4 atomic per thread and
    group), else >= 64; the grid is column blocks times groups (gpu_launch_dims)."""
    rng = np.random.default_rng(8)
    x = oar.to_tensor(rng.standard_normal((100, 24)).astype(dtype))

    def sums(x, with_max):
        return [(x * 3.0).sum(axis=0), (x - 1.0).mean(axis=0)] + ([x.max(axis=0)] if with_max else [])

    earlier = _C.cinn.take_kernel_calls()
    was = _C.cinn.record_kernel_calls(True, 1 << 20)
    try:
        grids = {}
        for with_max in (False, True):
            f = oar.jit.to_static(lambda x: sums(x, with_max), backend="CINN")
            out = f(x)
            xn = x.numpy()
            for got, want in zip(out, [(xn * 3.0).sum(0), (xn - 1.0).mean(0), xn.max(0)]):
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
            calls = _C.cinn.take_kernel_calls()
            assert len(calls) == 1, calls
            grids[with_max] = calls[0]["grid"]
    finally:
        _C.cinn.record_kernel_calls(*was)
        cuda_check.keep_calls(earlier)
    # one column block (24 columns); 100 rows in groups of 32 (4) or 64 (2)
    assert grids == {False: 4 if dtype == "float32" else 2, True: 2}, grids


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_resident_row_combines_its_column_reductions_in_registers(dtype):
    """Note [CUDA column reductions]: in a row kernel's resident body a thread keeps its
    columns from row to row, so a column sum or max beside the row reduction combines in
    registers (K chunks * V per output) and reaches the output once per thread."""
    rng = np.random.default_rng(5)
    V = 2 if dtype == "float64" else 4
    for shape, K in [((6, 128), 128 // (32 * V)), ((4, 1000), -(-1000 // (128 * V)))]:
        xn = rng.standard_normal(shape).astype(dtype)
        wn = rng.standard_normal(shape[-1]).astype(dtype)
        x, w = oar.to_tensor(xn), oar.to_tensor(wn)

        def rows_and_cols(x, w):
            return (x * w).sum(axis=-1), (x + 1.0).max(axis=0), x.sum(axis=0)

        _, out, made = kernels_made_by(rows_and_cols, x, w)
        for got, want in zip(out, [(xn * wn).sum(-1), (xn + 1.0).max(0), xn.sum(0)]):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
        row = [k for k in made if k["schedule"] in ("warp_per_row", "block_per_row")]
        assert len(row) == 1 and "zero" in row[0]["output_init"] and "-inf" in row[0]["output_init"], made
        src = row[0]["source"]
        assert "// the row in registers: %d chunks of %d per thread" % (K, V) in src
        # two column outputs, K * V registers each, in the resident body only
        assert len(re.findall(r"^\s+(float|double) cacc\d+_\d+ = ", src, re.M)) == 2 * K * V
        # the thread's rows advance by the grid: the next row's K chunks of x are loaded
        # before this row's reductions (Note [CUDA resident rows])
        assert src.count("if (row + ") == 1 and len(re.findall(r"^\s+nx0_\d+ = ", src, re.M)) == K
    cuda_check.check_new_kernels()


def test_a_sweeps_block_reductions_share_their_barriers():
    """Note [CUDA block reductions]: the reductions of one sweep are combined across the
    block at once (one pair of barriers, each in its own 33 values of shared memory); a
    sweep of one keeps oar_block_reduce."""
    rng = np.random.default_rng(7)
    xn = rng.standard_normal((5, 1000)).astype("float32")
    x = oar.to_tensor(xn)

    def stats(x):  # sweep 1: the sum, the sum of squares and the max; sweep 2: sum(exp(x - max))
        return x.sum(axis=-1), (x * x).sum(axis=-1), (x - x.max(axis=-1, keepdim=True)).exp().sum(axis=-1)

    _, out, made = kernels_made_by(stats, x)
    want = [xn.sum(-1), (xn * xn).sum(-1), np.exp(xn - xn.max(-1, keepdims=True)).sum(-1)]
    for got, w in zip(out, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-4)
    assert [k["schedule"] for k in made] == ["block_per_row"], made
    src = made[0]["source"]
    bodies = 3  # resident, vector, scalar
    assert "__shared__ float smem[132];" in src  # 4 reductions
    assert src.count(" = smem[") == 3 * bodies and src.count("= oar_block_reduce(") == bodies
    assert src.count("__syncthreads();") == 2 + 2 * bodies  # the helper's two, one pair per merged sweep
    cuda_check.check_new_kernels()


def test_a_row_that_would_spill_keeps_the_strided_body():
    """Note [CUDA resident rows]: past 128 values kept per thread (the row's chunks and the
    column accumulators) the kernel keeps only the vector and scalar bodies."""
    rng = np.random.default_rng(6)
    x = oar.to_tensor(rng.standard_normal((3, 4096)).astype("float32"))

    def many_columns(x, n):
        return [x.sum(axis=-1)] + [(x * float(i + 2)).sum(axis=0) for i in range(n)]

    # 4 chunks of 4 per thread: 16 * (1 + n) values, 16 more with the next row's chunks
    for n, resident, prefetch in [(6, True, True), (7, True, False), (8, False, False)]:
        _, out, made = kernels_made_by(lambda x: many_columns(x, n), x)
        xn = x.numpy()
        np.testing.assert_allclose(out[0].numpy(), xn.sum(-1), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(out[-1].numpy(), (xn * float(n + 1)).sum(0), rtol=1e-5, atol=1e-4)
        row = [k for k in made if k["schedule"] == "block_per_row"]
        assert len(row) == 1, made
        assert ("// the row in registers" in row[0]["source"]) == resident, n
        assert ("if (row + " in row[0]["source"]) == prefetch, n
    cuda_check.check_new_kernels()
