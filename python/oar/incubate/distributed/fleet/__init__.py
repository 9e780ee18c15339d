"""paddle.incubate.distributed.fleet (parameter-server fleet, single process)."""
