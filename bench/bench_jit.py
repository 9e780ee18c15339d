"""Static-path suite (issue 6): to_static training steps vs eager, and predictor latency
vs ONNX Runtime and PyTorch, in one run.

    bash bench/run.sh jit [--threads 1]
    BENCH_JIT_CASES=infer bash bench/run.sh jit --threads 1 --frameworks oar   # inference only

Training step = forward + cross-entropy + backward + Adam step, float32, on the models
and shapes of bench_models.py (LeNet [64,1,28,28], ResNet-18 [16,3,64,64], a 4-layer
Transformer encoder [8,128,256]) plus an MLP 784-256-10 on [64,784]. oar runs each eagerly
and through oar.jit.to_static; torch runs eagerly.

Inference latency at batch 1 and 32 (LeNet 28x28, ResNet-18 64x64, Transformer seq 128):
oar's predictor (oar.jit.save -> oar.inference, IR optimizations on), ONNX Runtime on the
model oar.onnx.export wrote (sequential execution, intra-op threads as the run), and
torch eager under no_grad. `*_eager_infer_ms` is each framework's eager model in eval
under no_grad (torch's is its infer_ms). The derived rows give static/eager and
predictor/ORT.
"""
import os
import tempfile

import numpy as np

import bench_models
import common

TRAIN = ["mlp", "lenet", "resnet18", "transformer"]
INFER = [("lenet", (1, 28, 28)), ("resnet18", (3, 64, 64)), ("transformer", (128, 256))]
BATCHES = (1, 32)

METRICS = ([(f"{m}_train_ms", "ms", "low") for m in TRAIN]
           + [(f"{m}_train_eager_ms", "ms", "low") for m in TRAIN]
           + [(f"{m}_static_over_eager", "x", "low") for m in TRAIN]
           + [(f"{m}_b{b}_infer_ms", "ms", "low") for m, _ in INFER for b in BATCHES]
           + [(f"{m}_b{b}_eager_infer_ms", "ms", "low") for m, _ in INFER for b in BATCHES]
           + [(f"{m}_b{b}_ort_ms", "ms", "low") for m, _ in INFER for b in BATCHES]
           + [(f"{m}_b{b}_predictor_over_ort", "x", "low") for m, _ in INFER for b in BATCHES])

rng = np.random.default_rng(0)
TRAIN_DATA = {
    "mlp": (rng.standard_normal((64, 784), dtype=np.float32), rng.integers(0, 10, (64,))),
    "lenet": (bench_models.X_LENET, bench_models.Y_LENET),
    "resnet18": (bench_models.X_RES, bench_models.Y_RES),
    "transformer": (bench_models.X_TF, bench_models.Y_TF),
}


def ms(fn, repeat=5):
    return common.bench(fn, repeat=repeat) * 1e3


def repeats(model):
    return 3 if model in ("resnet18", "transformer") else 5


def infer_input(shape, batch):
    return np.random.default_rng(batch).standard_normal((batch,) + shape, dtype=np.float32)


# ---------------------------------------------------------------- torch
def torch_cases(torch):
    nn = torch.nn
    models = bench_models.torch_models(torch)
    models["mlp"] = lambda: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    def train(name):
        torch.manual_seed(0)
        model = models[name]()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        x, y = (torch.from_numpy(np.asarray(a)) for a in TRAIN_DATA[name])

        def step():
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return {f"{name}_train_ms": ms(step, repeats(name))}

    def infer(name, shape):
        model = models[name]().eval()
        out = {}
        with torch.no_grad():
            for b in BATCHES:
                x = torch.from_numpy(infer_input(shape, b))
                out[f"{name}_b{b}_infer_ms"] = ms(lambda: model(x), repeats(name))
                out[f"{name}_b{b}_eager_infer_ms"] = out[f"{name}_b{b}_infer_ms"]
        return out

    cases = {f"train_{m}": (lambda m=m: train(m)) for m in TRAIN}
    cases.update({f"infer_{m}": (lambda m=m, s=s: infer(m, s)) for m, s in INFER})
    return cases


