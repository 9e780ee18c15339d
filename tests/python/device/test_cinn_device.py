"""The fusion compiler on a plugin device (Note [Places the compiler serves] in
cinn/pipeline.cc). Its kernels are host code: a to_static program converted for a device
with backend='CINN' keeps its ops unfused, each lowered for the device as without the
compiler, with one warning per device type; a program compiled for the CPU and run on a
device runs its compiled kernels like CPU kernels of the fallback, on host copies. The
sample device's memory is not mapped on the host, so a kernel reading it directly would
crash the process (it did, before this)."""
import numpy as np
import pytest

import oar
from oar import _C, nn
from sample_plugin import run_with_sample

pytestmark = pytest.mark.skipif(not oar.is_compiled_with_cinn(), reason="built without LLVM 19 (no CINN)")


def gelu_bias(x, w):
    return nn.functional.gelu(x + w) * 2.0


def inputs(place="cpu", seed=0):
    rng = np.random.default_rng(seed)
    xs, ws = rng.standard_normal((64, 128)).astype("float32"), rng.standard_normal(128).astype("float32")
    return oar.to_tensor(xs, place=place), oar.to_tensor(ws, place=place)


def kinds(program):
    return str(program)  # the printed program; the tests look for kernel.compiled_kernel


def test_to_static_with_cinn_on_a_device_runs_unfused_and_equal(sample):
    want = gelu_bias(*inputs()).numpy()
    before = _C.cinn.cache_stats()
    fn = oar.jit.to_static(gelu_bias, backend="CINN")
    got = fn(*inputs("sample:0"))
    assert got.place.device_str() == "sample:0"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    (prog,) = fn.concrete_programs
    assert "kernel.compiled_kernel" not in kinds(prog.executed_program)
    after = _C.cinn.cache_stats()
    assert (after["compiles"], after["memory_hits"], after["disk_hits"]) == (
        before["compiles"], before["memory_hits"], before["disk_hits"])
    # the same function on the CPU compiles its group
    cpu = oar.jit.to_static(gelu_bias, backend="CINN")
    np.testing.assert_allclose(cpu(*inputs()).numpy(), want, rtol=1e-5, atol=1e-6)
    assert "kernel.compiled_kernel" in kinds(cpu.concrete_programs[0].executed_program)


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


def train(device, cinn, steps=5):
    oar.seed(3)
    model = Block()
    model.to(device)
    oar.set_device(device)
    try:
        model = oar.jit.to_static(model, backend="CINN" if cinn else None)
        opt = oar.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())
        rng = np.random.default_rng(5)
        losses = []
        for _ in range(steps):
            x = oar.to_tensor(rng.standard_normal((8, 16)).astype("float32"))
            y = oar.to_tensor(rng.integers(0, 4, (8, 1)).astype("int64"))
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(loss.item())
        return np.array(losses), model
    finally:
        oar.set_device("cpu")


def test_training_under_cinn_on_a_device_equals_the_cpu(sample):
    ref, _ = train("cpu", cinn=True)
    got, model = train("sample:0", cinn=True)
    plain, _ = train("sample:0", cinn=False)
    assert ref[-1] < ref[0]
    np.testing.assert_allclose(got, plain, rtol=1e-6)
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    (prog,) = model.forward.concrete_programs
    assert prog.place.device_str() == "sample:0"
    for p in (prog.executed_program, prog.executed_backward_program):
        assert "kernel.compiled_kernel" not in kinds(p)


def exp_bias(x, w):
    return oar.exp(x + w) * w  # no constant: the program is the group alone


def test_a_cpu_compiled_program_runs_its_kernels_on_host_copies(sample):
    fn = oar.jit.to_static(exp_bias, backend="CINN")
    want = fn(*inputs()).numpy()
    lowered = fn.concrete_programs[0].program.run_pipeline("cinn", lower_copy=True)  # for the CPU
    assert "kernel.compiled_kernel" in kinds(lowered) and "phi_kernel" not in kinds(lowered), kinds(lowered)
    sample0 = oar.CustomPlace("sample", 0)
    (got,) = _C.pir.Executor(lowered, sample0).run(list(inputs("sample:0")), {})
    assert got.place.device_str() == "sample:0"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    oar.set_flags({"FLAGS_enable_api_kernel_fallback": False})
    try:
        with pytest.raises(TypeError, match=r"Executor: the compiled kernel cinn_[0-9a-f]+ is host code and "
                                            r"FLAGS_enable_api_kernel_fallback is off, so it does not run on "
                                            r"sample:0"):
            _C.pir.Executor(lowered, sample0)
    finally:
        oar.set_flags({"FLAGS_enable_api_kernel_fallback": True})


def test_the_device_warning_is_printed_once(sample):
    r = run_with_sample(
        "import oar\n"
        "from test_cinn_device import gelu_bias, inputs\n"
        "for seed in range(3):\n"
        "    f = oar.jit.to_static(lambda x, w: gelu_bias(x, w) + seed, backend='CINN')\n"
        "    f(*inputs('sample:0', seed))\n")
    lines = [ln for ln in r.stderr.splitlines() if "cinn:" in ln]
    assert lines == ["oar: warning: cinn: the fusion compiler generates host code only; the program for "
                     "sample:0 runs unfused"], r.stderr
