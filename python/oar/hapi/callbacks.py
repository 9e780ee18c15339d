"""Callbacks of Model.fit/evaluate/predict (Paddle's paddle.callbacks)."""

import numbers
import os
import warnings

import numpy as np

from .progressbar import ProgressBar


class Callback:
    """Base class; override the on_* hooks you need. self.model and self.params are set
    by the Model before training."""

    def __init__(self):
        self.model, self.params = None, {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_eval_begin(self, logs=None):
        pass

    def on_eval_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, step, logs=None):
        pass

    def on_train_batch_end(self, step, logs=None):
        pass

    def on_eval_batch_begin(self, step, logs=None):
        pass

    def on_eval_batch_end(self, step, logs=None):
        pass

    def on_predict_batch_begin(self, step, logs=None):
        pass

    def on_predict_batch_end(self, step, logs=None):
        pass


class CallbackList:
    def __init__(self, callbacks=None):
        self.callbacks = list(callbacks or [])

    def append(self, cb):
        self.callbacks.append(cb)

    def set_params(self, params):
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model):
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, name, *args):
        for c in self.callbacks:
            getattr(c, name)(*args)

    def on_begin(self, mode, logs=None):
        self._call(f"on_{mode}_begin", logs)

    def on_end(self, mode, logs=None):
        self._call(f"on_{mode}_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, mode, step, logs=None):
        self._call(f"on_{mode}_batch_begin", step, logs)

    def on_batch_end(self, mode, step, logs=None):
        self._call(f"on_{mode}_batch_end", step, logs)


def config_callbacks(
    callbacks=None,
    model=None,
    batch_size=None,
    epochs=None,
    steps=None,
    log_freq=2,
    verbose=2,
    save_freq=1,
    save_dir=None,
    metrics=None,
    mode="train",
):
    """The callbacks a Model run uses: the user's, plus a ProgBarLogger, a ModelCheckpoint
    and an LRScheduler callback when the user gave none of that kind."""
    cbks = list(callbacks or [])
    for c in cbks:
        if not isinstance(c, Callback):
            raise TypeError(
                f"callbacks must be oar.callbacks.Callback objects, got {type(c).__name__}"
            )
    if not any(isinstance(k, ProgBarLogger) for k in cbks) and verbose:
        cbks = [ProgBarLogger(log_freq, verbose=verbose)] + cbks
    if not any(isinstance(k, ModelCheckpoint) for k in cbks):
        cbks = cbks + [ModelCheckpoint(save_freq, save_dir)]
    if not any(isinstance(k, LRScheduler) for k in cbks):
        cbks = cbks + [LRScheduler()]
    lst = CallbackList(cbks)
    lst.set_model(model)
    metrics = metrics or []
    lst.set_params(
        {
            "batch_size": batch_size,
            "epochs": epochs,
            "steps": steps,
            "verbose": verbose,
            "metrics": metrics,
            "save_dir": save_dir,
        }
    )
    return lst


class ProgBarLogger(Callback):
    """Prints the progress bar with loss and metrics (verbose 1: one redrawn line per epoch;
    2: a line every log_freq steps; 0: silent)."""

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        self.log_freq, self.verbose = log_freq, verbose
        self.epochs = None
        self.steps = None
        self.epoch = 0

    def _is_print(self):
        return self.verbose

    def _values(self, logs, keys):
        return [(k, logs[k]) for k in keys if k in logs]

    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs")
        self.train_metrics = self.params.get("metrics", [])

    def on_epoch_begin(self, epoch=None, logs=None):
        self.steps = self.params.get("steps")
        self.epoch = epoch
        self.train_step = 0
        if self.epochs and self._is_print():
            print("Epoch %d/%d" % (epoch + 1, self.epochs))
        self.train_progbar = ProgressBar(num=self.steps, verbose=self.verbose)

    def _update(self, bar, step, logs, keys):
        if self._is_print() and step % self.log_freq == 0:
            bar.update(step, self._values(logs, keys))

    def on_train_batch_end(self, step, logs=None):
        logs = logs or {}
        self.train_step += 1
        self._update(self.train_progbar, self.train_step, logs, self.train_metrics)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._is_print() and self.train_progbar._last_update != self.train_step:
            self.train_progbar._num = self.train_step if self.steps is None else self.steps
            self.train_progbar.update(self.train_step, self._values(logs, self.train_metrics))

    def on_eval_begin(self, logs=None):
        logs = logs or {}
        self.eval_steps = logs.get("steps")
        self.eval_metrics = logs.get("metrics", [])
        self.eval_step = 0
        self.evaled_samples = 0
        self.eval_progbar = ProgressBar(num=self.eval_steps, verbose=self.verbose)
        if self._is_print():
            print("Eval begin...")

    def on_eval_batch_end(self, step, logs=None):
        logs = logs or {}
        self.eval_step += 1
        self.evaled_samples += logs.get("batch_size", 0)
        self._update(self.eval_progbar, self.eval_step, logs, self.eval_metrics)

    def on_eval_end(self, logs=None):
        logs = logs or {}
        if self._is_print():
            if self.eval_progbar._last_update != self.eval_step:
                self.eval_progbar._num = (
                    self.eval_step if self.eval_steps is None else self.eval_steps
                )
                self.eval_progbar.update(self.eval_step, self._values(logs, self.eval_metrics))
            print("Eval samples: %d" % self.evaled_samples)

    def on_predict_begin(self, logs=None):
        logs = logs or {}
        self.test_steps = logs.get("steps")
        self.test_step = 0
        self.tested_samples = 0
        self.test_progbar = ProgressBar(num=self.test_steps, verbose=self.verbose)
        if self._is_print():
            print("Predict begin...")

    def on_predict_batch_end(self, step, logs=None):
        logs = logs or {}
        self.test_step += 1
        self.tested_samples += logs.get("batch_size", 0)
        self._update(self.test_progbar, self.test_step, logs, [])

    def on_predict_end(self, logs=None):
        if self._is_print():
            if self.test_progbar._last_update != self.test_step:
                self.test_progbar._num = self.test_step
                self.test_progbar.update(self.test_step, [])
            print("Predict samples: %d" % self.tested_samples)


class ModelCheckpoint(Callback):
    """Saves the model to save_dir/<epoch> every save_freq epochs and to save_dir/final at
    the end of training (nothing when save_dir is None)."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        if not isinstance(save_freq, int) or save_freq <= 0:
            raise ValueError(
                f"ModelCheckpoint: save_freq must be a positive integer, got {save_freq!r}"
            )
        self.save_freq, self.save_dir = save_freq, save_dir

    def on_epoch_begin(self, epoch=None, logs=None):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.save_dir and self.model is not None and (epoch + 1) % self.save_freq == 0:
            path = os.path.join(self.save_dir, str(epoch))
            print(f"save checkpoint at {os.path.abspath(path)}")
            self.model.save(path)

    def on_train_end(self, logs=None):
        if self.save_dir and self.model is not None:
            path = os.path.join(self.save_dir, "final")
            print(f"save checkpoint at {os.path.abspath(path)}")
            self.model.save(path)


class LRScheduler(Callback):
    """Steps the optimizer's LR scheduler after every batch (by_step) or epoch (by_epoch)."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("LRScheduler: by_step and by_epoch cannot both be True")
        self.by_step, self.by_epoch = by_step, by_epoch

    def _scheduler(self):
        opt = getattr(self.model, "_optimizer", None)
        lr = getattr(opt, "_learning_rate", None)
        from ..optimizer.lr import LRScheduler as Sched, ReduceOnPlateau

        if isinstance(lr, Sched) and not isinstance(lr, ReduceOnPlateau):
            return lr
        return None

    def on_epoch_end(self, epoch, logs=None):
        s = self._scheduler()
        if self.by_epoch and s is not None:
            s.step()

    def on_train_batch_end(self, step, logs=None):
        s = self._scheduler()
        if self.by_step and s is not None:
            s.step()


def _scalar(v):
    if isinstance(v, (list, tuple)) and v:
        v = v[0]
    if isinstance(v, np.ndarray):
        v = v.reshape(-1)[0]
    return float(v) if isinstance(v, (numbers.Number, np.number)) else None


class EarlyStopping(Callback):
    """Stops fit() when the monitored eval quantity stops improving for `patience` evals;
    with save_best_model the best model goes to save_dir/best_model."""

    def __init__(
        self,
        monitor="loss",
        mode="auto",
        patience=0,
        verbose=1,
        min_delta=0,
        baseline=None,
        save_best_model=True,
    ):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got '{mode}'")
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.baseline, self.save_best_model = baseline, save_best_model
        self.min_delta = abs(min_delta)
        if mode == "auto":
            mode = "max" if "acc" in monitor else "min"
        self.mode = mode
        self.wait_epoch, self.stopped_epoch = 0, 0
        self.best_value = None
        self.save_dir = None

    def on_train_begin(self, logs=None):
        self.wait_epoch, self.stopped_epoch = 0, 0
        self.best_value = self.baseline
        self.save_dir = self.params.get("save_dir") or getattr(self.model, "_save_dir", None)

    def _better(self, cur, best):
        if best is None:
            return True
        if self.mode == "min":
            return cur < best - self.min_delta
        return cur > best + self.min_delta

    def on_eval_end(self, logs=None):
        logs = logs or {}
        if self.monitor not in logs:
            warnings.warn(
                f"EarlyStopping: monitor '{self.monitor}' is not in the eval logs {sorted(logs)}"
            )
            return
        cur = _scalar(logs[self.monitor])
        if cur is None:
            return
        if self._better(cur, self.best_value):
            self.best_value, self.wait_epoch = cur, 0
            if self.save_best_model and self.save_dir:
                self.model.save(os.path.join(self.save_dir, "best_model"))
        else:
            self.wait_epoch += 1
        if self.wait_epoch > self.patience:
            self.model.stop_training = True
            if self.verbose > 0:
                print(f"Epoch {self.stopped_epoch + 1}: Early stopping.")
                if self.save_best_model and self.save_dir:
                    print(
                        f"Best checkpoint has been saved at "
                        f"{os.path.abspath(os.path.join(self.save_dir, 'best_model'))}"
                    )
        self.stopped_epoch += 1


class VisualDL(Callback):
    """Writes train (every batch) and eval (every evaluation) scalars — loss, metrics and
    the learning rate — as TensorBoard event files under log_dir."""

    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self.writer = None
        self.train_step = 0
        self.eval_count = 0

    def _writer(self):
        if self.writer is None:
            from .tfevents import SummaryWriter

            self.writer = SummaryWriter(self.log_dir)
        return self.writer

    def _log(self, mode, logs, step):
        w = self._writer()
        for k, v in (logs or {}).items():
            if k in ("batch_size", "steps", "metrics"):
                continue
            s = _scalar(v)
            if s is not None:
                w.add_scalar(f"{mode}/{k}", s, step)

    def on_train_batch_end(self, step, logs=None):
        self.train_step += 1
        self._log("train", logs, self.train_step)
        opt = getattr(self.model, "_optimizer", None)
        if opt is not None:
            self._writer().add_scalar("train/lr", opt.get_lr(), self.train_step)

    def on_eval_end(self, logs=None):
        self.eval_count += 1
        self._log("eval", logs, self.train_step or self.eval_count)
        self._writer().flush()

    def on_epoch_end(self, epoch, logs=None):
        if self.writer is not None:
            self.writer.flush()

    def on_train_end(self, logs=None):
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    on_eval_begin = Callback.on_eval_begin


class ReduceLROnPlateau(Callback):
    """Multiplies the optimizer's (float) learning rate by factor when the monitored eval
    value has not improved for patience evaluations."""

    def __init__(
        self,
        monitor="loss",
        factor=0.1,
        patience=10,
        verbose=1,
        mode="auto",
        min_delta=1e-4,
        cooldown=0,
        min_lr=0,
    ):
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1.0, got {factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.mode = ("max" if "acc" in monitor else "min") if mode == "auto" else mode
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_eval_end(self, logs=None):
        cur = _scalar((logs or {}).get(self.monitor))
        if cur is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        better = self.best is None or (
            cur < self.best - self.min_delta
            if self.mode == "min"
            else cur > self.best + self.min_delta
        )
        if better:
            self.best, self.wait = cur, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                opt = self.model._optimizer
                old = opt.get_lr()
                if old > self.min_lr and isinstance(opt._learning_rate, float):
                    new = max(old * self.factor, self.min_lr)
                    opt.set_lr(new)
                    if self.verbose > 0:
                        print(f"ReduceLROnPlateau: reducing learning rate to {new}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0
