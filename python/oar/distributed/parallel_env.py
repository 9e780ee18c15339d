"""ParallelEnv: this process's place in a job, read from the launcher's environment.

Ordinary training code logs through get_rank/get_world_size and must import and run without a
launcher, so these read Paddle's variables, PADDLE_TRAINER_ID (rank) and PADDLE_TRAINERS_NUM
(world size), defaulting to a job of one."""
import os


def _env_int(name, default):
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"oar.distributed: environment variable {name} must be an integer, "
                         f"got {value!r}") from None


class ParallelEnv:
    """This process's place in the job, read from the launcher's environment when created
    (Paddle's paddle.distributed.ParallelEnv): rank 0 of 1 when no launcher set it. Like
    Paddle it does not judge the values; their users (init_parallel_env,
    DistributedBatchSampler) check them."""

    def __init__(self):
        self._rank = _env_int("PADDLE_TRAINER_ID", 0)
        self._world_size = _env_int("PADDLE_TRAINERS_NUM", 1)
        self._device_type = "cpu"
        self._device_id = 0
        self._current_endpoint = os.environ.get("PADDLE_CURRENT_ENDPOINT", "")
        endpoints = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        self._trainer_endpoints = endpoints.split(",") if endpoints else []

    @property
    def rank(self):
        return self._rank

    @property
    def world_size(self):
        return self._world_size

    @property
    def device_id(self):
        return self._device_id

    @property
    def device_type(self):
        return self._device_type

    @property
    def current_endpoint(self):
        return self._current_endpoint

    @property
    def trainer_endpoints(self):
        return list(self._trainer_endpoints)

    # Paddle's older names for the same values.
    local_rank = rank
    nranks = world_size
    dev_id = device_id
