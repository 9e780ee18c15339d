"""The progress bar of Model.fit/evaluate/predict, in Paddle's format:
    step 10/469 [===>..........] - loss: 0.6542 - acc: 0.7844 - ETA: 6s - 15ms/step
verbose=1 redraws one line per epoch; verbose=2 prints a line every log_freq steps."""

import sys
import time

import numpy as np


def _fmt_value(v):
    if isinstance(v, (list, tuple)):
        return " ".join(_fmt_value(x) for x in v)
    if isinstance(v, np.ndarray):
        v = v.reshape(-1)
        return (
            " ".join("%.4f" % x for x in v) if v.dtype.kind == "f" else " ".join(str(x) for x in v)
        )
    if isinstance(v, (float, np.floating)):
        return "%.4f" % v
    return str(v)


def _fmt_eta(eta):
    if eta > 3600:
        return "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
    if eta > 60:
        return "%d:%02d" % (eta // 60, eta % 60)
    return "%ds" % eta


def _fmt_time(per_unit, unit):
    if per_unit >= 1 or per_unit == 0:
        return " - %.0fs/%s" % (per_unit, unit)
    if per_unit >= 1e-3:
        return " - %.0fms/%s" % (per_unit * 1e3, unit)
    return " - %.0fus/%s" % (per_unit * 1e6, unit)


class ProgressBar:
    def __init__(self, num=None, width=30, verbose=1, start=True, file=None, name="step"):
        self._num, self._width, self._verbose, self.name = num, width, verbose, name
        self.file = file or sys.stdout
        self._last_update = 0
        if start:
            self.start()

    def start(self):
        self._start = time.time()
        self._last_update = 0

    def _line(self, current_num, values):
        now = time.time()
        per_unit = (now - self._start) / current_num if current_num else 0
        if self._num is not None:
            text = "%s %d/%d" % (self.name, current_num, self._num)
        else:
            text = "%s %d" % (self.name, current_num)
        if self._verbose == 1 and self._num:
            prog = int(self._width * min(current_num, self._num) / self._num)
            bar = "=" * max(prog - 1, 0) + (
                ">" if current_num < self._num and prog > 0 else "=" if prog > 0 else ""
            )
            text += " [" + bar + "." * (self._width - len(bar)) + "]"
        for k, v in values:
            text += " - %s: %s" % (k, _fmt_value(v))
        if self._num is not None and current_num < self._num:
            text += " - ETA: " + _fmt_eta(per_unit * (self._num - current_num))
        text += _fmt_time(per_unit, self.name)
        return text

    def update(self, current_num, values=()):
        values = list(values.items()) if isinstance(values, dict) else list(values)
        if self._verbose == 1:
            line = self._line(current_num, values)
            end = "\n" if self._num is not None and current_num >= self._num else ""
            self.file.write("\r" + line + end)
            self.file.flush()
        elif self._verbose == 2 or self._verbose == 3:
            self.file.write(self._line(current_num, values) + "\n")
            self.file.flush()
        self._last_update = current_num
