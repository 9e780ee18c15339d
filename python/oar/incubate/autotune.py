"""paddle.incubate.autotune: Paddle's kernel/layout/dataloader tuning switches. Oar's
kernels are chosen at dispatch by (backend, dtype, layout) and its DataLoader sizes its
workers itself, so the settings are checked and kept (get_config) and change no result."""
import json
import numbers

_config = {"kernel": {"enable": False, "tuning_range": [1, 10]}, "layout": {"enable": False},
           "dataloader": {"enable": False, "tuning_steps": 500}}


def set_config(config=None):
    """config: a dict (or the path of a JSON file) with any of "kernel" {enable,
    tuning_range}, "layout" {enable}, "dataloader" {enable, tuning_steps}; None enables
    all three."""
    if config is None:
        for section in _config.values():
            section["enable"] = True
        return
    if isinstance(config, str):
        try:
            with open(config) as f:
                config = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError(f"autotune.set_config: cannot read the JSON config {config!r}: {e}") from None
    if not isinstance(config, dict):
        raise TypeError(f"autotune.set_config: config must be a dict, a JSON file path or None, got "
                        f"{type(config).__name__}")
    for key, value in config.items():
        if key not in _config:
            raise ValueError(f"autotune.set_config: unknown section {key!r} (sections: {sorted(_config)})")
        if not isinstance(value, dict):
            raise TypeError(f"autotune.set_config: section {key!r} must be a dict, got {type(value).__name__}")
        for k, v in value.items():
            if k not in _config[key]:
                raise ValueError(f"autotune.set_config: section {key!r} has no setting {k!r} "
                                 f"(settings: {sorted(_config[key])})")
            if k == "enable" and not isinstance(v, bool):
                raise TypeError(f"autotune.set_config: {key}.enable must be a bool, got {v!r}")
            if k == "tuning_range" and not (isinstance(v, (list, tuple)) and len(v) == 2 and
                                            all(isinstance(i, numbers.Integral) and i >= 0 for i in v) and
                                            v[0] <= v[1]):
                raise ValueError(f"autotune.set_config: kernel.tuning_range must be [start, end] steps, got {v!r}")
            if k == "tuning_steps" and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0):
                raise ValueError(f"autotune.set_config: dataloader.tuning_steps must be an int >= 0, got {v!r}")
        for k, v in value.items():
            _config[key][k] = list(v) if isinstance(v, tuple) else v


def get_config():
    """The current settings (a copy)."""
    return json.loads(json.dumps(_config))
