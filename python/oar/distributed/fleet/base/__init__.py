"""fleet.base: role makers (which role this process plays) and the DistributedStrategy."""
from . import role_maker  # noqa: F401
from . import distributed_strategy  # noqa: F401
