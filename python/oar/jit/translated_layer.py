"""TranslatedLayer: a saved program as an nn.Layer (what oar.jit.load returns)."""
from .. import _C
from ..nn import Layer
from ..nn.layer import Parameter, state_epoch
from .api import _unflatten


class TranslatedLayer(Layer):
    """Runs a loaded program on the executor. Floating-point parameters are trainable
    (stop_gradient=False) so the layer can be fine-tuned; buffers are not. The state is
    loaded onto the current device (Paddle's expected place) and the program runs where the
    state is (after .to(place) too)."""

    def __init__(self, program, params, info):
        super().__init__()
        from .save_load import _struct_from_json

        self._program = program  # op dialect, as saved
        # Per place: the training pipeline on a lowered copy, and (made on the first call
        # that needs gradients) the differentiable executor fine-tuning runs.
        self._executors = {}
        self._grad_executors = {}
        buffers = set(info.get("buffers", []))
        self._state_names = []
        self._state_cache = None
        place = _C._get_current_place()
        for name in program.parameter_names():
            t = params[name]
            if t.place != place:
                t = t._copy_to(place, False)
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

    def _executor_on(self, place):
        key = place.device_str()
        if key not in self._executors:
            self._executors[key] = _C.pir.Executor(
                self._program.run_pipeline("jit-train", lower_copy=True, place=place), place)
        return self._executors[key]

    def _place(self, state):
        """Where the program runs: its state's place (the current device when it has none)."""
        return next(iter(state.values())).place if state else _C._get_current_place()

    def input_names(self):
        return list(self._executor_on(_C.CPUPlace()).input_names)

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
        place = self._place(state)
        executor = self._executor_on(place)
        if _C.is_grad_enabled() and any(not p.stop_gradient for p in self._parameters.values()):
            # The executor runs kernels; a fine-tuning step needs autograd to record the
            # ops, so it runs the program through the ops' eager API instead.
            key = place.device_str()
            if key not in self._grad_executors:
                self._grad_executors[key] = _C.pir.Executor(self._program, place)
                self._grad_executors[key].set_differentiable(True)
            executor = self._grad_executors[key]
        outs = executor.run(list(inputs), state)
        if self._out_struct is not None:
            return _unflatten(self._out_struct, outs)
        return outs[0] if len(outs) == 1 else outs
