"""Note [Tuning records]: a convolution geometry timed in one process is recorded, and a
later process takes the recorded pick without timing: the same algorithm, so the same bits.
Each test runs fresh processes (a table is read once per process) with its own records
directory (conftest turns the records off for every other test)."""
import glob
import os
import subprocess
import sys
import textwrap

import numpy as np

# Training (forward, data and filter gradients) and eager inference (the fused form)
# convolutions, a 3x3 one Winograd may take and a strided one.
CHILD = textwrap.dedent("""
    import sys, numpy as np, oar
    oar.set_num_threads(int(sys.argv[2]))
    F = oar.nn.functional
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8, 20, 20)).astype("float32")
    x = oar.to_tensor(a, stop_gradient=False)
    w = oar.to_tensor(0.1 * rng.standard_normal((16, 8, 3, 3)).astype("float32"), stop_gradient=False)
    y = F.conv2d(x, w, padding=1)
    (y * y).sum().backward()
    with oar.no_grad():
        z = F.relu(F.conv2d(oar.to_tensor(a), w, stride=2, padding=1))
    np.savez(sys.argv[1], y=y.numpy(), gx=x.grad.numpy(), gw=w.grad.numpy(), z=z.numpy())
""")


def run(tmp_path, name, threads=1, **env):
    """Runs CHILD in a fresh process; returns its arrays and its tuning log lines
    (`timed`: candidates timed, `recorded`: picks taken from the records)."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("OAR_CONV_ALGO", "FLAGS_cudnn_deterministic", "FLAGS_oar_tuning_cache", "XDG_CACHE_HOME")}
    e.update(OAR_CONV_TUNE_LOG="1", OMP_NUM_THREADS=str(threads))
    e.update({k: v for k, v in env.items() if v is not None})
    for k in [k for k, v in env.items() if v is None]:
        e.pop(k, None)
    out = tmp_path / f"{name}.npz"
    p = subprocess.run([sys.executable, "-c", CHILD, str(out), str(threads)], env=e, capture_output=True, text=True,
                       timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    log = [line for line in p.stderr.splitlines() if line.startswith("[oar conv tune]")]
    timed = [line for line in log if " ms" in line]
    recorded = [line for line in log if line.endswith("(recorded)")]
    assert len(timed) + len(recorded) == len(log), log
    return dict(np.load(out)), timed, recorded


def records(d):
    files = glob.glob(os.path.join(str(d), "conv-*.tsv"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        return files[0], f.read()


def test_a_later_process_takes_the_recorded_picks(tmp_path):
    d = tmp_path / "records"
    first, timed, recorded = run(tmp_path, "first", FLAGS_oar_tuning_cache=str(d))
    assert timed and not recorded
    path, text = records(d)
    lines = text.splitlines()
    assert lines[0].startswith("# oar tuning records v1: build ") and "onednn" in lines[0]
    assert len(lines) > 1 and all(len(line.split("\t")) == 2 for line in lines[1:])
    second, timed, recorded = run(tmp_path, "second", FLAGS_oar_tuning_cache=str(d))
    assert not timed and recorded
    assert len(recorded) >= len(lines) - 1 - sum(line.endswith(("\tsliced", "\twhole")) for line in lines)
    for k in first:
        np.testing.assert_array_equal(second[k], first[k], err_msg=k)
    assert records(d)[1] == text  # nothing timed, nothing new


def test_another_thread_count_is_timed_again(tmp_path):
    d = tmp_path / "records"
    run(tmp_path, "one", threads=1, FLAGS_oar_tuning_cache=str(d))
    n = len(records(d)[1].splitlines())
    _, timed, _ = run(tmp_path, "two", threads=2, FLAGS_oar_tuning_cache=str(d))
    assert timed
    assert len(records(d)[1].splitlines()) > n
    _, timed, recorded = run(tmp_path, "two_again", threads=2, FLAGS_oar_tuning_cache=str(d))
    assert not timed and recorded


def test_unknown_picks_and_garbage_are_timed_again(tmp_path):
    d = tmp_path / "records"
    ref, _, _ = run(tmp_path, "ref", FLAGS_oar_tuning_cache=str(d))
    path, text = records(d)
    head, *lines = text.splitlines()
    # every pick renamed to one no candidate has: each geometry is timed again
    with open(path, "w") as f:
        f.write(head + "\n" + "".join(line.split("\t")[0] + "\tno-such-candidate\n" for line in lines))
    got, timed, recorded = run(tmp_path, "renamed", FLAGS_oar_tuning_cache=str(d))
    assert timed and not recorded
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-4, atol=1e-4, err_msg=k)
    _, timed, recorded = run(tmp_path, "after_renamed", FLAGS_oar_tuning_cache=str(d))  # the new picks appended
    assert not timed and recorded
    # bytes that are no records file at all: timed, then the file is made anew
    with open(path, "wb") as f:
        f.write(bytes(range(256)) * 8)
    got, timed, recorded = run(tmp_path, "garbage", FLAGS_oar_tuning_cache=str(d))
    assert timed and not recorded
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-4, atol=1e-4, err_msg=k)
    assert records(d)[1].startswith("# oar tuning records v1: ")
    _, timed, recorded = run(tmp_path, "after_garbage", FLAGS_oar_tuning_cache=str(d))
    assert not timed and recorded


def test_default_directory_and_off(tmp_path):
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    run(tmp_path, "xdg", HOME=str(home), XDG_CACHE_HOME=str(xdg))
    records(xdg / "oar" / "tuning")
    run(tmp_path, "home", HOME=str(home))
    records(home / ".cache" / "oar" / "tuning")
    off = tmp_path / "off_home"
    off.mkdir()
    _, timed, _ = run(tmp_path, "off", HOME=str(off), FLAGS_oar_tuning_cache="0")
    assert timed and not list(off.rglob("*"))


def test_deterministic_and_forced_runs_neither_read_nor_write(tmp_path):
    d = tmp_path / "records"
    run(tmp_path, "seed", FLAGS_oar_tuning_cache=str(d))
    _, text = records(d)
    for env in ({"FLAGS_cudnn_deterministic": "1"}, {"OAR_CONV_ALGO": "onednn-plain"}):
        _, timed, recorded = run(tmp_path, "fixed", FLAGS_oar_tuning_cache=str(d), **env)
        assert not recorded
        assert records(d)[1] == text


def test_an_unwritable_directory_times_every_process(tmp_path):
    (tmp_path / "file").write_text("x")
    for name in ("a", "b"):
        _, timed, recorded = run(tmp_path, name, FLAGS_oar_tuning_cache=str(tmp_path / "file" / "sub"))
        assert timed and not recorded
