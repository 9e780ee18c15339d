"""FLAGS_cudnn_deterministic (Paddle's flag for reproducible convolutions): Oar's CPU
convolutions time their candidate algorithms once per geometry and process and keep the
fastest, so two processes under load may pick different ones (results equal to ~1e-6,
not bit-equal). With the flag set nothing is timed: every process takes the same
algorithm, oneDNN's preferred, so the same bits. Each case runs in fresh processes (the
choices are cached per process); OAR_CONV_TUNE_LOG=1 prints what was timed."""
import os
import subprocess
import sys

import numpy as np

import oar

CODE = r"""
import sys
import numpy as np
import oar
import oar.nn.functional as F
rng = np.random.default_rng(0)
outs = []
# geometries with several candidates (blocked vs plain layouts, im2col)
for (n, c, h, k, o, stride) in [(2, 16, 14, 3, 32, 1), (1, 3, 32, 5, 8, 2), (4, 64, 7, 1, 64, 1)]:
    x = oar.to_tensor(rng.standard_normal((n, c, h, h)).astype("float32"))
    w = oar.to_tensor(rng.standard_normal((o, c, k, k)).astype("float32") * 0.1)
    outs.append(F.conv2d(x, w, stride=stride, padding=k // 2).numpy())
# the fused forward (conv + bias + relu) of a saved model run by the predictor
oar.seed(0)
net = oar.nn.Sequential(oar.nn.Conv2D(3, 16, 3, padding=1), oar.nn.ReLU())
net.eval()
path = sys.argv[1]
oar.jit.save(net, path, input_spec=[oar.static.InputSpec([None, 3, 16, 16], "float32", "x")])
pred = oar.inference.create_predictor(oar.inference.Config(path + ".pdmodel", path + ".pdiparams"))
h = pred.get_input_handle(pred.get_input_names()[0])
xi = rng.standard_normal((2, 3, 16, 16)).astype("float32")
h.reshape(xi.shape)
h.copy_from_cpu(xi)
pred.run()
outs.append(pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu())
np.save(sys.argv[2], np.concatenate([o.ravel() for o in outs]))
"""


def run(tmp_path, tag, **env):
    out = tmp_path / f"{tag}.npy"
    e = {k: v for k, v in os.environ.items() if k not in ("FLAGS_cudnn_deterministic", "OAR_CONV_ALGO")}
    e.update(OAR_CONV_TUNE_LOG="1", **env)
    r = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / tag), str(out)], capture_output=True,
                       text=True, env=e, timeout=300)
    assert r.returncode == 0, r.stderr
    return np.load(out), [l for l in r.stderr.splitlines() if l.startswith("[oar conv tune]")]


def test_the_flag_picks_without_timing_and_gives_the_same_bits(tmp_path):
    tuned, tuned_log = run(tmp_path, "tuned")
    assert len(tuned_log) >= 2, "these geometries have several candidates: the default times them"
    a, a_log = run(tmp_path, "det_a", FLAGS_cudnn_deterministic="1")
    b, b_log = run(tmp_path, "det_b", FLAGS_cudnn_deterministic="1")
    assert a_log == [] and b_log == []  # nothing timed
    np.testing.assert_array_equal(a, b)
    # the same algorithm as forcing oneDNN's preferred one
    forced, _ = run(tmp_path, "forced", FLAGS_cudnn_deterministic="1", OAR_CONV_ALGO="onednn")
    np.testing.assert_array_equal(a, forced)
    np.testing.assert_allclose(a, tuned, rtol=1e-4, atol=1e-5)  # and the tuned choice agrees to rounding


def test_the_flag_reads_back_and_is_off_by_default():
    assert oar.get_flags("FLAGS_cudnn_deterministic") == {"FLAGS_cudnn_deterministic": False}
    oar.set_flags({"FLAGS_cudnn_deterministic": True})
    try:
        assert oar.get_flags(["FLAGS_cudnn_deterministic"]) == {"FLAGS_cudnn_deterministic": True}
    finally:
        oar.set_flags({"FLAGS_cudnn_deterministic": False})
