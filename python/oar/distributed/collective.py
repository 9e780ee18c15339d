"""Process groups: init_parallel_env, new_group, destroy_process_group and the Group object.

The job's ranks meet through a TCP store that rank 0 hosts at PADDLE_MASTER (the launcher sets
it); every group is a C++ ProcessGroup (distributed/collective/process_group.h): on the Gloo
backend for CPU tensors, or, when the current device is a plugin's device at
init_parallel_env (oar.set_device('my_dev:0') first, as in Paddle), on the 'xccl' backend over
the plugin's collectives, on that device. PADDLE_DISTRI_BACKEND ('gloo', 'xccl', 'auto')
overrides the choice; new_group(backend=...) picks per group. Timeouts come from the `timeout`
argument, else PADDLE_DIST_TIMEOUT (seconds), else 30 minutes; OAR_DIST_DEBUG=1 compares shapes
and dtypes across ranks before each collective. See docs/distributed.md."""
import datetime
import os

from .. import _C
from .parallel_env import ParallelEnv

__all__ = ["CommunicationError", "Group", "ReduceOp", "init_parallel_env", "is_initialized", "is_available", "new_group",
           "get_group", "destroy_process_group", "get_rank", "get_world_size", "get_backend"]

_dist = _C.distributed
# What a failed collective raises (a RuntimeError): a timeout, a dead peer, a lost store.
CommunicationError = getattr(_dist, "CommunicationError", RuntimeError)


class ReduceOp:
    """How collectives combine values (Paddle's paddle.distributed.ReduceOp)."""
    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


class Group:
    """A set of ranks that run collectives together (Paddle's Group). On a process outside the
    group, rank is -1 and collectives on it return None."""

    def __init__(self, rank, gid, ranks, pg=None, name=None):
        self._rank = rank
        self.id = gid
        self.ranks = list(ranks)
        self.process_group = pg
        self.name = name or ("default" if gid == 0 else f"group_{gid}")

    @property
    def rank(self):
        return self._rank

    @property
    def nranks(self):
        return len(self.ranks)

    world_size = nranks

    @property
    def backend(self):
        return self.process_group.backend if self.process_group is not None else None

    def is_member(self):
        return self._rank >= 0

    def get_group_rank(self, rank):
        """The rank within this group of global rank `rank`, or -1 when it is not a member."""
        return self.ranks.index(rank) if rank in self.ranks else -1

    def __repr__(self):
        return f"Group(id={self.id}, rank={self._rank}, nranks={self.nranks}, ranks={self.ranks})"


class _State:
    store = None
    default_group = None
    groups = {}
    next_gid = 1
    hostname = "127.0.0.1"
    backend = "gloo"
    device = "cpu"
    timeout = None
    debug = False


def _timeout_seconds(timeout, op):
    if timeout is None:
        return _State.timeout if _State.timeout is not None else _dist.default_timeout()
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{op}: timeout must be a positive number of seconds or a timedelta, "
                         f"got {timeout!r}")
    return float(timeout)


def _split_endpoint(value, what):
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"init_parallel_env: {what} must be 'host:port', got {value!r}")
    return host, int(port)


def _require_dist(op):
    if not getattr(_dist, "available", False):
        raise RuntimeError(f"{op}: this build of Oar has no communication backend (it was built "
                           "without Gloo: apt install libgloo-dev, then rebuild with OAR_WITH_DIST=ON)")


_BACKENDS = ("gloo", "xccl")


def _check_backend(backend, op):
    name = str(backend).strip().lower()
    if name not in _BACKENDS:
        raise ValueError(f"{op}: backend {backend!r} is not available; this build has "
                         f"{', '.join(repr(b) for b in _BACKENDS)}")
    return name


def _backend_device(backend, op):
    """The device a group of `backend` communicates on: the current device for 'xccl'."""
    if backend == "gloo":
        return "cpu"
    from .._device import get_all_custom_device_type, get_device
    device = get_device()
    if device.split(":")[0] not in get_all_custom_device_type():
        raise ValueError(f"{op}: backend 'xccl' runs on a custom device, but the current device is "
                         f"{device!r}; call oar.set_device('my_dev:0') first (custom devices: "
                         f"{get_all_custom_device_type()})")
    return device


def _default_backend():
    """Paddle's choice: 'xccl' when the current device is a custom device, else 'gloo';
    PADDLE_DISTRI_BACKEND overrides it."""
    chosen = os.environ.get("PADDLE_DISTRI_BACKEND", "auto").strip().lower()
    if chosen not in ("", "auto"):
        return _check_backend(chosen, "init_parallel_env (PADDLE_DISTRI_BACKEND)")
    from .._device import get_all_custom_device_type, get_device
    return "xccl" if get_device().split(":")[0] in get_all_custom_device_type() else "gloo"


def is_initialized():
    """Whether init_parallel_env has set up the default process group."""
    return _State.default_group is not None


def is_available():
    """Whether the distributed package can be used: Oar was built with its communication
    backends (Gloo), as Paddle's paddle.distributed.is_available()."""
    return bool(_C.distributed.available)