# ---------------------------------------------------------------- oar
def oar_models(paddle):
    """bench_models' models plus the MLP 784-256-10 (the classes, keyed by name)."""
    nn = paddle.nn
    models = bench_models.oar_models(paddle)

    class MLP(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(784, 256), nn.Linear(256, 10)

        def forward(self, x):
            return self.fc2(paddle.nn.functional.relu(self.fc1(x)))

    models["mlp"] = MLP
    return models


def oar_cases(paddle, ort=True):
    """oar's cases; ort=False times the predictor alone (no ONNX export, no onnxruntime:
    bench_builds.py compares two builds' predictors, and an older build may lack the export)."""
    nn = paddle.nn
    models = oar_models(paddle)
    tmp = tempfile.mkdtemp(prefix="oar_bench_jit_")

    def train(name):
        # Eager and to_static steps of the same model, their repeats interleaved
        # (common.bench_pair): timed one after the other, drift alone moved the ratio by 10%.
        steps = []
        for static in (False, True):
            paddle.seed(0)
            model = models[name]()
            if static:
                model = paddle.jit.to_static(model)
            opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
            loss_fn = nn.CrossEntropyLoss()
            x, y = (paddle.to_tensor(np.asarray(a)) for a in TRAIN_DATA[name])

            def step(model=model, opt=opt, loss_fn=loss_fn, x=x, y=y):
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                opt.clear_grad()
            steps.append(step)
        eager, static = common.bench_pair(*steps, repeat=2 * repeats(name) + 1)
        return {f"{name}_train_eager_ms": eager * 1e3, f"{name}_train_ms": static * 1e3,
                f"{name}_static_over_eager": static / eager}

    def infer(name, shape):
        model = models[name]()
        model.eval()
        spec = [paddle.static.InputSpec([None] + list(shape), "float32", "x")]
        prefix = os.path.join(tmp, name)
        paddle.jit.save(model, prefix, input_spec=spec)
        config = paddle.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
        config.set_cpu_math_library_num_threads(paddle.get_num_threads())
        predictor = paddle.inference.create_predictor(config)
        sess = ort_session(model, prefix, spec, paddle.get_num_threads()) if ort else None
        out = {}
        for b in BATCHES:
            x = infer_input(shape, b)
            xt = paddle.to_tensor(x)
            with paddle.no_grad():
                np.testing.assert_allclose(model(xt).numpy(), predictor.run([xt])[0].numpy(), rtol=1e-3, atol=1e-3)
                out[f"{name}_b{b}_eager_infer_ms"] = ms(lambda: model(xt), 2 * repeats(name) + 1)
            if sess is None:
                out[f"{name}_b{b}_infer_ms"] = ms(lambda: predictor.run([xt]), 2 * repeats(name) + 1)
                continue
            feed = sess.get_inputs()[0].name
            ref = predictor.run([xt])[0].numpy()
            got = sess.run(None, {feed: x})[0]
            np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-3)  # same model on both sides
            # interleaved repeats, as the training steps: the ratio is what the table is for
            t_pred, t_ort = common.bench_pair(lambda: predictor.run([xt]), lambda: sess.run(None, {feed: x}),
                                              repeat=2 * repeats(name) + 1)
            out[f"{name}_b{b}_infer_ms"], out[f"{name}_b{b}_ort_ms"] = t_pred * 1e3, t_ort * 1e3
            out[f"{name}_b{b}_predictor_over_ort"] = out[f"{name}_b{b}_infer_ms"] / out[f"{name}_b{b}_ort_ms"]
        return out

    def ort_session(model, prefix, spec, threads):
        """The model as oar.onnx.export writes it, in an onnxruntime session (sequential
        execution, `threads` intra-op threads, whose spinning stops between runs)."""
        import onnxruntime

        paddle.onnx.export(model, prefix, input_spec=spec)
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # ONNX Runtime's intra-op workers spin on after a run by default and took the second
        # vCPU from the predictor's interleaved repeats (Transformer b32 at 2 threads: 132 ms
        # interleaved, 95 ms alone). Stopping the spin between runs keeps ORT's own time
        # (1.68 -> 1.70 ms ResNet-18 b1, 134 -> 131 ms Transformer b32) and the predictor's
        # (2.23 and 99 ms interleaved); allow_spinning 0 would also slow ORT inside a run
        # (ResNet-18 b1 1.96 ms).
        opts.add_session_config_entry("session.force_spinning_stop", "1")
        return onnxruntime.InferenceSession(prefix + ".onnx", opts, providers=["CPUExecutionProvider"])

    cases = {f"train_{m}": (lambda m=m: train(m)) for m in TRAIN}
    cases.update({f"infer_{m}": (lambda m=m, s=s: infer(m, s)) for m, s in INFER})
    return cases


def cases(fw, mod):
    """All cases, or those whose name starts with one of BENCH_JIT_CASES (comma list,
    e.g. BENCH_JIT_CASES=infer or infer_lenet,infer_resnet18)."""
    all_cases = torch_cases(mod) if fw == "torch" else oar_cases(mod)
    only = [p for p in os.environ.get("BENCH_JIT_CASES", "").split(",") if p]
    return {k: v for k, v in all_cases.items() if not only or any(k.startswith(p) for p in only)}


if __name__ == "__main__":
    common.main(__file__, METRICS, cases)
