"""The fusion compiler's CUDA C on a GPU (docs/notes/cinn.md, Note [CUDA kernels on a GPU]).

Oar has no CUDA backend yet, so its kernels cannot run from Oar on a GPU. This script
checks and times them anyway, in two steps:

  export FOLDER   (here, on the CPU machine; needs Oar built with LLVM 19 and NVRTC)
      1. runs the CINN tests (tests/python/cinn) with kernel-call recording on
         (OAR_CINN_GPU_EXPORT, tests/python/cinn/cuda_check.py): the first call of every
         kernel the tests make, its inputs and the CPU kernel's outputs, into FOLDER/tests;
      2. compiles the bench_cinn.py models (RMSNorm, LayerNorm, softmax, GELU+bias, an Adam
         step written as ops; the first four also in bf16 storage, tags *_bf16, and three
         column-reduction models) at [4096, 4096] float32 under to_static(backend='CINN') and
         records their kernel calls' shapes (and the values of inputs up to 64 KB: scalars,
         weights) into FOLDER/bench.
      Each kernel travels as the sm_90 CUBIN Oar's NVRTC made, with its launch (grid,
      block: cinn/schedule/gpu_schedule.h) and its outputs' initial values.

  run FOLDER      (on a machine with an NVIDIA GPU, CuPy and PyTorch; no Oar needed)
      1. replays every recorded test call: uploads the inputs, fills the outputs with
         their initial values (sums 0, max -inf, min +inf) or poison (all bits set),
         launches the CUBIN and compares with the CPU kernel's outputs (NaN and infinity
         positions exactly; float32 1e-4 and float64 1e-10 of the output's largest
         magnitude, bf16 2e-2; bool outputs exactly);
      2. times the bench models' kernels on random inputs (CUDA events, median, two input
         sets in turn) and reports their bandwidth (each input read once, each output
         written once) against a device-to-device copy (of 1 GiB, and of the models'
         64 MB), and torch's composed and fused forms of the same models on the same GPU.
      3. runs GELU + bias over more than 2^31 elements (8.6 GB per tensor), whose long long
         body must give the same bits as the int vector body on the same rows.
      Results: a table on stdout and $OUT/cinn_gpu.json (or --out).

Usage:
  python3 bench/cinn_gpu.py export /tmp/cinn_gpu            # here
  python3 bench/cinn_gpu.py run /tmp/cinn_gpu               # there
  compute-sanitizer --tool racecheck python3 bench/cinn_gpu.py run /tmp/cinn_gpu \
      --skip-bench --schedule block_per_row                 # there, the shared-memory kernels
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
N = 4096
# The numpy view of a recorded tensor (bf16 as its bits).
NP = {"float32": np.float32, "float64": np.float64, "bfloat16": np.uint16, "bool": np.uint8}


# --------------------------------------------------------------------------- export
def export_tests(folder, max_bytes):
    env = dict(os.environ, OAR_CINN_GPU_EXPORT=os.path.join(folder, "tests"),
               OAR_CINN_GPU_EXPORT_BYTES=str(max_bytes))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           os.path.join(ROOT, "tests", "python", "cinn")]
    r = subprocess.run(cmd, env=env, cwd=ROOT)
    if r.returncode not in (0, 1):  # 1: some test failed; the recorded calls still count
        raise SystemExit("cinn_gpu export: pytest exited with %d" % r.returncode)


def export_bench(folder):
    sys.path.insert(0, BENCH)
    sys.path.insert(0, os.path.join(ROOT, "tests", "python", "cinn"))
    import bench_cinn
    import cuda_check
    import oar
    from oar import _C

    oar.set_flags({"FLAGS_cinn_cache_dir": tempfile.mkdtemp(prefix="oar_cinn_gpu_")})
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((N, N)).astype("float32"))
    w = oar.to_tensor(rng.standard_normal(N).astype("float32"))
    cases = {name: (fn, (x, w)) for name, fn in bench_cinn.models(oar).items()}
    cases["adam"] = (lambda p, g, m, v: bench_cinn.adam_ops(p, g, m, v, oar.sqrt), bench_cinn.adam_inputs(oar, N))
    xb, wb = x.astype("bfloat16"), w.astype("bfloat16")  # bf16 storage (computed in float32)
    for name, fn in bench_cinn.models(oar).items():
        cases[name + "_bf16"] = (fn, (xb, wb))
    for name, fn in column_models().items():  # column reductions (bias gradients): atomics on the GPU
        cases[name] = (fn, (x, w))
    calls, kernels = [], {}
    _C.cinn.record_kernel_calls(True, 1 << 40)
    for name, (fn, args) in cases.items():
        f = oar.jit.to_static(fn, backend="CINN", full_graph=True)
        f(*args)
        for c in _C.cinn.take_kernel_calls():
            c["tag"] = name
            # shapes only, but for the small inputs (scalars, weights): their values
            c["inputs"] = [(dt, d, raw if len(raw) <= 1 << 16 else None) for dt, d, raw in c["inputs"]]
            c["outputs"] = [(dt, d, None) for dt, d, _ in c["outputs"]]
            calls.append(c)
    _C.cinn.record_kernel_calls(False)
    for k in _C.cinn.cuda_kernels():
        kernels[k["name"]] = dict(k, cubin=_C.cinn.nvrtc_compile(k["source"], k["name"], True)["binary"])
    n = cuda_check.write_export(os.path.join(folder, "bench"), kernels, calls)
    print("cinn_gpu export: %d bench kernel calls (%s)" % (n, ", ".join(sorted({c["tag"] for c in calls}))))


def column_models():
    """Column reductions as training backwards make them: a bias gradient (the column sum
    of the incoming gradient), an activation gradient with its bias gradient, and row sums
    beside column sums (LayerNorm's backward)."""
    def colsum(x, w):
        return (x * w).sum(axis=0)

    def act_grad_bias(x, w):  # relu' * g and its column sum, x standing for g and w for the bias
        d = x * (x + w > 0)
        return d, d.sum(axis=0)

    def norm_grad_sums(x, w):  # LayerNorm's backward sums: per row, and per column (dw, db)
        gw = x * w
        return gw.sum(axis=-1, keepdim=True), (gw * x).sum(axis=-1, keepdim=True), (x * x).sum(axis=0), x.sum(axis=0)

    return {"colsum": colsum, "act_grad_bias": act_grad_bias, "norm_grad_sums": norm_grad_sums}


# --------------------------------------------------------------------------- run
class Gpu:
    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.modules = {}
        self.tmp = tempfile.mkdtemp(prefix="cinn_gpu_")

    def kernel(self, data, e):
        name = e["name"]
        if name not in self.modules:
            path = os.path.join(self.tmp, name + ".cubin")
            data["k" + name].tofile(path)
            self.modules[name] = self.cp.RawModule(path=path).get_function(name)
        return self.modules[name]

    def launch(self, fn, e, ins, outs):
        args = [np.int64(e["rows"]), np.int64(e["cols"])]
        if e["col_outer"]:
            args.append(np.int64(e["inner"]))
        fn((int(e["grid"]),), (int(e["block"]),), tuple(args + ins + outs))

    def fresh_outputs(self, e):
        cp, outs = self.cp, []
        for (dt, dims), init in zip(e["outputs"], e["output_init"]):
            a = cp.empty(int(np.prod(dims)), dtype=NP[dt])  # flat: a 0-d array has no byte view
            if init == "none":
                a.view(cp.uint8).fill(0xFF)  # poison: every element must be written
            elif init == "zero":
                a.fill(0)
            else:
                assert dt in ("float32", "float64"), (e["name"], dt, init)
                a.fill(-np.inf if init == "-inf" else np.inf)
            outs.append(a)
        return outs


def as_float(a, dt):
    """A recorded tensor as float64 (bf16 from its bits)."""
    if dt == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def compare(got, want, dt):
    """'' when got matches want (see the module's docstring), else what differs."""
    if got.shape != want.shape:
        return "shape %s vs %s" % (got.shape, want.shape)
    if dt == "bool":
        bad = np.flatnonzero(got.ravel() != want.ravel())
        return "" if bad.size == 0 else "element %d: %d vs %d" % (bad[0], got.ravel()[bad[0]], want.ravel()[bad[0]])
    g, w = as_float(got, dt).ravel(), as_float(want, dt).ravel()
    gn, wn = np.isnan(g), np.isnan(w)
    if (gn != wn).any():
        i = np.flatnonzero(gn != wn)[0]
        return "NaN pattern at element %d: %r vs %r" % (i, g[i], w[i])
    gi, wi = np.isinf(g), np.isinf(w)
    if (gi != wi).any() or (g[wi] != w[wi]).any():
        i = np.flatnonzero((gi != wi) | (wi & (g != w)))[0]
        return "infinity at element %d: %r vs %r" % (i, g[i], w[i])
    ok = ~(wn | wi)
    if not ok.any():
        return ""
    scale = max(1.0, float(np.abs(w[ok]).max()))
    tol = {"float32": 1e-4, "float64": 1e-10, "bfloat16": 2e-2}[dt] * scale
    err = np.abs(g[ok] - w[ok])
    if err.max() > tol:
        i = np.flatnonzero(ok)[int(err.argmax())]
        return "element %d: %r vs %r (tolerance %.3g)" % (i, g[i], w[i], tol)
    return ""


def replay_tests(gpu, folder, schedule=None):
    cp = gpu.cp
    with open(os.path.join(folder, "manifest.json")) as f:
        entries = [e for e in json.load(f) if schedule in (None, e["schedule"])]
    data = np.load(os.path.join(folder, "data.npz"))
    fails, by_schedule = [], {}
    for e in entries:
        i = e["call"]
        ins = [cp.asarray(data["c%d_in%d" % (i, j)].view(NP[dt]).reshape(dims))
               for j, (dt, dims) in enumerate(e["inputs"])]
        try:
            fn = gpu.kernel(data, e)
            outs = gpu.fresh_outputs(e)
            gpu.launch(fn, e, ins, outs)
            cp.cuda.runtime.deviceSynchronize()
            why = ""
            for j, ((dt, dims), o) in enumerate(zip(e["outputs"], outs)):
                want = data["c%d_out%d" % (i, j)].view(NP[dt]).reshape(dims)
                why = compare(cp.asnumpy(o).reshape(dims), want, dt)
                if why:
                    why = "output %d: %s" % (j, why)
                    break
        except Exception as ex:  # a launch or load error: reported with the kernel
            why = "%s: %s" % (type(ex).__name__, ex)
        s = by_schedule.setdefault(e["schedule"], [0, 0])
        s[0] += 1
        if why:
            s[1] += 1
            fails.append({"name": e["name"], "schedule": e["schedule"], "rows": e["rows"], "cols": e["cols"],
                          "why": why, "loop_kernel": e["loop_kernel"], "source": e["source"]})
    return len(entries), fails, by_schedule


def timed(cp, fn, reps=30):
    """Median milliseconds of fn() by CUDA events (after 3 warm-up calls)."""
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(ts))


