"""paddle.distributed.shard_scaler: a GradScaler whose inf/nan check agrees on every rank."""

__all__ = ["shard_scaler"]


def _reduce_ranks(optimizer):
    """The global ranks whose gradients the optimizer's parameters span: the union of the
    dist parameters' meshes, or None (the whole world) when none is a dist tensor."""
    ranks = set()
    for group in getattr(optimizer, "_param_groups", None) or []:
        for p in group["params"]:
            if p.is_dist():
                ranks.update(int(r) for r in p.process_mesh.process_ids)
    return sorted(ranks) or None


def shard_scaler(scaler):
    """Turns a single-device `paddle.amp.GradScaler` into the distributed view (in place; the
    scaler is returned): each rank checks its local part of every gradient for inf/nan, then
    the flags are reduced (MAX) over the ranks of the parameters' meshes (the whole world
    for dense parameters), so every rank skips the same steps and keeps the same scale."""
    from ..amp.grad_scaler import AmpScaler
    if not isinstance(scaler, AmpScaler):
        raise TypeError(f"shard_scaler: scaler must be a paddle.amp.GradScaler, got "
                        f"{type(scaler).__name__}")
    groups = {}  # ranks -> Group (made once: new_group is collective over its members)

    def check_view(grad):
        return grad._local_value() if grad.is_dist() else grad

    def reduce_found_inf(found_inf, optimizer):
        import oar
        from . import collective, communication
        if not collective.is_initialized():
            return found_inf
        ranks = _reduce_ranks(optimizer)
        world = collective.get_world_size()
        if ranks is not None and ranks != list(range(world)):
            if collective.get_rank() not in ranks:
                return found_inf
            if tuple(ranks) not in groups:
                groups[tuple(ranks)] = collective.new_group(ranks)
            group = groups[tuple(ranks)]
        else:
            group = None
        flag = oar.to_tensor([1 if found_inf else 0], dtype="int32")
        communication.all_reduce(flag, op=communication.ReduceOp.MAX, group=group)
        return bool(int(flag.numpy()[0]))

    scaler._check_view = check_view
    scaler._reduce_found_inf = reduce_found_inf
    return scaler
