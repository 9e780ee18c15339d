"""oar.inference: the predictor for saved models (Paddle's paddle.inference API).

    config = oar.inference.Config("out/model.pdmodel", "out/model.pdiparams")
    predictor = oar.inference.create_predictor(config)
    h = predictor.get_input_handle(predictor.get_input_names()[0])
    h.reshape(x.shape); h.copy_from_cpu(x)
    predictor.run()
    y = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()

The program runs the analysis passes (canonicalize, constant folding, CSE, the DRR
fusions, DCE; with memory optimization also in-place rewriting) and then the executor
(pir/executor) with planned buffer reuse: the same program format and executor as
oar.jit. The C++ predictor (inference/predictor/predictor.h) does the same without Python.
"""
import os

import numpy as np

from .. import _C
from .. import profiler as _profiler

_pir = _C.pir

# Pass pipelines (names as in oar.pir.registered_passes()).
IR_OPTIM_PASSES = "canonicalize,constant_fold,cse,fuse,fold_parameters,dce"
MEMORY_OPTIM_PASSES = "inplace"


class PrecisionType:
    Float32 = 0
    Half = 1
    Bfloat16 = 2


class Config:
    """Where the model is and how to run it.

    Config(prog_file, params_file), Config(model_dir) (holding inference.pdmodel /
    inference.pdiparams), or Config() and set_model(...)."""

    def __init__(self, prog_file=None, params_file=None):
        self._prog_file = None
        self._params_file = None
        self._threads = 1
        self._ir_optim = True
        self._memory_optim = False
        self._profile = False
        self._deleted_passes = set()
        if prog_file is not None and params_file is None and os.path.isdir(prog_file):
            self.set_model(os.path.join(prog_file, "inference.pdmodel"),
                           os.path.join(prog_file, "inference.pdiparams"))
        elif prog_file is not None:
            if params_file is None:
                base = prog_file[:-len(".pdmodel")] if prog_file.endswith(".pdmodel") else prog_file
                prog_file, params_file = base + ".pdmodel", base + ".pdiparams"
            self.set_model(prog_file, params_file)

    def set_model(self, prog_file, params_file):
        self._prog_file, self._params_file = os.fspath(prog_file), os.fspath(params_file)

    def set_prog_file(self, f):
        self._prog_file = os.fspath(f)

    def set_params_file(self, f):
        self._params_file = os.fspath(f)

    def prog_file(self):
        return self._prog_file

    def params_file(self):
        return self._params_file

    def model_dir(self):
        return os.path.dirname(self._prog_file) if self._prog_file else ""

    def set_cpu_math_library_num_threads(self, n):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"Config.set_cpu_math_library_num_threads: expected a positive int, got {n!r}")
        self._threads = n

    def cpu_math_library_num_threads(self):
        return self._threads

    def switch_ir_optim(self, x=True):
        self._ir_optim = bool(x)

    def ir_optim(self):
        return self._ir_optim

    def enable_memory_optim(self, x=True):
        self._memory_optim = bool(x)

    def enable_memory_optim_enabled(self):
        return self._memory_optim

    def delete_pass(self, name):
        """Leaves the analysis pass `name` (one of IR_OPTIM_PASSES / MEMORY_OPTIM_PASSES,
        e.g. "fuse") out of the optimization. As in Paddle, a name that is no pass here
        (Paddle's own pass names) changes nothing, with a warning."""
        known = (IR_OPTIM_PASSES + "," + MEMORY_OPTIM_PASSES).split(",")
        if name not in known:
            import warnings
            warnings.warn(f"Config.delete_pass: no pass '{name}' here (the passes: {', '.join(known)})",
                          stacklevel=2)
            return
        self._deleted_passes.add(name)

    def pass_names(self):
        """The passes create_predictor runs, in order."""
        names = []
        if self._ir_optim:
            names += IR_OPTIM_PASSES.split(",")
        if self._memory_optim:
            names += MEMORY_OPTIM_PASSES.split(",")
        return [n for n in names if n not in self._deleted_passes]

    def switch_use_feed_fetch_ops(self, x=True):
        """Accepted for Paddle compatibility: the predictor has no feed/fetch ops."""

    def enable_profile(self):
        self._profile = True

    def disable_gpu(self):
        pass

    def use_gpu(self):
        return False

    def disable_glog_info(self):
        pass

    def enable_mkldnn(self):
        pass  # oneDNN is what the CPU kernels use already

    def summary(self):
        return (f"prog_file: {self._prog_file}\nparams_file: {self._params_file}\n"
                f"cpu_math_threads: {self._threads}\nir_optim: {self._ir_optim}\n"
                f"memory_optim: {self._memory_optim}\npasses: {','.join(self.pass_names())}")


