"""oar.random: Paddle's paddle.random namespace (the default generator's seed and state)."""
from ._creation import get_rng_state, seed, set_rng_state
from ._random_more import get_cuda_rng_state, set_cuda_rng_state

__all__ = ["seed", "get_rng_state", "set_rng_state", "get_cuda_rng_state",
           "set_cuda_rng_state", "initial_seed"]


def initial_seed():
    """The seed the default generator's current stream started from (an int)."""
    from ._random import Generator

    return Generator().initial_seed()
