"""python -m oar.distributed.launch: starts one worker process per rank (Paddle's
paddle.distributed.launch). See main.py and docs/distributed.md."""
from .main import launch  # noqa: F401
