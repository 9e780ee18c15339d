"""ModelAverage (Paddle's paddle.incubate.ModelAverage): keeps running sums of each parameter
over a sliding window of recent optimizer steps, and apply() swaps the window's average into
the parameters (restore() swaps the trained values back)."""
import contextlib

import oar
from oar import _trace_state

_MAX_SUM_1_STEPS = 16384  # sum_1 folds into sum_2 this often, bounding its rounding error


class ModelAverage:
    """ModelAverage(average_window_rate, parameters=None, min_average_window=10000,
    max_average_window=10000). The window restarts once it holds at least min_average_window
    steps and at least min(max_average_window, int(steps so far * average_window_rate))."""

    def __init__(self, average_window_rate, parameters=None, min_average_window=10000,
                 max_average_window=10000, name=None):
        op = "ModelAverage"
        if isinstance(average_window_rate, bool) or not isinstance(
                average_window_rate, (int, float)) or average_window_rate <= 0:
            raise ValueError(f"{op}: average_window_rate must be positive, got "
                             f"{average_window_rate!r}")
        for nm, v in (("min_average_window", min_average_window),
                      ("max_average_window", max_average_window)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{op}: {nm} must be a positive int, got {v!r}")
        if min_average_window > max_average_window:
            raise ValueError(f"{op}: min_average_window ({min_average_window}) must not exceed "
                             f"max_average_window ({max_average_window})")
        if parameters is None:
            raise ValueError(f"{op}: parameters is required in dynamic mode")
        self._parameter_list = list(parameters)
        for k, p in enumerate(self._parameter_list):
            if not isinstance(p, oar.Tensor):
                raise TypeError(f"{op}: parameters[{k}] must be a Tensor, got "
                                f"{type(p).__name__}")
        self.average_window = float(average_window_rate)
        self.min_average_window = min_average_window
        self.max_average_window = max_average_window
        self._state = {}  # id(param) -> [sum_1, sum_2, sum_3, num_acc, old_num_acc, num_updates]
        self._backup = {}

    @oar.no_grad()
    def _accumulate(self, p):
        st = self._state.get(id(p))
        if st is None:
            z = oar.zeros_like(p)
            st = self._state[id(p)] = [z, z.clone(), z.clone(), 0, 0, 0]
        st[5] += 1
        st[3] += 1
        st[0] = st[0] + p.detach()
        if st[5] % _MAX_SUM_1_STEPS == 0:
            st[1] = st[1] + st[0]
            st[0] = oar.zeros_like(p)
        # the rate's share of the steps is truncated to an int, as in Paddle's kernel
        if st[3] >= self.min_average_window and st[3] >= min(
                self.max_average_window, int(st[5] * self.average_window)):
            st[2] = st[0] + st[1]
            st[0], st[1] = oar.zeros_like(p), oar.zeros_like(p)
            st[4], st[3] = st[3], 0

    @_trace_state.eager_in_conversions
    def step(self):
        """Adds the current values of the parameters that have a gradient to the window."""
        for p in self._parameter_list:
            if getattr(p, "trainable", True) and not p.stop_gradient and p.grad is not None:
                self._accumulate(p)

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """In dynamic mode, the same as step() (the loss has been back-propagated)."""
        self.step()

    def clear_grad(self, set_to_zero=True):
        for p in self._parameter_list:
            if p.grad is not None:
                p.clear_gradient(set_to_zero)

    @contextlib.contextmanager
    def apply(self, executor=None, need_restore=True):
        """Puts the window's average into each accumulated parameter for the with block;
        restores the trained values on exit unless need_restore=False (then call restore())."""
        with oar.no_grad():
            for p in self._parameter_list:
                st = self._state.get(id(p))
                if st is None or st[3] + st[4] == 0:
                    continue
                self._backup[id(p)] = p.detach().clone()
                avg = (st[0] + st[1] + st[2]) / float(st[3] + st[4])
                p.set_value(avg.astype(p.dtype))
        try:
            yield
        finally:
            if need_restore:
                self.restore()

    @oar.no_grad()
    def restore(self, executor=None):
        """Puts back the parameter values apply() replaced."""
        for p in self._parameter_list:
            saved = self._backup.pop(id(p), None)
            if saved is not None:
                p.set_value(saved)