def init_parallel_env(timeout=None):
    """Joins this process to the job the launcher described (PADDLE_TRAINER_ID,
    PADDLE_TRAINERS_NUM, PADDLE_MASTER) and returns the default Group. Rank 0 hosts the
    rendezvous store; every rank waits up to `timeout` (PADDLE_DIST_TIMEOUT) for the others."""
    _require_dist("init_parallel_env")
    if _State.default_group is not None:
        return _State.default_group
    env = ParallelEnv()
    rank, world = env.rank, env.world_size
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"init_parallel_env: PADDLE_TRAINER_ID={rank} must be in "
                         f"[0, PADDLE_TRAINERS_NUM={world})")
    master = os.environ.get("PADDLE_MASTER", "")
    if not master and env.trainer_endpoints:
        master = env.trainer_endpoints[0]
    if not master:
        if world > 1:
            raise ValueError("init_parallel_env: a job of several processes needs PADDLE_MASTER "
                             "(host:port of rank 0's store); start it with "
                             "python -m oar.distributed.launch")
        master = "127.0.0.1:0"  # a job of one: any free port
    host, port = _split_endpoint(master, "PADDLE_MASTER")
    if env.current_endpoint:
        _State.hostname = _split_endpoint(env.current_endpoint, "PADDLE_CURRENT_ENDPOINT")[0]
    else:
        _State.hostname = host if host not in ("localhost", "0.0.0.0") else "127.0.0.1"
    _State.timeout = _timeout_seconds(timeout, "init_parallel_env")
    _State.debug = os.environ.get("OAR_DIST_DEBUG", "0") not in ("", "0", "false", "False")
    backend = _default_backend()
    device = _backend_device(backend, "init_parallel_env")
    store = _dist.TCPStore(host, port, rank == 0, _State.timeout)
    pg = _dist.create_process_group(backend, rank, list(range(world)), "default", store,
                                    _State.hostname, _State.timeout, _State.debug, device)
    _State.backend, _State.device = backend, device
    _State.store = store
    # reshard and the dist layer create each mesh axis's group from this on first use
    _dist.set_comm_context(store, _State.hostname, _State.timeout, _State.debug, rank, pg)
    _State.default_group = Group(rank, 0, range(world), pg, "default")
    _State.groups = {0: _State.default_group}
    _State.next_gid = 1
    return _State.default_group


def _default_group(op):
    if _State.default_group is None:
        raise RuntimeError(f"{op}: call oar.distributed.init_parallel_env() first")
    return _State.default_group


def new_group(ranks=None, backend=None, timeout=None):
    """Creates a group of `ranks` (global ranks; all by default). Every process of the job
    must call it, in the same order, members or not. `backend` ('gloo' or 'xccl'; None: the
    default group's) picks how it communicates; 'xccl' uses the current device."""
    world = _default_group("new_group")
    backend = _State.backend if backend is None else _check_backend(backend, "new_group")
    device = _State.device if backend == _State.backend else _backend_device(backend, "new_group")
    ranks = sorted(world.ranks if ranks is None else [int(r) for r in ranks])
    bad = [r for r in ranks if not 0 <= r < world.nranks]
    if bad or len(set(ranks)) != len(ranks) or not ranks:
        raise ValueError(f"new_group: ranks must be distinct global ranks in [0, {world.nranks}), "
                         f"got {ranks}")
    gid = _State.next_gid
    _State.next_gid += 1
    me = world.rank
    pg = None
    if me in ranks:
        pg = _dist.create_process_group(backend, ranks.index(me), ranks, f"group_{gid}",
                                        _State.store, _State.hostname,
                                        _timeout_seconds(timeout, "new_group"), _State.debug, device)
    group = Group(ranks.index(me) if me in ranks else -1, gid, ranks, pg)
    _State.groups[gid] = group
    return group


def get_group(id=0):
    """The group with id `id` (0: the default group)."""
    return _State.groups.get(id)


def destroy_process_group(group=None):
    """Shuts down `group`, or every group and the store when None."""
    if group is None:
        if hasattr(_dist, "reset_comm_context"):
            _dist.reset_comm_context()
        for g in list(_State.groups.values()):
            if g.process_group is not None:
                g.process_group.shutdown()
        _State.groups = {}
        _State.default_group = None
        _State.store = None
        return
    if group.process_group is not None:
        group.process_group.shutdown()
    _State.groups.pop(group.id, None)
    if group is _State.default_group:
        _State.default_group = None


def _resolve(group, op):
    """The Group an op runs on (the default one when None)."""
    return _default_group(op) if group is None else group


def get_rank(group=None):
    """This process's rank: in the job (0 without a launcher), or in `group` (-1 outside it)."""
    if group is not None:
        return group.rank
    if _State.default_group is not None:
        return _State.default_group.rank
    return ParallelEnv().rank


def get_world_size(group=None):
    """How many processes the job (or `group`) has; 1 without a launcher."""
    if group is not None:
        return group.nranks
    if _State.default_group is not None:
        return _State.default_group.nranks
    return ParallelEnv().world_size


def get_backend(group=None):
    return _resolve(group, "get_backend").backend.upper()
