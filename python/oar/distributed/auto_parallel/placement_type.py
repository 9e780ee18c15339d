"""Placements (Paddle's dist.Shard / Replicate / Partial): how a tensor lies along one mesh
axis. A tensor on an N-d mesh has one placement per mesh axis. Note [Placements] in
docs/notes/distributed.md."""

__all__ = ["ReduceType", "Placement", "Shard", "Replicate", "Partial"]


class ReduceType:
    """How Partial pieces combine into the full tensor (values as in Paddle)."""
    kRedSum = 0
    kRedMax = 1
    kRedMin = 2
    kRedProd = 3
    kRedAvg = 4
    kRedAny = 5
    kRedAll = 6

    _names = {0: "kRedSum", 1: "kRedMax", 2: "kRedMin", 3: "kRedProd", 4: "kRedAvg", 5: "kRedAny",
              6: "kRedAll"}


class Placement:
    """Base of Shard, Replicate and Partial."""
    _kind = -1  # 0 Replicate, 1 Shard, 2 Partial: the form oar._C.dist takes

    def is_shard(self, dim=None):
        return False

    def is_replicated(self):
        return False

    def is_partial(self):
        return False

    def _encode(self):
        raise NotImplementedError


class Replicate(Placement):
    """Every process along the mesh axis holds the whole tensor."""
    _kind = 0

    def is_replicated(self):
        return True

    def _encode(self):
        return (0, -1, 0)

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"


class Shard(Placement):
    """The tensor's dimension `dim` is split in contiguous chunks along the mesh axis (the
    last chunk smaller when it does not divide evenly)."""
    _kind = 1

    def __init__(self, dim):
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"Shard: dim must be an int, got {type(dim).__name__} {dim!r}")
        self._dim = dim

    def get_dim(self):
        return self._dim

    def is_shard(self, dim=None):
        return dim is None or dim == self._dim

    def _encode(self):
        return (1, self._dim, 0)

    def __eq__(self, other):
        return isinstance(other, Shard) and other._dim == self._dim

    def __hash__(self):
        return hash(("Shard", self._dim))

    def __repr__(self):
        return f"Shard(dim={self._dim})"


class Partial(Placement):
    """Each process along the mesh axis holds a piece; the tensor is their reduction."""
    _kind = 2

    def __init__(self, reduce_type=ReduceType.kRedSum):
        if reduce_type not in ReduceType._names:
            raise ValueError(f"Partial: reduce_type must be a ReduceType value (0..6), got {reduce_type!r}")
        self._reduce_type = reduce_type

    def reduce_type(self):
        return self._reduce_type

    def is_partial(self):
        return True

    def _encode(self):
        return (2, -1, self._reduce_type)

    def __eq__(self, other):
        return isinstance(other, Partial) and other._reduce_type == self._reduce_type

    def __hash__(self):
        return hash(("Partial", self._reduce_type))

    def __repr__(self):
        return f"Partial(reduce_type={ReduceType._names[self._reduce_type]})"


def _decode(kind, dim, reduce):
    return Replicate() if kind == 0 else Shard(dim) if kind == 1 else Partial(reduce)


def _encode_all(placements, op):
    if not isinstance(placements, (list, tuple)):
        raise TypeError(f"{op}: placements must be a list of Shard/Replicate/Partial, got "
                        f"{type(placements).__name__}")
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"{op}: placements must be Shard/Replicate/Partial objects, got {p!r}")
    return [p._encode() for p in placements]
