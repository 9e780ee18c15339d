"""fleet's role makers and Paddle's non-distributed fallback of fleet.init(): the job's shape
read from the environment or from arguments, PS-runtime calls that only warn without servers,
and a parameter-server job refused. Each test uses its own Fleet (the module's is global)."""
import warnings

import numpy as np
import pytest

import oar
from _harness import assert_all_ok, run_ranks
from oar.distributed import fleet
from oar.distributed.fleet import Fleet, PaddleCloudRoleMaker, Role, UserDefinedRoleMaker

_ENV = ("PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS_NUM", "TRAINING_ROLE",
        "PADDLE_TRAINER_ID", "POD_IP", "PADDLE_PORT", "PADDLE_CURRENT_ENDPOINT")


@pytest.fixture
def clean_env(monkeypatch):
    """No launcher variables; the job of one fleet.init joins is left again afterwards."""
    from oar import distributed as dist
    for k in _ENV:
        monkeypatch.delenv(k, raising=False)
    yield monkeypatch
    if dist.is_initialized():
        dist.destroy_process_group()


def test_non_distributed_ps_fallback(clean_env):
    f = Fleet()
    assert f.init() is f
    assert f.is_worker() and f.is_first_worker() and not f.is_server()
    assert (f.worker_index(), f.worker_num(), f.server_num(), f.server_index()) == (0, 1, 0, 0)
    assert f.worker_endpoints() == [] and f.server_endpoints(to_string=True) == ""
    assert f._role_maker._is_non_distributed()
    f.barrier_worker()
    for name in ("init_worker", "init_server", "run_server", "stop_worker", "save_persistables", "set_date"):
        with pytest.warns(UserWarning, match=f"fleet.{name}\\(\\) does nothing in a non-distributed fleet"):
            assert getattr(f, name)() is None


def test_non_distributed_collective(clean_env):
    f = Fleet()
    f.init(is_collective=True)
    assert f.worker_endpoints(to_string=True) == "127.0.0.1:6170" and f.worker_num() == 1
    assert f.get_strategy().hybrid_configs["dp_degree"] == 1  # -1 completed to the world size


def test_all_reduce_one_worker(clean_env):
    f = Fleet()
    f.init()
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    for mode in ("sum", "mean", "max", "min"):
        np.testing.assert_array_equal(f.all_reduce(x, mode), x)  # one worker: the value itself
    assert f.all_reduce(5).item() == 5
    with pytest.raises(ValueError, match="fleet.all_reduce: mode must be .*got 'prod'"):
        f.all_reduce(x, "prod")
    with pytest.raises(TypeError, match="fleet.all_reduce: input must be numeric"):
        f.all_reduce(["a"])


def test_queries_before_init_and_bad_arguments(clean_env):
    f = Fleet()
    with pytest.raises(RuntimeError, match="fleet.worker_num: call fleet.init"):
        f.worker_num()
    with pytest.raises(RuntimeError, match="fleet.init_server: call fleet.init"):
        f.init_server()
    with pytest.raises(TypeError, match="fleet.init: is_collective must be a bool, got 'yes'"):
        f.init(is_collective="yes")
    with pytest.raises(TypeError, match="fleet.init: role_maker must be a RoleMakerBase.*got int"):
        f.init(3)
    with pytest.raises(ValueError, match="fleet.init: log_level must be one of .*got 'LOUD'"):
        f.init(log_level="LOUD")
    with pytest.raises(TypeError, match="fleet.init: strategy must be a DistributedStrategy, got dict"):
        f.init(strategy={})
    assert f.distributed_optimizer.__name__ == "distributed_optimizer"
    with pytest.raises(TypeError, match="fleet.distributed_optimizer: optimizer must be an Optimizer, got int"):
        f.distributed_optimizer(3)


def test_distributed_optimizer_before_init_keeps_strategy(clean_env):
    import oar
    f = Fleet()
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=oar.nn.Linear(2, 2).parameters())
    s = fleet.DistributedStrategy()
    s.conv_workspace_size_limit = 1024
    assert f.distributed_optimizer(opt, s) is opt
    assert f.get_strategy().conv_workspace_size_limit == 1024 and f.get_strategy() is not s


def test_paddle_cloud_role_maker_ps_env(clean_env):
    clean_env.setenv("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:36001,127.0.0.2:36001")
    clean_env.setenv("PADDLE_TRAINERS_NUM", "2")
    clean_env.setenv("TRAINING_ROLE", "PSERVER")
    clean_env.setenv("POD_IP", "127.0.0.2")
    clean_env.setenv("PADDLE_PORT", "36001")
    r = PaddleCloudRoleMaker(is_collective=False)
    assert r._is_server() and r._server_index() == 1 and r._server_num() == 2 and r._worker_num() == 2
    assert not r._is_non_distributed()
    with pytest.raises(NotImplementedError, match="parameter-server training .* is not supported"):
        Fleet().init(r)
    clean_env.setenv("TRAINING_ROLE", "TRAINER")
    clean_env.setenv("PADDLE_TRAINER_ID", "1")
    r = PaddleCloudRoleMaker()
    assert r._is_worker() and r._worker_index() == 1 and not r._is_first_worker()
    clean_env.setenv("TRAINING_ROLE", "BOSS")
    with pytest.raises(ValueError, match="TRAINING_ROLE must be TRAINER or PSERVER, got 'BOSS'"):
        PaddleCloudRoleMaker()._is_worker()
    clean_env.setenv("TRAINING_ROLE", "PSERVER")
    clean_env.setenv("PADDLE_PORT", "9")
    with pytest.raises(ValueError, match="127.0.0.2:9 .* is not in PADDLE_PSERVERS_IP_PORT_LIST"):
        PaddleCloudRoleMaker()._is_server()
    clean_env.setenv("PADDLE_PSERVERS_IP_PORT_LIST", "nohost")
    with pytest.raises(ValueError, match="endpoint 'nohost' is not 'ip:port'"):
        PaddleCloudRoleMaker()._server_num()


