"""Global flags (FLAGS_* also read from the environment at import) and threads."""
from . import _C


def _strip(name):
    return name[len("FLAGS_"):] if name.startswith("FLAGS_") else name


def set_flags(flags):
    """oar.set_flags({'FLAGS_oar_check_nan_inf': True})"""
    if not isinstance(flags, dict):
        raise TypeError("set_flags: expected a dict of {'FLAGS_name': value}")
    for k, v in flags.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        _C.set_flag(_strip(k), str(v))


def get_flags(flags):
    """oar.get_flags('FLAGS_x') or get_flags([...]) -> {'FLAGS_x': value}"""
    names = [flags] if isinstance(flags, str) else list(flags)
    out = {}
    for n in names:
        v = _C.get_flag(_strip(n))
        if v in ("true", "false"):
            v = v == "true"
        else:
            try:
                v = int(v)
            except ValueError:
                try:
                    v = float(v)
                except ValueError:
                    pass
        out["FLAGS_" + _strip(n)] = v
    return out


def set_num_threads(n):
    _C.set_num_threads(int(n))


def get_num_threads():
    return _C.get_num_threads()
