"""Global flags (FLAGS_* also read from the environment at import) and threads."""
from . import _C


def _strip(name):
    return name[len("FLAGS_"):] if name.startswith("FLAGS_") else name


# Paddle's names of Oar's own flags.
_ALIASES = {"check_nan_inf": "oar_check_nan_inf"}
# Paddle flags that tune machinery Oar does not have; they are accepted, type-checked and
# read back, and change nothing: use_stride_kernel (Paddle's strided view kernels: Oar's
# views follow their own rules either way), eager_delete_tensor_gb (Paddle's garbage
# collection threshold: Oar frees tensors by reference counting).
_PADDLE_ONLY = {"use_stride_kernel": True, "eager_delete_tensor_gb": 0.0}
_paddle_only_values = dict(_PADDLE_ONLY)


def _set_paddle_only(name, v):
    kind = type(_PADDLE_ONLY[name])
    if kind is bool:
        if isinstance(v, str) and v.lower() in ("true", "false", "1", "0"):
            v = v.lower() in ("true", "1")
        if not isinstance(v, (bool, int)) or isinstance(v, int) and v not in (0, 1):
            raise ValueError(f"set_flags: FLAGS_{name} takes a bool, got {v!r}")
        _paddle_only_values[name] = bool(v)
        return
    try:
        _paddle_only_values[name] = kind(v)
    except (TypeError, ValueError):
        raise ValueError(f"set_flags: FLAGS_{name} takes a {kind.__name__}, got {v!r}") from None


def set_flags(flags):
    """oar.set_flags({'FLAGS_oar_check_nan_inf': True})"""
    if not isinstance(flags, dict):
        raise TypeError("set_flags: expected a dict of {'FLAGS_name': value}")
    for k, v in flags.items():
        name = _ALIASES.get(_strip(k), _strip(k))
        if name in _PADDLE_ONLY:
            _set_paddle_only(name, v)
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        _C.set_flag(name, str(v))


def get_flags(flags):
    """oar.get_flags('FLAGS_x') or get_flags([...]) -> {'FLAGS_x': value}"""
    names = [flags] if isinstance(flags, str) else list(flags)
    out = {}
    for n in names:
        name = _ALIASES.get(_strip(n), _strip(n))
        if name in _PADDLE_ONLY:
            out["FLAGS_" + _strip(n)] = _paddle_only_values[name]
            continue
        v = _C.get_flag(name)
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
