"""Which parameter server holds each variable: RoundRobin or HashName over the endpoints."""
import zlib


def _name(var):
    n = getattr(var, "name", var)
    n = n() if callable(n) else n
    if not isinstance(n, str):
        raise TypeError(f"dispatch: expected variables or their names, got {type(var).__name__}")
    return n


class PSDispatcher:
    """Assigns variables to parameter-server endpoints."""

    def __init__(self, pserver_endpoints):
        if isinstance(pserver_endpoints, str) or not isinstance(pserver_endpoints, (list, tuple)) \
                or not pserver_endpoints:
            raise ValueError(f"{type(self).__name__}: pserver_endpoints must be a non-empty list of 'ip:port', got "
                             f"{pserver_endpoints!r}")
        self._eps = list(pserver_endpoints)
        self._step = 0

    @property
    def eps(self):
        return self._eps

    def reset(self):
        self._step = 0

    def dispatch(self, varlist):
        """The endpoint of each variable, in order."""
        raise NotImplementedError(f"{type(self).__name__} must define dispatch")


class HashName(PSDispatcher):
    """The endpoint chosen by a stable hash (CRC-32) of the variable's name."""

    def dispatch(self, varlist):
        return [self._eps[zlib.crc32(_name(v).encode()) % len(self._eps)] for v in varlist]


class RoundRobin(PSDispatcher):
    """Endpoints in turn, continuing from the last dispatch (reset() starts over)."""

    def dispatch(self, varlist):
        out = []
        for v in varlist:
            _name(v)
            out.append(self._eps[self._step])
            self._step = (self._step + 1) % len(self._eps)
        return out
