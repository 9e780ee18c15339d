"""The pieces that need no second process: the TCP store, the post-accumulate hook, the
environment-driven basics, argument errors and fleet's strategy."""
import socket

import numpy as np
import pytest

import oar
import oar.distributed as dist
from oar.distributed import fleet

needs_gloo = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@needs_gloo
def test_tcp_store_set_get_add_wait():
    D = oar._C.distributed
    master = D.TCPStore("127.0.0.1", 0, True, 5.0)
    client = D.TCPStore("127.0.0.1", master.port, False, 5.0)
    client.set("a", b"\x00bytes\xff")
    assert master.get("a", 1.0) == b"\x00bytes\xff"
    assert master.add("n", 5) == 5 and client.add("n", -2) == 3
    assert client.check("a") and not client.check("missing")
    client.wait(["a", "n"], 1.0)
    with pytest.raises(D.CommunicationError, match="'missing' was not set within 0.2 s"):
        client.get("missing", 0.2)
    with pytest.raises(D.CommunicationError, match="keys not set .*: missing, other"):
        client.wait(["a", "missing", "other"], 0.2)


@needs_gloo
def test_store_port_taken_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(oar._C.distributed.CommunicationError,
                           match=f"cannot listen on 127.0.0.1:{port}: Address already in use"):
            oar._C.distributed.TCPStore("127.0.0.1", port, True, 2.0)


@needs_gloo
def test_init_parallel_env_on_a_taken_master_port(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
        monkeypatch.setenv("PADDLE_TRAINERS_NUM", "1")
        monkeypatch.setenv("PADDLE_MASTER", f"127.0.0.1:{port}")
        with pytest.raises(dist.CommunicationError, match=f"127.0.0.1:{port}: Address already in use"):
            dist.init_parallel_env()
    assert not dist.is_initialized()


@needs_gloo
def test_store_client_without_master_times_out_naming_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(oar._C.distributed.CommunicationError, match=f"127.0.0.1:{port} within"):
            oar._C.distributed.TCPStore("127.0.0.1", port, False, 0.5)


def test_post_accumulate_hook_runs_after_the_gradient_is_in_grad():
    w = oar.to_tensor(np.array([1.0, 2.0]), stop_gradient=False)
    seen = []
    hid = oar._C.distributed.register_post_accumulate_hook(w, lambda leaf: seen.append(leaf.grad.numpy()))
    (w * w).sum().backward()
    (3 * w).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(seen[1], [5.0, 7.0])  # accumulated: 2w + 3
    assert oar._C.distributed.remove_post_accumulate_hook(hid)
    (w * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="leaf with stop_gradient=False"):
        oar._C.distributed.register_post_accumulate_hook(oar.ones([2]), lambda leaf: None)


def test_basics_read_the_launcher_environment(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "4")
    assert dist.get_rank() == 3 and dist.get_world_size() == 4
    assert not dist.is_initialized()
    monkeypatch.delenv("PADDLE_MASTER", raising=False)
    monkeypatch.delenv("PADDLE_TRAINER_ENDPOINTS", raising=False)
    if oar._C.distributed.available:
        with pytest.raises(ValueError, match="needs PADDLE_MASTER"):
            dist.init_parallel_env()
    monkeypatch.setenv("PADDLE_TRAINER_ID", "5")
    if oar._C.distributed.available:
        with pytest.raises(ValueError, match=r"PADDLE_TRAINER_ID=5 must be in \[0, PADDLE_TRAINERS_NUM=4\)"):
            dist.init_parallel_env()
    with pytest.raises(RuntimeError, match="all_reduce: call oar.distributed.init_parallel_env"):
        dist.all_reduce(oar.ones([2]))


@needs_gloo
def test_job_of_one(monkeypatch):
    for k in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_MASTER", "PADDLE_TRAINER_ENDPOINTS"):
        monkeypatch.delenv(k, raising=False)
    g = dist.init_parallel_env()
    try:
        assert dist.is_initialized() and g.nranks == 1 and dist.get_rank() == 0
        t = oar.to_tensor(np.array([1.0, -2.0]))
        dist.all_reduce(t, dist.ReduceOp.MAX)
        np.testing.assert_allclose(t.numpy(), [1.0, -2.0])
        with pytest.raises(ValueError, match="all_reduce: op must be one of"):
            dist.all_reduce(t, op=7)
        with pytest.raises(ValueError, match="reduce_scatter: tensor_list must hold one tensor per rank"):
            dist.reduce_scatter(t, [t, t])
        model = oar.nn.Linear(2, 2)
        assert oar.DataParallel(model)(oar.ones([1, 2])).shape == [1, 2]
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_data_parallel_in_a_job_of_one_is_a_plain_wrapper(monkeypatch):
    for k in ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM"):
        monkeypatch.delenv(k, raising=False)
    model = oar.nn.Linear(3, 2)
    dp = oar.DataParallel(model)
    x = oar.ones([4, 3])
    np.testing.assert_allclose(dp(x).numpy(), model(x).numpy())
    assert list(dp.state_dict()) == list(model.state_dict())
    with dp.no_sync():
        dp(x).sum().backward()
    assert model.weight.grad is not None
    with pytest.raises(TypeError, match="DataParallel: layers must be an oar.nn.Layer"):
        oar.DataParallel(lambda x: x)


def test_fleet_strategy_and_errors():
    s = fleet.DistributedStrategy()
    s.hybrid_configs = {"dp_degree": 2, "mp_degree": 1, "pp_degree": 1}
    assert s.hybrid_configs["dp_degree"] == 2 and s.hybrid_configs["pp_degree"] == 1
    with pytest.raises(ValueError, match="mp_degree must be a positive int"):
        s.hybrid_configs = {"mp_degree": 0}
    with pytest.raises(ValueError, match="must equal the world size 1"):
        fleet.init(is_collective=True, strategy=s)
    with pytest.raises(RuntimeError, match="call fleet.init"):
        fleet.distributed_model(oar.nn.Linear(2, 2))