def bench(gpu, folder):
    cp = gpu.cp
    with open(os.path.join(folder, "manifest.json")) as f:
        entries = json.load(f)
    data = np.load(os.path.join(folder, "data.npz"))
    rows = {}
    # The copy ceiling: 1 GiB device to device, bytes read plus written.
    src = cp.random.standard_normal(1 << 28, dtype=cp.float32)
    dst = cp.empty_like(src)
    ms = timed(cp, lambda: cp.copyto(dst, src))
    rows["copy_gbs"] = 2 * src.nbytes / ms / 1e6
    # ... and at the models' size: [4096, 4096] float32, two buffers in turn
    pairs = [(cp.random.standard_normal(N * N, dtype=cp.float32), cp.empty(N * N, cp.float32)) for _ in range(2)]
    turn = [0]

    def copy_small():
        a, b = pairs[turn[0] % 2]
        turn[0] += 1
        cp.copyto(b, a)

    rows["copy_64mb_gbs"] = 2 * N * N * 4 / timed(cp, copy_small) / 1e6
    tags = {}
    for e in entries:
        tags.setdefault(e["tag"] if "tag" in e else e["name"], []).append(e)
    rng = cp.random.default_rng(0)
    for tag, es in tags.items():
        sets = []
        for _ in range(2):  # two input sets in turn, so no run reads another's inputs from L2
            launches = []
            nbytes = 0
            for e in es:
                ins = bench_inputs(cp, rng, data, e, e["inputs"])
                outs = gpu.fresh_outputs(e)
                nbytes += sum(a.nbytes for a in ins + outs)
                launches.append((gpu.kernel(data, e), e, ins, outs))
            sets.append(launches)
        turn = [0]

        def run_all():
            launches = sets[turn[0] % 2]
            turn[0] += 1
            for fn, e, ins, outs in launches:
                for o, init in zip(outs, e["output_init"]):
                    if init == "zero":
                        o.fill(0)  # counted: the launcher's share of the work
                    elif init != "none":
                        o.fill(-np.inf if init == "-inf" else np.inf)
                gpu.launch(fn, e, ins, outs)

        t = timed(cp, run_all)
        rows[tag + "_fused_ms"] = t
        if len(es) == 1:  # the grid the launch rule picks against others (the kernels stride over the rest)
            fn, e, ins, outs = sets[0][0]
            for grid in (66, 132, 264, 528, 1056, 2112, 4224, 8448, 16896):
                g = dict(e, grid=grid)
                rows["%s_grid%d_ms" % (tag, grid)] = timed(cp, lambda: gpu.launch(fn, g, ins, outs))
        rows[tag + "_kernels"] = len(es)
        rows[tag + "_fused_gbs"] = nbytes / t / 1e6
        rows[tag + "_of_copy"] = rows[tag + "_fused_gbs"] / rows["copy_gbs"]
        rows[tag + "_of_copy_64mb"] = rows[tag + "_fused_gbs"] / rows["copy_64mb_gbs"]
        if len(es) == 1:  # steady state: 16x the rows (1 GiB per [rows, 4096] tensor), the copy's size
            rows[tag + "_big_of_copy"] = big_rows(gpu, data, es[0], 16) / rows["copy_gbs"]
        if tag == "gelu_bias":  # past 2^31 elements: the long long body (Note [CUDA 32-bit indices])
            equal, gbs = wide_check(gpu, data, es[0])
            rows["gelu_bias_wide_equal"] = equal
            rows["gelu_bias_wide_of_copy"] = gbs / rows["copy_gbs"]
    bench_torch(cp, rows)
    return rows


