"""paddle.incubate.distributed: the parameter-server helpers that run in one process."""
