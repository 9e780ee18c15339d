"""Role makers: which role (worker or parameter server) this process plays in a fleet job,
its index and the endpoints of the others, as Paddle's paddle.distributed.fleet.base.role_maker.

PaddleCloudRoleMaker reads the launcher's environment: collective jobs PADDLE_TRAINER_ID and
PADDLE_TRAINER_ENDPOINTS; parameter-server jobs PADDLE_PSERVERS_IP_PORT_LIST, TRAINING_ROLE,
PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID / POD_IP + PADDLE_PORT. Without them it falls back, as
Paddle does, to a non-distributed run: one worker of index 0 and no servers
(Note [Fleet without a job] in docs/notes/fleet.md). UserDefinedRoleMaker takes the same facts
as arguments. The role is generated lazily, on first query or by fleet.init."""
import os

__all__ = []


class Role:
    WORKER = 1
    SERVER = 2
    HETER_WORKER = 3
    ALL = 4
    COORDINATOR = 5


def _endpoints(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        value = [e for e in value.split(",") if e]
    if not isinstance(value, (list, tuple)) or not all(isinstance(e, str) for e in value):
        raise TypeError(f"{what} must be a list of 'ip:port' strings, got {value!r}")
    for e in value:
        host, sep, port = e.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"{what}: endpoint {e!r} is not 'ip:port'")
    return list(value)


def _env_int(name, required=True, default=None):
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        if required:
            raise ValueError(f"PaddleCloudRoleMaker: environment variable {name} is not set")
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"PaddleCloudRoleMaker: environment variable {name} must be an integer, "
                         f"got {value!r}") from None


class RoleMakerBase:
    """The interface fleet queries; subclasses fill the fields in _generate_role."""

    def __init__(self):
        self._is_collective = False
        self._worker_endpoints = []
        self._server_endpoints = []
        self._cur_endpoint = ""
        self._role_is_generated = False
        self._role = None
        self._current_id = -1
        self._trainers_num = 0
        self._non_distributed = False

    def _generate_role(self):
        raise NotImplementedError(f"{type(self).__name__}._generate_role: a role maker must define it")

    def _ensure(self):
        if not self._role_is_generated:
            self._generate_role()
            self._role_is_generated = True

    def _is_worker(self):
        self._ensure()
        return self._role == Role.WORKER

    def _is_server(self):
        self._ensure()
        return self._role == Role.SERVER

    def _is_coordinator(self):
        self._ensure()
        return self._role == Role.COORDINATOR

    def _is_first_worker(self):
        self._ensure()
        return self._role == Role.WORKER and self._current_id == 0

    def _worker_index(self):
        self._ensure()
        return self._current_id

    def _server_index(self):
        self._ensure()
        return self._current_id

    def _role_id(self):
        self._ensure()
        return self._current_id

    def _worker_num(self):
        self._ensure()
        return self._trainers_num

    def _server_num(self):
        self._ensure()
        return len(self._server_endpoints)

    def _node_num(self):
        self._ensure()
        return len({e.rpartition(":")[0] for e in self._worker_endpoints}) or 1

    _get_node_num = _node_num

    def _get_trainer_endpoints(self):
        self._ensure()
        return list(self._worker_endpoints)

    def _get_trainer_endpoint(self):
        self._ensure()
        if self._role != Role.WORKER:
            raise RuntimeError("role maker: _get_trainer_endpoint is for workers; this process is a server")
        return self._cur_endpoint

    def _get_pserver_endpoints(self):
        self._ensure()
        return list(self._server_endpoints)

    def _is_non_distributed(self):
        """True when no launcher described a job: the code runs as one plain process."""
        self._ensure()
        return self._non_distributed

    def __repr__(self):
        if not self._role_is_generated:
            return f"{type(self).__name__}(role not generated)"
        role = {Role.WORKER: "WORKER", Role.SERVER: "SERVER"}.get(self._role, str(self._role))
        return (f"{type(self).__name__}(role={role}, current_id={self._current_id}, "
                f"worker_num={self._trainers_num}, worker_endpoints={self._worker_endpoints}, "
                f"server_endpoints={self._server_endpoints})")


