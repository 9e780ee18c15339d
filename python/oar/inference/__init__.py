"""oar.inference: the predictor for saved models (Paddle's paddle.inference API).

    config = oar.inference.Config("out/model.pdmodel", "out/model.pdiparams")
    predictor = oar.inference.create_predictor(config)
    h = predictor.get_input_handle(predictor.get_input_names()[0])
    h.reshape(x.shape); h.copy_from_cpu(x)
    predictor.run()
    y = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()

These classes are thin wrappers of the C++ predictor (inference/predictor/predictor.h,
bound in python/csrc/inference_py.cc): Python and C++ load the model with the same
loader, run the same registered pass pipeline ("predictor", or "predictor-memory" with
enable_memory_optim; oar._C.pir.pipeline(name) shows it) and the same executor.
"""
import os
import warnings

from .. import _C

_inference = _C.inference
Tensor = _inference.Tensor  # input/output handles: the C++ class itself


class PrecisionType:
    Float32 = 0
    Half = 1
    Bfloat16 = 2


def _program_path(f):
    """Paddle 3 saves programs as <prefix>.json, Oar as <prefix>.pdmodel: a .json path that
    does not exist names the .pdmodel beside it when there is one (deployment code written
    for Paddle passes prefix + ".json")."""
    f = os.fspath(f)
    if f.endswith(".json") and not os.path.exists(f):
        alt = f[: -len(".json")] + ".pdmodel"
        if os.path.exists(alt):
            return alt
    return f


class Config(_inference.Config):
    """Where the model is and how to run it.

    Config(prog_file, params_file), Config(model_dir) (holding inference.pdmodel /
    inference.pdiparams), Config(prefix) or Config() and set_model(...)."""

    def __init__(self, prog_file=None, params_file=None):
        super().__init__()
        if prog_file is not None and params_file is None and os.path.isdir(prog_file):
            self.set_model(os.path.join(prog_file, "inference.pdmodel"),
                           os.path.join(prog_file, "inference.pdiparams"))
        elif prog_file is not None:
            if params_file is None:
                prog_file = _program_path(prog_file)
                base = prog_file[:-len(".pdmodel")] if prog_file.endswith(".pdmodel") else prog_file
                prog_file, params_file = base + ".pdmodel", base + ".pdiparams"
            self.set_model(os.fspath(prog_file), os.fspath(params_file))

    def set_model(self, prog_file, params_file):
        super().set_model(_program_path(prog_file), os.fspath(params_file))

    def set_prog_file(self, f):
        super().set_prog_file(_program_path(f))

    def set_params_file(self, f):
        super().set_params_file(os.fspath(f))

    def model_dir(self):
        return os.path.dirname(self.prog_file()) if self.prog_file() else ""

    def set_cpu_math_library_num_threads(self, n):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"Config.set_cpu_math_library_num_threads: expected a positive int, got {n!r}")
        super().set_cpu_math_library_num_threads(n)

    def delete_pass(self, name):
        """Leaves the pass `name` (one of the "predictor-memory" pipeline's, e.g. "fuse") out
        of the optimization. As in Paddle, a name that is no pass here (Paddle's own pass
        names) changes nothing, with a warning."""
        if not self._delete_pass(name):
            known = [p for p in _C.pir.pipeline_passes("predictor-memory") if p != "lower_to_kernel"]
            warnings.warn(f"Config.delete_pass: no pass '{name}' here (the passes: {', '.join(known)})",
                          stacklevel=2)

    def enable_custom_device(self, device_type, device_id=0, precision=PrecisionType.Float32):
        """Runs the model on a plugin device ('sample', device_id), as Paddle's
        Config.enable_custom_device: each op runs its kernel there, or its CPU kernel
        through the fallback; parameters move there once. Only Float32 precision."""
        if not isinstance(device_type, str) or not isinstance(device_id, int):
            raise TypeError(f"Config.enable_custom_device: expected (str, int), got "
                            f"({type(device_type).__name__}, {type(device_id).__name__})")
        if precision != PrecisionType.Float32:
            raise ValueError(f"Config.enable_custom_device: only PrecisionType.Float32 is supported, got {precision!r}")
        from .._device import parse_device

        parse_device(f"{device_type}:{device_id}", "Config.enable_custom_device")  # names the devices there are
        self._enable_custom_device(device_type.lower(), device_id)

    def switch_use_feed_fetch_ops(self, x=True):
        """Accepted for Paddle compatibility: the predictor has no feed/fetch ops."""

    def disable_gpu(self):
        pass

    def use_gpu(self):
        return False

    def disable_glog_info(self):
        pass

    def enable_mkldnn(self):
        pass  # oneDNN is what the CPU kernels use already


class Predictor(_inference.Predictor):
    def __init__(self, config):
        super().__init__(config)
        self._config = config

    def run(self, inputs=None):
        """Runs on the fed handles (returns None, as Paddle's run(); failures raise), or on a
        list of arrays/tensors (returns the outputs as a list of oar Tensors)."""
        out = super().run(inputs)
        return None if inputs is None else out

    def clone(self):
        return Predictor(self._config)

    def clear_intermediate_tensor(self):
        pass  # the executor drops every intermediate after its last use

    def try_shrink_memory(self):
        return 0


def create_predictor(config):
    if not isinstance(config, _inference.Config):
        raise TypeError(f"create_predictor: expected an oar.inference.Config, got {type(config).__name__}")
    return Predictor(config)


def get_version():
    from .. import __version__

    return __version__


__all__ = ["Config", "Predictor", "Tensor", "create_predictor", "PrecisionType", "get_version"]
