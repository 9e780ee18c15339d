"""oar.distributed's single-process basics: rank/world size from the launcher's environment
(PADDLE_TRAINER_ID / PADDLE_TRAINERS_NUM), a job of one without it."""
import pytest

import oar
import oar.distributed as dist


@pytest.fixture
def no_launcher(monkeypatch):
    for name in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_CURRENT_ENDPOINT",
                 "PADDLE_TRAINER_ENDPOINTS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_single_process_defaults(no_launcher):
    assert dist.get_rank() == 0
    assert dist.get_world_size() == 1
    assert dist.is_initialized() is False
    env = dist.ParallelEnv()
    assert (env.rank, env.world_size, env.local_rank, env.nranks) == (0, 1, 0, 1)
    assert (env.device_type, env.device_id, env.dev_id) == ("cpu", 0, 0)
    assert env.current_endpoint == "" and env.trainer_endpoints == []


def test_launcher_environment_is_read(no_launcher):
    no_launcher.setenv("PADDLE_TRAINER_ID", "2")
    no_launcher.setenv("PADDLE_TRAINERS_NUM", "4")
    no_launcher.setenv("PADDLE_CURRENT_ENDPOINT", "127.0.0.1:6172")
    no_launcher.setenv("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6170,127.0.0.1:6172")
    env = dist.ParallelEnv()
    assert (env.rank, env.world_size) == (2, 4)
    assert env.current_endpoint == "127.0.0.1:6172"
    assert env.trainer_endpoints == ["127.0.0.1:6170", "127.0.0.1:6172"]
    assert (dist.get_rank(), dist.get_world_size()) == (2, 4)


def test_sampler_reads_the_same_environment(no_launcher):
    no_launcher.setenv("PADDLE_TRAINER_ID", "1")
    no_launcher.setenv("PADDLE_TRAINERS_NUM", "2")
    sampler = oar.io.DistributedBatchSampler(list(range(8)), batch_size=2)
    assert (sampler.local_rank, sampler.nranks) == (dist.get_rank(), dist.get_world_size()) == (1, 2)


def test_bad_environment_and_groups_fail_clearly(no_launcher):
    no_launcher.setenv("PADDLE_TRAINER_ID", "one")
    with pytest.raises(ValueError, match="PADDLE_TRAINER_ID must be an integer, got 'one'"):
        dist.get_rank()
    no_launcher.delenv("PADDLE_TRAINER_ID")
    # A group answers for itself: -1 on a process outside it.
    outside = dist.Group(-1, 5, [0, 2])
    assert dist.get_rank(group=outside) == -1 and dist.get_world_size(group=outside) == 2
    assert outside.get_group_rank(2) == 1 and outside.get_group_rank(1) == -1
