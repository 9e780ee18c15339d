"""oar.utils.run_check (paddle.utils.run_check): one real training step, checked."""
import pytest

import oar
from oar.utils import install_check


def test_run_check_prints_and_keeps_device(capsys):
    before = oar.get_device()
    oar.utils.run_check()
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Running verify Oar program")
    assert out[1] == f"Oar works well on 1 {before.split(':')[0].upper()}."
    assert out[2].startswith("Oar is installed successfully!")
    assert oar.get_device() == before


def test_train_one_step_lowers_the_loss():
    first, second = install_check._train_one_step(oar, oar.get_device())
    assert second < first


def test_run_check_fails_when_the_optimizer_does_nothing(monkeypatch):
    class NoStep(oar.optimizer.SGD):
        def step(self):
            pass

    monkeypatch.setattr(oar.optimizer, "SGD", NoStep)
    with pytest.raises(RuntimeError, match=r"run_check: one SGD step on cpu should lower the loss"):
        oar.utils.run_check()