def test_paddle_cloud_role_maker_collective_env(clean_env):
    clean_env.setenv("PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.1:6171,10.0.0.2:6170")
    clean_env.setenv("PADDLE_TRAINER_ID", "2")
    r = PaddleCloudRoleMaker(is_collective=True)
    assert (r._worker_num(), r._worker_index(), r._node_num()) == (3, 2, 2)
    assert not r._is_non_distributed()
    with pytest.raises(ValueError, match="the role maker describes 3 workers but the process group has 1"):
        Fleet().init(r)
    clean_env.setenv("PADDLE_TRAINER_ID", "3")
    with pytest.raises(ValueError, match="PADDLE_TRAINER_ID=3 is outside the 3 trainer endpoints"):
        PaddleCloudRoleMaker(is_collective=True)._worker_num()
    with pytest.raises(TypeError, match="is_collective must be a bool, got 1"):
        PaddleCloudRoleMaker(is_collective=1)


def test_user_defined_role_maker(clean_env):
    r = UserDefinedRoleMaker(current_id=1, role=Role.SERVER, worker_num=2,
                             server_endpoints=["127.0.0.1:36011", "127.0.0.1:36012"])
    assert r._is_server() and r._server_index() == 1 and r._get_pserver_endpoints()[1] == "127.0.0.1:36012"
    assert "role=SERVER" in repr(r)
    with pytest.raises(NotImplementedError, match="parameter-server"):
        Fleet().init(r)
    w = UserDefinedRoleMaker(is_collective=True, current_id=0, worker_endpoints=["127.0.0.1:6170"])
    f = Fleet()
    f.init(w)
    assert f.worker_num() == 1 and f.is_first_worker()
    with pytest.raises(NotImplementedError, match="fleet.save_persistables: needs Paddle's fleet runtime"):
        f.save_persistables()  # a user-defined job is a real job: no warn-and-skip fallback
    with pytest.raises(ValueError, match="server current_id 2 is outside server_endpoints"):
        UserDefinedRoleMaker(current_id=2, role=Role.SERVER, worker_num=1, server_endpoints=["1.2.3.4:5"])
    with pytest.raises(ValueError, match="role must be Role.WORKER or Role.SERVER, got 7"):
        UserDefinedRoleMaker(role=7, worker_num=1)
    with pytest.raises(TypeError, match=r"unknown arguments \['workers'\]"):
        UserDefinedRoleMaker(workers=2)
    with pytest.raises(ValueError, match="worker_num must be a positive int"):
        UserDefinedRoleMaker(role=Role.WORKER)


def test_module_functions_and_auto_alias(clean_env):
    import oar.distributed.auto_parallel as ap
    assert fleet.auto is ap and fleet.auto.Strategy is ap.Strategy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in fleet.__all__:
            assert callable(getattr(fleet, name)), name


def test_collective_perf_arguments_and_one_worker(clean_env):
    f = Fleet()
    with pytest.raises(RuntimeError, match="fleet.collective_perf: call fleet.init"):
        f.collective_perf("allreduce")
    f.init(is_collective=True)
    with pytest.raises(ValueError, match="comm_type must be one of .*got 'alltoall'"):
        f.collective_perf("alltoall")
    with pytest.raises(ValueError, match="round must be a positive int, got 0"):
        f.collective_perf("allreduce", round=0)
    with pytest.raises(ValueError, match="size 2 must be an int of at least 4 bytes"):
        f.collective_perf("allreduce", size_and_time={2: 1.0})
    with pytest.raises(ValueError, match=r"size_and_time\[1024\]: the time limit must be a number"):
        f.collective_perf("allreduce", size_and_time={1024: "fast"})
    with pytest.warns(UserWarning, match="a job of one worker has nothing to communicate"):
        assert f.collective_perf("allreduce", size_and_time={1 << 30: 1}) == {}
    g = Fleet()
    g.init()
    with pytest.warns(UserWarning, match="collective_perf is for collective mode"):
        assert g.collective_perf("allreduce") == {}


@pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")
def test_fleet_on_two_ranks(tmp_path):
    results, _ = run_ranks("fleet_roles.py", 2, tmp_path=tmp_path)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        assert f"fleet roles ok {rank}" in out
