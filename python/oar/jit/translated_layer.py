"""TranslatedLayer: a saved program as an nn.Layer (what oar.jit.load returns)."""
from .. import _C
from ..nn import Layer
from ..nn.layer import Parameter, state_epoch
from .api import _unflatten


class TranslatedLayer(Layer):
    """Runs a loaded program on the executor. Floating-point parameters are trainable
    (stop_gradient=False) so the layer can be fine-tuned; buffers are not."""

    def __init__(self, program, params, info):
        super().__init__()
        from .save_load import _struct_from_json

        self._program = program  # op dialect, as saved
        # The training pipeline, on a lowered copy (fine-tuning runs _grad_executor).
        self._executor = _C.pir.Executor(program.run_pipeline("jit-train", lower_copy=True))
        self._grad_executor = None  # made on the first call that needs gradients
        buffers = set(info.get("buffers", []))
        self._state_names = []
        self._state_cache = None
        for name in program.parameter_names():
            t = params[name]
            key = name.replace(".", "__")
            if name in buffers or not t.dtype.is_floating_point:
                self.register_buffer(key, t)
            else:
                self.add_parameter(key, Parameter(t))
            self._state_names.append((name, key))
        struct = info.get("output_struct")
        self._out_struct = _struct_from_json(struct) if struct else None

    @property
    def program(self):
        return self._program

    def input_names(self):
        return list(self._executor.input_names)

    def _state(self):
        epoch = state_epoch()
        if self._state_cache is None or self._state_cache[0] != epoch:
            state = {}
            for name, key in self._state_names:
                t = self._parameters.get(key)
                state[name] = t if t is not None else self._buffers[key]
            self._state_cache = (epoch, state)
        return self._state_cache[1]

    def forward(self, *inputs):
        state = self._state()
        executor = self._executor
        if _C.is_grad_enabled() and any(not p.stop_gradient for p in self._parameters.values()):
            # The executor runs kernels; a fine-tuning step needs autograd to record the
            # ops, so it runs the program through the ops' eager API instead.
            if self._grad_executor is None:
                self._grad_executor = _C.pir.Executor(self._program)
                self._grad_executor.set_differentiable(True)
            executor = self._grad_executor
        outs = executor.run(list(inputs), state)
        if self._out_struct is not None:
            return _unflatten(self._out_struct, outs)
        return outs[0] if len(outs) == 1 else outs
