"""Mutated files for every loader (issue 16): checkpoints (oar.load: Oar's and Paddle's), saved models
(oar.jit.load and the predictor, each file of the pair), and IR (oar.pir.parse text,
oar.pir.deserialize binary). Each mutation is a bit flip, an interesting byte, a
truncation, a splice of another region, an insertion or a deletion; a mutated file must
load or be rejected with a Python exception, never crash or hang. Runs on the same worker
pool as the API fuzzer; the mutated bytes travel inside the recipe, so a finding's
reproducer is one file."""
import base64
import os
import random
import time

PADDLE_CKPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "compat", "paddle331",
                           "adam.pdopt")
SEED_SCRIPT = """
import oar
class Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(4, 3)
        self.norm = oar.nn.LayerNorm(3)
    def forward(self, x):
        return oar.nn.functional.relu(self.norm(self.fc(x))).sum(axis=-1)
net = Net()
oar.save({"model": net.state_dict(), "step": 3, "lr": [0.1, 0.01]}, OUT + "/ckpt.pdparams")
spec = [oar.static.InputSpec([2, 4], "float32", "x")]
oar.jit.save(net, OUT + "/model", input_spec=spec)
prog = oar.pir.Program()
a = prog.add_parameter("a", [4, 8], "float32")
b = prog.add_parameter("b", [8, 2], "float32")
y = prog.add_op("matmul", [a, b]).result(0)
prog.add_output(prog.add_op("relu", [y]).result(0), "out")
open(OUT + "/prog.pir", "w").write(str(prog))
open(OUT + "/prog.bin", "wb").write(prog.serialize(with_parameter_data=True))
"""


def make_seeds(folder):
    """Writes one valid file per format, in a child so the parent never runs an op."""
    pid = os.fork()
    if pid == 0:
        try:
            exec(SEED_SCRIPT, {"OUT": folder})
            os._exit(0)
        except BaseException as e:  # noqa: BLE001 (report and leave the child)
            print("fuzz seed files:", repr(e))
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise RuntimeError("could not write the seed files")
    read = lambda n: open(os.path.join(folder, n), "rb").read()  # noqa: E731
    model, params = read("model.pdmodel"), read("model.pdiparams")
    return {  # fmt: (the file to mutate, its intact partner)
        "checkpoint": (read("ckpt.pdparams"), b""),
        # a checkpoint written by Paddle 3.3.1 (a pickle, Note [Paddle checkpoints])
        "paddle_checkpoint": (open(PADDLE_CKPT, "rb").read(), b""),
        "jit": (model, params), "jit_params": (params, model),
        "predictor": (model, params), "predictor_params": (params, model),
        "pir_text": (read("prog.pir"), b""), "pir_bin": (read("prog.bin"), b""),
    }


INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0xFE]


def mutate(data, rng, pool):
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.randrange(7)
        n = len(b)
        if n == 0:
            b += bytes([rng.randrange(256)])
            continue
        i = rng.randrange(n)
        if op == 0:      # bit flips
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:    # an interesting byte, or a little-endian int64 at i
            if rng.random() < 0.5:
                b[i] = rng.choice(INTERESTING)
            else:
                v = rng.choice([-1, 2**31, 2**62, 2**63 - 1, 0, 2**32 - 1])
                b[i:i + 8] = v.to_bytes(8, "little", signed=v < 0)
        elif op == 2:    # truncation
            del b[i:]
        elif op == 3:    # splice: a region of this or another seed file copied over i
            src = rng.choice(pool)
            j = rng.randrange(max(1, len(src)))
            b[i:i + rng.randrange(1, 64)] = src[j:j + rng.randrange(1, 64)]
        elif op == 4:    # insertion
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif op == 5:    # deletion
            del b[i:i + rng.randrange(1, 32)]
        else:            # a digit run in text formats becomes a huge or negative number
            b[i:i + 1] = rng.choice([b"99999999999999999999", b"-1", b"0", b"4611686018427387904"])
    return bytes(b)


def file_jobs(seeds, seed, per_format):
    pool = [d for d, _ in seeds.values()]
    for fmt, (data, other) in seeds.items():
        for i in range(per_format):
            rng = random.Random(f"{seed}:{fmt}:{i}")
            m = mutate(data, rng, pool)
            src = (f"load_as({fmt!r}, base64.b64decode({base64.b64encode(m).decode()!r}), "
                   f"base64.b64decode({base64.b64encode(other).decode()!r}))")
            yield (f"s{seed}{fmt}{i}", f"file:{fmt}", src)


def run_files(args):
    import tempfile

    from .pool import Pool
    with tempfile.TemporaryDirectory(prefix="oar-fuzz-seeds-") as d:
        seeds = make_seeds(d)
    pool = Pool(args.workers, args.timeout, args.findings)
    t0 = time.monotonic()
    stop_at = t0 + args.time if args.time else float("inf")
    done = 0
    for k in range(args.seeds):
        done += pool.run(file_jobs(seeds, args.seed + k, -(-args.mutations // args.seeds)), stop_at)
    elapsed = time.monotonic() - t0
    pool.close()
    pool.confirm(timeout=max(30.0, 2 * args.timeout))
    per_format = {}
    for key, n in pool.per_target.items():
        per_format[key] = n
    return {
        "mutations": done, "seconds": round(elapsed, 1),
        "per_format": per_format, "loaded_fine": sorted(pool.ok_targets),
        "crashes": sum(not f["kind"].startswith("hang") for f in pool.findings),
        "hangs": sum(f["kind"].startswith("hang") for f in pool.findings),
        "outcomes": dict(pool.outcomes.most_common()),
        "findings": [{k: f.get(k) for k in ("kind", "target", "file", "alone")} for f in pool.findings],
    }
