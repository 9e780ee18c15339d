"""The Fleet object behind oar.distributed.fleet's functions (Paddle's fleet.Fleet).

fleet.init(is_collective=True) joins the collective job the launcher described (or a job of
one); fleet.init() without is_collective asks for parameter-server training, which Oar runs
only in Paddle's non-distributed fallback: no PADDLE_PSERVERS_IP_PORT_LIST in the environment
means one local worker and no servers, and the parameter-server runtime calls (init_server,
save_persistables, ...) do nothing but warn, as in Paddle. A job that does name servers is
refused: Oar has no parameter-server runtime (Note [Fleet without a job] in docs/notes/fleet.md)."""
import copy
import logging
import warnings

import numpy as np

from .. import collective
from .base.distributed_strategy import DistributedStrategy, _DEGREES
from .base.role_maker import PaddleCloudRoleMaker, RoleMakerBase

__all__ = []

_PERF_OPS = {"allreduce", "broadcast", "reduce", "allgather", "reduce_scatter"}
_LOG_LEVELS = {"CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET"}
logger = logging.getLogger("oar.distributed.fleet")


class Fleet:
    def __init__(self):
        self._role_maker = None
        self.strategy = None
        self.user_defined_optimizer = None
        self.initialized = False

    def init(self, role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
        if isinstance(log_level, str):
            if log_level.upper() not in _LOG_LEVELS:
                raise ValueError(f"fleet.init: log_level must be one of {sorted(_LOG_LEVELS)} or an int, "
                                 f"got {log_level!r}")
            logger.setLevel(log_level.upper())
        elif isinstance(log_level, int) and not isinstance(log_level, bool):
            logger.setLevel(log_level)
        else:
            raise TypeError(f"fleet.init: log_level must be a str or an int, got {log_level!r}")
        strategy = strategy if strategy is not None else DistributedStrategy()
        if not isinstance(strategy, DistributedStrategy):
            raise TypeError(f"fleet.init: strategy must be a DistributedStrategy, got {type(strategy).__name__}")
        if role_maker is None:
            if not isinstance(is_collective, bool):
                raise TypeError(f"fleet.init: is_collective must be a bool, got {is_collective!r}")
            role_maker = PaddleCloudRoleMaker(is_collective=is_collective)
        elif not isinstance(role_maker, RoleMakerBase):
            raise TypeError(f"fleet.init: role_maker must be a RoleMakerBase (PaddleCloudRoleMaker, "
                            f"UserDefinedRoleMaker), got {type(role_maker).__name__}")
        role_maker._generate_role()
        role_maker._role_is_generated = True
        if not role_maker._is_collective and not role_maker._is_non_distributed():
            raise NotImplementedError(
                f"fleet.init: parameter-server training (servers {role_maker._get_pserver_endpoints()}) is not "
                "supported: Oar has no parameter-server runtime; use collective training "
                "(fleet.init(is_collective=True)) or run without a parameter-server launcher")
        world = collective.get_world_size()
        if role_maker._worker_num() != world:
            raise ValueError(f"fleet.init: the role maker describes {role_maker._worker_num()} workers but the "
                             f"process group has {world} (PADDLE_TRAINERS_NUM)")
        h = copy.deepcopy(strategy)._hybrid
        others = 1
        for key in _DEGREES:
            if key != "dp_degree":
                others *= h[key]
        if h["dp_degree"] == -1:
            if world % others:
                raise ValueError(f"fleet.init: world size {world} is not divisible by the product of the "
                                 f"non-dp degrees {others}")
            h["dp_degree"] = world // others
        if h["dp_degree"] * others != world:
            raise ValueError(f"fleet.init: the product of hybrid_configs' degrees {h['dp_degree'] * others} "
                             f"must equal the world size {world} (hybrid_configs "
                             f"{ {k: h[k] for k in _DEGREES} })")
        if world > 1 or collective._dist.available:
            collective.init_parallel_env()
        strategy._hybrid["dp_degree"] = h["dp_degree"]
        self._role_maker, self.strategy, self.initialized = role_maker, strategy, True
        return self

    def _check(self, op):
        if not self.initialized:
            raise RuntimeError(f"fleet.{op}: call fleet.init() first")

    def _role(self, op):
        self._check(op)
        return self._role_maker

    # -- the job's shape
    def is_first_worker(self):
        return self._role("is_first_worker")._is_first_worker()

    def worker_index(self):
        return self._role("worker_index")._worker_index()

    def worker_num(self):
        return self._role("worker_num")._worker_num()

    def node_num(self):
        return self._role("node_num")._node_num()

    def is_worker(self):
        return self._role("is_worker")._is_worker()

    def is_coordinator(self):
        return self._role("is_coordinator")._is_coordinator()

    def worker_endpoints(self, to_string=False):
        eps = self._role("worker_endpoints")._get_trainer_endpoints()
        return ",".join(eps) if to_string else eps

    def server_num(self):
        return self._role("server_num")._server_num()

    def server_index(self):
        return self._role("server_index")._server_index()

    def server_endpoints(self, to_string=False):
        eps = self._role("server_endpoints")._get_pserver_endpoints()
        return ",".join(eps) if to_string else eps

    def is_server(self):
        return self._role("is_server")._is_server()

    # -- worker communication
    def barrier_worker(self):
        self._check("barrier_worker")
        from ..communication import barrier
        if collective.is_initialized():
            barrier()

    def all_reduce(self, input, mode="sum"):
        """input (a number or nested lists) reduced over the workers, as a NumPy array."""
        self._check("all_reduce")
        if mode not in ("sum", "mean", "max", "min"):
            raise ValueError(f"fleet.all_reduce: mode must be 'sum', 'mean', 'max' or 'min', got {mode!r}")
        arr = np.asarray(input)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"fleet.all_reduce: input must be numeric, got dtype {arr.dtype}")
        if not collective.is_initialized() or collective.get_world_size() == 1:
            return arr.copy()  # one worker: the reduction of one value is itself
        import oar
        from ..communication import all_reduce
        from ..collective import ReduceOp
        t = oar.to_tensor(arr.astype(np.float64))
        all_reduce(t, op={"sum": ReduceOp.SUM, "mean": ReduceOp.SUM, "max": ReduceOp.MAX,
                          "min": ReduceOp.MIN}[mode])
        out = t.numpy()
        return out / collective.get_world_size() if mode == "mean" else out.astype(
            arr.dtype if arr.dtype.kind == "f" else np.float64)

    # -- optimizers and models
    def distributed_model(self, model):
        self._check("distributed_model")
        h = self.strategy._hybrid
        if any(h[k] > 1 for k in _DEGREES if k != "dp_degree"):
            raise NotImplementedError(
                f"fleet.distributed_model: hybrid_configs { {k: h[k] for k in _DEGREES} } asks for tensor, "
                "pipeline, sharding, sequence, expert or context parallelism; this fleet runs data "
                "parallelism only (use oar.distributed.auto_parallel for the others)")
        if collective.get_world_size() == 1:
            return model
        from ..parallel import DataParallel
        return DataParallel(model, comm_buffer_size=self.strategy.fuse_grad_size_in_MB,
                            find_unused_parameters=self.strategy.find_unused_parameters)

    def distributed_optimizer(self, optimizer, strategy=None):
        """The optimizer itself: DataParallel already averages gradients before step(). A strategy
        given here replaces fleet.init's (Paddle keeps it for compatibility)."""
        if not (hasattr(optimizer, "step") or hasattr(optimizer, "minimize")):
            raise TypeError(f"fleet.distributed_optimizer: optimizer must be an Optimizer, got "
                            f"{type(optimizer).__name__}")
        if strategy is not None:
            if not isinstance(strategy, DistributedStrategy):
                raise TypeError(f"fleet.distributed_optimizer: strategy must be a DistributedStrategy, got "
                                f"{type(strategy).__name__}")
            self.strategy = copy.deepcopy(strategy)
        self.user_defined_optimizer = optimizer
        return optimizer

    def get_strategy(self):
        return self.strategy

    def collective_perf(self, comm_type, round=50, size_and_time=None):
        """Times `round` runs of one collective per message size (bytes of float32) and warns
        where the mean exceeds the size's threshold in seconds (a negative one: no check).
        Returns {size: mean seconds}; {} in a job of one, which has nothing to communicate.
        The default sizes are 1 MiB .. 1 GiB without thresholds, as Paddle's."""
        self._check("collective_perf")
        if comm_type not in _PERF_OPS:
            raise ValueError(f"fleet.collective_perf: comm_type must be one of {sorted(_PERF_OPS)}, "
                             f"got {comm_type!r}")
        if isinstance(round, bool) or not isinstance(round, int) or round < 1:
            raise ValueError(f"fleet.collective_perf: round must be a positive int, got {round!r}")
        sizes = {1 << k: -1 for k in range(20, 31)} if not size_and_time else size_and_time
        if not isinstance(sizes, dict):
            raise TypeError(f"fleet.collective_perf: size_and_time must be a dict {{bytes: seconds}}, "
                            f"got {type(sizes).__name__}")
        for size, limit in sizes.items():
            if isinstance(size, bool) or not isinstance(size, int) or size < 4:
                raise ValueError(f"fleet.collective_perf: size_and_time: size {size!r} must be an int "
                                 "of at least 4 bytes")
            if isinstance(limit, bool) or not isinstance(limit, (int, float)):
                raise ValueError(f"fleet.collective_perf: size_and_time[{size}]: the time limit must be a "
                                 f"number of seconds, got {limit!r}")
        if not self._role_maker._is_collective:
            warnings.warn("fleet.collective_perf is for collective mode; nothing is timed", stacklevel=2)
            return {}
        world = collective.get_world_size()
        if world == 1 or not collective.is_initialized():
            warnings.warn("fleet.collective_perf: a job of one worker has nothing to communicate; "
                          "nothing is timed", stacklevel=2)
            return {}
        return {size: self._time_collective(comm_type, round, size, limit, world)
                for size, limit in sizes.items()}

    def _time_collective(self, comm_type, rounds, size, limit, world):
        import time

        import oar
        from .. import communication as comm
        n = max(world, size // 4 // world * world)  # reduce_scatter splits evenly
        x = oar.ones([n], dtype="float32")
        run = {"allreduce": lambda: comm.all_reduce(x),
               "broadcast": lambda: comm.broadcast(x, src=0),
               "reduce": lambda: comm.reduce(x, dst=0),
               "allgather": lambda: comm.all_gather(oar.empty([n * world], dtype="float32"), x),
               "reduce_scatter": lambda: comm.reduce_scatter(oar.empty([n // world], dtype="float32"), x)}[comm_type]
        run()  # warm-up: connections, buffers
        comm.barrier()
        start = time.perf_counter()
        for _ in range(rounds):
            run()
        comm.barrier()
        mean = (time.perf_counter() - start) / rounds
        if 0 <= limit < mean:
            logger.warning("fleet.collective_perf: %s of %d bytes took %.6f s on average over %d rounds, "
                           "over the %.6f s limit", comm_type, size, mean, rounds, limit)
        return mean


def _ps_runtime(name, doc):
    """A parameter-server runtime call: in the non-distributed fallback Paddle warns and does
    nothing; a parameter-server job never gets here (fleet.init refuses it), and a collective
    job of several processes has no such runtime in Oar."""
    def method(self, *args, **kwargs):
        if not self._role(name)._is_non_distributed():
            raise NotImplementedError(f"fleet.{name}: needs Paddle's fleet runtime, which Oar does not "
                                      "have; save and load with oar.save / oar.load or "
                                      "oar.distributed.save_state_dict / load_state_dict")
        warnings.warn(f"fleet.{name}() does nothing in a non-distributed fleet (no parameter servers)",
                      stacklevel=2)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


for _name, _doc in [
        ("init_worker", "Connects a worker to the parameter servers."),
        ("init_server", "Starts the parameter-server tables (optionally from a saved model)."),
        ("run_server", "Serves the tables until stop_worker."),
        ("stop_worker", "Disconnects a worker from the parameter servers."),
        ("load_model", "Loads the servers' tables from a path."),
        ("load_one_table", "Loads one server table from a path."),
        ("load_inference_model", "Loads the servers' inference tables."),
        ("save_inference_model", "Saves the servers' tables for inference."),
        ("save_persistables", "Saves the servers' tables and the dense parameters."),
        ("save_one_table", "Saves one server table."),
        ("save_dense_params", "Saves the dense parameters held by the servers."),
        ("save_cache_model", "Saves the servers' cache tables."),
        ("set_date", "Sets the date of a sparse table (for its decay)."),
        ("print_table_stat", "Prints a server table's statistics."),
        ("shrink", "Drops stale features from the sparse tables.")]:
    setattr(Fleet, _name, _ps_runtime(_name, _doc))