def bench_inputs(cp, rng, data, e, shapes):
    """Inputs of shapes [(dtype, dims)] for bench call `e`: the recorded values where the
    export kept them (scalars, weights) and the shape is the recorded one, else random
    (standard normal; masks 0/1 at one half)."""
    ins = []
    for j, (dt, dims) in enumerate(shapes):
        key = "c%d_in%d" % (e["call"], j)
        if key in data and dims == e["inputs"][j][1]:
            ins.append(cp.asarray(data[key].view(NP[dt]).reshape(dims)))
        elif dt == "bool":
            ins.append((rng.random(dims) < 0.5).astype(cp.uint8))
        elif dt == "bfloat16":  # a float32 normal's upper half: its bf16 bits, rounded down
            ins.append((rng.standard_normal(dims, dtype=cp.float32).view(cp.uint32) >> 16).astype(cp.uint16))
        else:
            ins.append(rng.standard_normal(dims, dtype=cp.float32).astype(NP[dt]))
    return ins


def big_rows(gpu, data, e, times):
    """GB/s of kernel call `e` over `times` as many rows (its [rows, ...] inputs and outputs
    grown along the first axis; the kernel takes rows at run time)."""
    import re
    cp = gpu.cp
    rows = e["rows"] * times
    # Each tensor's class from the loop kernel ("n3:full = in1", "out n7"): full and row
    # tensors grow along their first axis, column, scalar and broadcast ones stay.
    lk = e["loop_kernel"]
    node_cls = dict(re.findall(r"^n(\d+):(\w+) =", lk, re.M))
    in_cls = {int(i): c for c, i in re.findall(r"^n\d+:(\w+) = in(\d+)$", lk, re.M)}
    outs = re.search(r"^out (.*)$", lk, re.M).group(1).split()  # "n6 n7/drop"
    out_cls = [node_cls[re.match(r"n(\d+)", o).group(1)] for o in outs]

    def grow(dims, cls):
        return [dims[0] * times] + dims[1:] if cls in ("full", "row") and dims else dims

    g = dict(e, rows=rows, inputs=[[dt, grow(d, in_cls.get(j))] for j, (dt, d) in enumerate(e["inputs"])],
             outputs=[[dt, grow(d, c if init == "none" else "col")]
                      for (dt, d), c, init in zip(e["outputs"], out_cls, e["output_init"])])
    g["grid"] = min(32 * 132, max(1, rows if g["schedule"] != "elementwise" else rows * e["cols"] // 256))
    ins = bench_inputs(cp, cp.random.default_rng(1), data, e, g["inputs"])
    outs = gpu.fresh_outputs(g)
    fn = gpu.kernel(data, g)
    ms = timed(cp, lambda: gpu.launch(fn, g, ins, outs), reps=10)
    return sum(a.nbytes for a in ins + outs) / ms / 1e6


def wide_check(gpu, data, e, elements=1 << 31):
    """Note [CUDA 32-bit indices]: elementwise call `e` (a [rows, cols] float32 kernel whose
    other inputs are columns or scalars) over more than `elements` (2^31), which takes the
    element-by-element body with long long indices. Its first and last 8 rows must equal
    the same rows launched alone (the int vector body). Returns (equal, its GB/s)."""
    cp = gpu.cp
    cols = e["cols"]
    rows = elements // cols + 8
    g = dict(e, rows=rows, inputs=[[dt, [rows] + d[1:] if j == 0 else d] for j, (dt, d) in enumerate(e["inputs"])],
             outputs=[[dt, [rows] + d[1:]] for dt, d in e["outputs"]])
    g["grid"] = 32 * 132
    ins = bench_inputs(cp, cp.random.default_rng(2), data, e, g["inputs"])
    outs = gpu.fresh_outputs(g)
    fn = gpu.kernel(data, g)
    gpu.launch(fn, g, ins, outs)
    equal = True
    for r0 in (0, rows - 8):  # the same 8 rows alone: the int vector body
        part = dict(e, rows=8, grid=8)
        sub_in = [a.reshape(-1)[r0 * cols:(r0 + 8) * cols] if j == 0 else a for j, a in enumerate(ins)]
        sub_out = gpu.fresh_outputs(dict(part, outputs=[[dt, [8] + d[1:]] for dt, d in e["outputs"]]))
        gpu.launch(fn, part, sub_in, sub_out)
        for big, small in zip(outs, sub_out):
            equal &= bool(cp.array_equal(big.reshape(-1)[r0 * cols:(r0 + 8) * cols].view(cp.uint32),
                                         small.view(cp.uint32)))
    ms = timed(cp, lambda: gpu.launch(fn, g, ins, outs), reps=5)
    gbs = sum(a.nbytes for a in ins + outs) / ms / 1e6
    ins.clear()
    outs.clear()
    cp.get_default_memory_pool().free_all_blocks()  # 17 GB
    return equal, gbs


def bench_torch(cp, rows):
    """torch's composed forms (bench_cinn.models on CUDA tensors) and fused kernels."""
    try:
        import torch
    except ImportError:
        return
    sys.path.insert(0, BENCH)
    import bench_cinn
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(N, N, device="cuda", generator=g)
    w = torch.randn(N, device="cuda", generator=g)
    own = {"rmsnorm": lambda: F.rms_norm(x, [N], w, 1e-6), "layernorm": lambda: F.layer_norm(x, [N], w, w, 1e-5),
           "softmax": lambda: torch.softmax(x, -1), "gelu_bias": lambda: F.gelu(x + w)}

    def torch_ms(fn):
        for _ in range(3):
            fn()
        ts = []
        for _ in range(30):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        return float(np.median(ts))

    for name, fn in bench_cinn.models(torch).items():
        rows[name + "_torch_composed_ms"] = torch_ms(lambda: fn(x, w))
        rows[name + "_torch_kernel_ms"] = torch_ms(own[name])
    for name, fn in column_models().items():
        rows[name + "_torch_composed_ms"] = torch_ms(lambda: fn(x, w))
    p, gr = torch.randn(N, N, device="cuda", generator=g), torch.randn(N, N, device="cuda", generator=g)
    m, v = torch.zeros(N, N, device="cuda"), torch.full((N, N), 0.01, device="cuda")
    rows["adam_torch_composed_ms"] = torch_ms(lambda: bench_cinn.adam_ops(p, gr, m, v, torch.sqrt))
    rows["gpu"] = torch.cuda.get_device_name()


def run(folder, out, schedule=None, skip_bench=False):
    gpu = Gpu()
    cp = gpu.cp
    dev = cp.cuda.runtime.getDeviceProperties(0)
    result = {"device": dev["name"].decode(), "sms": dev["multiProcessorCount"]}
    total, fails, by_schedule = replay_tests(gpu, os.path.join(folder, "tests"), schedule)
    result.update(replayed=total, failed=len(fails), by_schedule=by_schedule, failures=fails)
    if os.path.isdir(os.path.join(folder, "bench")) and not skip_bench:
        result["bench"] = bench(gpu, os.path.join(folder, "bench"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    for fl in fails[:20]:
        print("FAIL %s (%s, %dx%d): %s" % (fl["name"], fl["schedule"], fl["rows"], fl["cols"], fl["why"]))
    print("device: %s, %d multiprocessors" % (result["device"], result["sms"]))
    print("replayed %d kernel calls, %d differ from the CPU kernels" % (total, len(fails)))
    for s, (n, bad) in sorted(by_schedule.items()):
        print("  %-14s %5d calls, %d failed" % (s, n, bad))
    for k, v in sorted(result.get("bench", {}).items()):
        print("  %-28s %s" % (k, "%.4g" % v if isinstance(v, float) else v))
    return 0 if not fails else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=["export", "run"])
    ap.add_argument("folder")
    ap.add_argument("--max-bytes", type=int, default=1 << 20, help="export: largest recorded test call")
    ap.add_argument("--skip-tests", action="store_true", help="export: only the bench models")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "cinn_gpu.json"))
    ap.add_argument("--schedule", choices=["elementwise", "warp_per_row", "block_per_row"],
                    help="run: replay only this schedule's calls (under compute-sanitizer, say)")
    ap.add_argument("--skip-bench", action="store_true", help="run: the replay only")
    a = ap.parse_args()
    if a.step == "export":
        if not a.skip_tests:
            export_tests(a.folder, a.max_bytes)
        export_bench(a.folder)
        return 0
    return run(a.folder, a.out, a.schedule, a.skip_bench)


if __name__ == "__main__":
    sys.exit(main())