class PaddleCloudRoleMaker(RoleMakerBase):
    """The role from the launcher's environment (fleetrun / oar.distributed.launch)."""

    def __init__(self, is_collective=False, **kwargs):
        super().__init__()
        if not isinstance(is_collective, bool):
            raise TypeError(f"{type(self).__name__}: is_collective must be a bool, got {is_collective!r}")
        self._is_collective = is_collective
        self._kwargs = kwargs

    def _generate_role(self):
        if self._role_is_generated:
            return
        if self._is_collective:
            self._collective_env()
        else:
            self._ps_env()
        self._role_is_generated = True

    def _collective_env(self):
        self._role = Role.WORKER
        self._current_id = _env_int("PADDLE_TRAINER_ID", required=False, default=0)
        endpoints = os.environ.get("PADDLE_TRAINER_ENDPOINTS")
        if endpoints is None:  # no launcher: the world size alone, one local worker by default
            self._trainers_num = _env_int("PADDLE_TRAINERS_NUM", required=False, default=1)
            self._non_distributed = self._trainers_num == 1
            self._worker_endpoints = ["127.0.0.1:6170"] if self._non_distributed else []  # Paddle's placeholder
        else:
            self._worker_endpoints = _endpoints(endpoints, "PADDLE_TRAINER_ENDPOINTS")
            self._trainers_num = len(self._worker_endpoints)
        self._cur_endpoint = os.environ.get(
            "PADDLE_CURRENT_ENDPOINT", self._worker_endpoints[0] if self._worker_endpoints else "")
        if not 0 <= self._current_id < self._trainers_num:
            raise ValueError(f"PaddleCloudRoleMaker: PADDLE_TRAINER_ID={self._current_id} is outside the "
                             f"{self._trainers_num} trainer endpoints")

    def _ps_env(self):
        servers = os.environ.get("PADDLE_PSERVERS_IP_PORT_LIST")
        if servers is None:  # no launcher: one local worker, no servers
            self._role, self._current_id, self._trainers_num = Role.WORKER, 0, 1
            self._server_endpoints, self._worker_endpoints = [], []
            self._non_distributed = True
            return
        self._server_endpoints = _endpoints(servers, "PADDLE_PSERVERS_IP_PORT_LIST")
        self._worker_endpoints = _endpoints(os.environ.get("PADDLE_TRAINER_ENDPOINTS"),
                                            "PADDLE_TRAINER_ENDPOINTS")
        self._trainers_num = _env_int("PADDLE_TRAINERS_NUM")
        role = os.environ.get("TRAINING_ROLE")
        if role == "TRAINER":
            self._role = Role.WORKER
            self._current_id = _env_int("PADDLE_TRAINER_ID")
            if not 0 <= self._current_id < self._trainers_num:
                raise ValueError(f"PaddleCloudRoleMaker: PADDLE_TRAINER_ID={self._current_id} is outside "
                                 f"PADDLE_TRAINERS_NUM={self._trainers_num}")
            if self._current_id < len(self._worker_endpoints):
                self._cur_endpoint = self._worker_endpoints[self._current_id]
        elif role == "PSERVER":
            self._role = Role.SERVER
            ip = os.environ.get("POD_IP")
            if not ip:
                raise ValueError("PaddleCloudRoleMaker: environment variable POD_IP is not set")
            self._cur_endpoint = f"{ip}:{_env_int('PADDLE_PORT')}"
            if self._cur_endpoint not in self._server_endpoints:
                raise ValueError(f"PaddleCloudRoleMaker: this server's endpoint {self._cur_endpoint} "
                                 f"(POD_IP:PADDLE_PORT) is not in PADDLE_PSERVERS_IP_PORT_LIST "
                                 f"{self._server_endpoints}")
            self._current_id = self._server_endpoints.index(self._cur_endpoint)
        else:
            raise ValueError(f"PaddleCloudRoleMaker: TRAINING_ROLE must be TRAINER or PSERVER, got {role!r}")


class UserDefinedRoleMaker(PaddleCloudRoleMaker):
    """The role from arguments: current_id, role (Role.WORKER / Role.SERVER), worker_num,
    worker_endpoints, server_endpoints."""

    def __init__(self, is_collective=False, init_gloo=False, **kwargs):
        super().__init__(is_collective=is_collective, **kwargs)
        self._init_gloo = init_gloo
        known = {"current_id", "role", "worker_num", "worker_endpoints", "server_endpoints"}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"UserDefinedRoleMaker: unknown arguments {unknown} (known: {sorted(known)})")
        current_id = kwargs.get("current_id", 0)
        if isinstance(current_id, bool) or not isinstance(current_id, int) or current_id < 0:
            raise ValueError(f"UserDefinedRoleMaker: current_id must be a non-negative int, got {current_id!r}")
        role = kwargs.get("role", Role.WORKER)
        if role not in (Role.WORKER, Role.SERVER):
            raise ValueError(f"UserDefinedRoleMaker: role must be Role.WORKER or Role.SERVER, got {role!r}")
        self._worker_endpoints = _endpoints(kwargs.get("worker_endpoints"), "UserDefinedRoleMaker: worker_endpoints")
        self._server_endpoints = _endpoints(kwargs.get("server_endpoints"), "UserDefinedRoleMaker: server_endpoints")
        worker_num = kwargs.get("worker_num", len(self._worker_endpoints))
        if isinstance(worker_num, bool) or not isinstance(worker_num, int) or worker_num < 1:
            raise ValueError(f"UserDefinedRoleMaker: worker_num must be a positive int (or give "
                             f"worker_endpoints), got {worker_num!r}")
        if is_collective and role != Role.WORKER:
            raise ValueError("UserDefinedRoleMaker: a collective job has workers only, got role=Role.SERVER")
        if role == Role.SERVER and current_id >= len(self._server_endpoints):
            raise ValueError(f"UserDefinedRoleMaker: server current_id {current_id} is outside "
                             f"server_endpoints {self._server_endpoints}")
        if role == Role.WORKER and current_id >= worker_num:
            raise ValueError(f"UserDefinedRoleMaker: worker current_id {current_id} is outside worker_num {worker_num}")
        self._role, self._current_id, self._trainers_num = role, current_id, worker_num
        eps = self._server_endpoints if role == Role.SERVER else self._worker_endpoints
        self._cur_endpoint = eps[current_id] if current_id < len(eps) else ""
        self._role_is_generated = True  # every field came from the arguments

    def _generate_role(self):
        pass  # __init__ set every field from the arguments
