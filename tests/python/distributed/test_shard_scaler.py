"""paddle.distributed.shard_scaler: the inf/nan check reduced over the ranks, so every rank skips
the same steps and keeps the same loss scale (workers/shard_scaler.py)."""
import pytest

from _harness import assert_all_ok, run_ranks

import oar
import oar.distributed as dist

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("mode,marker", [("dense", "SCALER OK"), ("dist", "SCALER OK"),
                                         ("amp_o2", "SCALER OK"),
                                         ("control", "CONTROL DIVERGED")])
def test_shard_scaler_two_ranks(tmp_path, mode, marker):
    results, _ = run_ranks("shard_scaler.py", 2, [mode], timeout=120, tmp_path=tmp_path)
    assert_all_ok(results)
    for _, out in results:
        assert marker in out, out


def test_shard_scaler_rejects_non_scalers():
    with pytest.raises(TypeError, match="shard_scaler: scaler must be a paddle.amp.GradScaler"):
        dist.shard_scaler(object())


def test_shard_scaler_single_process_is_the_plain_scaler():
    # Without an initialized group the check is the rank's own: same steps as the plain one.
    def train(wrap):
        oar.seed(3)
        layer = oar.nn.Linear(3, 2)
        opt = oar.optimizer.SGD(0.1, parameters=layer.parameters())
        scaler = oar.amp.GradScaler(init_loss_scaling=8.0)
        if wrap:
            assert dist.shard_scaler(scaler) is scaler
        flags = []
        for step in range(3):
            x = oar.ones([2, 3]) * (float("inf") if step == 1 else 1.0)
            scaler.scale(layer(x).mean()).backward()
            scaler.step(opt)
            flags.append(scaler._found_inf)
            scaler.update()
            opt.clear_grad()
        return flags, [p.numpy().tolist() for p in layer.parameters()]
    assert train(True) == train(False)
    assert train(True)[0] == [False, True, False]