class Tensor:
    """An input or output handle of a predictor (Paddle's paddle.inference.Tensor)."""

    def __init__(self, predictor, name, is_input):
        self._p, self._name, self._is_input = predictor, name, is_input
        self._shape = None

    def name(self):
        return self._name

    def reshape(self, shape):
        if not self._is_input:
            raise RuntimeError(f"inference.Tensor.reshape: '{self._name}' is an output")
        shape = [int(d) for d in shape]
        if any(d < 0 for d in shape):
            raise ValueError(f"inference.Tensor.reshape: sizes must be >= 0, got {shape}")
        self._shape = shape

    def copy_from_cpu(self, data):
        if not self._is_input:
            raise RuntimeError(f"inference.Tensor.copy_from_cpu: '{self._name}' is an output")
        if not isinstance(data, np.ndarray):
            raise TypeError(f"inference.Tensor.copy_from_cpu: expected a numpy.ndarray, got {type(data).__name__}")
        if self._shape is not None and list(data.shape) != self._shape:
            data = data.reshape(self._shape)
        self._p._feeds[self._name] = _C.to_tensor(np.ascontiguousarray(data), None, None, True)

    def share_external_data(self, tensor):
        self._p._feeds[self._name] = tensor

    def copy_to_cpu(self):
        if self._is_input:
            t = self._p._feeds.get(self._name)
            if t is None:
                raise RuntimeError(f"inference.Tensor.copy_to_cpu: input '{self._name}' has no data")
            return t.numpy()
        t = self._p._outputs.get(self._name)
        if t is None:
            raise RuntimeError(f"inference.Tensor.copy_to_cpu: output '{self._name}' has no data; call run() first")
        return t.numpy()

    def shape(self):
        src = self._p._feeds if self._is_input else self._p._outputs
        t = src.get(self._name)
        return list(t.shape) if t is not None else list(self._shape or [])

    def type(self):
        src = self._p._feeds if self._is_input else self._p._outputs
        t = src.get(self._name)
        return t.dtype if t is not None else None


class Predictor:
    def __init__(self, config):
        from ..jit.save_load import load_program

        if not config.prog_file() or not config.params_file():
            raise ValueError("create_predictor: the Config names no model (set_model(prog_file, params_file))")
        base = config.prog_file()[:-len(".pdmodel")] if config.prog_file().endswith(".pdmodel") else None
        if base is None or config.params_file() != base + ".pdiparams":
            raise ValueError(f"create_predictor: expected <prefix>.pdmodel and <prefix>.pdiparams, got "
                             f"'{config.prog_file()}' and '{config.params_file()}'")
        self._config = config
        program, params, _ = load_program(base)
        passes = config.pass_names()
        if passes:
            program.run_passes(",".join(passes))
        self._program = program
        self._params = params
        self._executor = _pir.Executor(program)
        self._executor.set_profiling(config._profile)
        self._input_names = list(self._executor.input_names)
        self._output_names = list(self._executor.output_names)
        self._feeds = {}
        self._outputs = {}

    @property
    def program(self):
        return self._program

    def get_input_names(self):
        return list(self._input_names)

    def get_output_names(self):
        return list(self._output_names)

    def get_input_handle(self, name):
        if name not in self._input_names:
            raise ValueError(f"Predictor.get_input_handle: no input '{name}' (inputs: {self._input_names})")
        return Tensor(self, name, True)

    def get_output_handle(self, name):
        if name not in self._output_names:
            raise ValueError(f"Predictor.get_output_handle: no output '{name}' (outputs: {self._output_names})")
        return Tensor(self, name, False)

    def run(self, inputs=None):
        """Runs on the fed handles (returns True), or on a list of arrays/tensors (returns
        the outputs as a list of oar Tensors)."""
        if inputs is not None:
            if len(inputs) != len(self._input_names):
                raise ValueError(f"Predictor.run: the model takes {len(self._input_names)} inputs, "
                                 f"got {len(inputs)}")
            feeds = [x if isinstance(x, _C.Tensor) else _C.to_tensor(np.ascontiguousarray(x), None, None, True)
                     for x in inputs]
        else:
            missing = [n for n in self._input_names if n not in self._feeds]
            if missing:
                raise RuntimeError(f"Predictor.run: no data for input(s) {missing}; use get_input_handle(name)."
                                   f"copy_from_cpu(array)")
            feeds = [self._feeds[n] for n in self._input_names]
        if _profiler._active:
            _profiler._notify(self._executor)
        prev, threads = _C.get_num_threads(), self._config._threads
        if prev == threads:
            outs = self._executor.run(feeds)
        else:
            _C.set_num_threads(threads)
            try:
                outs = self._executor.run(feeds)
            finally:
                _C.set_num_threads(prev)
        self._outputs = dict(zip(self._output_names, outs))
        return outs if inputs is not None else True

    def profile(self):
        """Per-op (name, calls, seconds) of the runs so far (Config.enable_profile())."""
        return self._executor.profile()

    def clone(self):
        return Predictor(self._config)

    def clear_intermediate_tensor(self):
        self._outputs = {}

    def try_shrink_memory(self):
        return 0


def create_predictor(config):
    if not isinstance(config, Config):
        raise TypeError(f"create_predictor: expected an oar.inference.Config, got {type(config).__name__}")
    return Predictor(config)


def get_version():
    from .. import __version__

    return __version__


__all__ = ["Config", "Predictor", "Tensor", "create_predictor", "PrecisionType", "get_version"]
