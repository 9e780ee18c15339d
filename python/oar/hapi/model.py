"""oar.Model: Paddle's high-level training API (prepare / fit / evaluate / predict /
save / load) over a dygraph network."""

import contextlib
import inspect
import os
import warnings

import numpy as np

from .. import _C
from ..autograd import no_grad
from ..io import DataLoader, Dataset, IterableDataset
from .callbacks import config_callbacks
from .model_summary import _place_of


def to_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _to_numpy(x):
    if isinstance(x, _C.Tensor):
        return x.numpy() if x.dtype.name != "bfloat16" else x.astype("float32").numpy()
    return np.asarray(x)


from ..static import InputSpec  # noqa: E402,F401  (one definition, re-exported here)


def _to_tensor(x, place):
    """A batch item on `place` (the network's; None: the current device). The loaders make
    batches on the current device, which a network on another one cannot take."""
    if isinstance(x, _C.Tensor):
        return x if place is None or x.place == place else x.to(place)
    return _C.to_tensor(np.asarray(x), None, place, True)


def _forward_arity(network):
    """How many leading items of a batch feed forward(): its positional parameters."""
    try:
        sig = inspect.signature(network.forward)
    except (TypeError, ValueError):
        return 1
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return None  # all but the labels: decided per batch
    return max(n, 1)


class Model:
    """Wraps a network for Keras-style training:

    model = oar.Model(net)
    model.prepare(optimizer, oar.nn.CrossEntropyLoss(), oar.metric.Accuracy())
    model.fit(train_dataset, eval_dataset, epochs=2, batch_size=64, verbose=1)
    """

    def __init__(self, network, inputs=None, labels=None):
        from ..nn import Layer

        if not isinstance(network, Layer):
            raise TypeError(f"Model: network must be an oar.nn.Layer, got {type(network).__name__}")
        self.network = network
        self._inputs = to_list(inputs) if inputs is not None else None
        self._labels = to_list(labels) if labels is not None else None
        self._n_inputs = len(self._inputs) if self._inputs else _forward_arity(network)
        self._optimizer = None
        self._loss = None
        self._metrics = []
        self._prepared = False
        self.stop_training = False
        self._save_dir = None
        self._accumulate = 1
        self._amp_level, self._amp_dtype, self._amp_lists, self._scaler = "O0", None, {}, None

    # ---- setup
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None):
        """Sets the optimizer, the loss (a Layer or function of (outputs..., labels...)) and
        metrics (oar.metric.Metric objects)."""
        from ..metric import Metric

        if loss is not None and not callable(loss):
            raise TypeError(
                f"Model.prepare: loss must be callable (a Layer or function), got "
                f"{type(loss).__name__}"
            )
        if optimizer is not None and not hasattr(optimizer, "step"):
            raise TypeError(
                f"Model.prepare: optimizer must be an oar.optimizer.Optimizer, got "
                f"{type(optimizer).__name__}"
            )
        metrics = to_list(metrics)
        for m in metrics:
            if not isinstance(m, Metric):
                raise TypeError(
                    f"Model.prepare: metrics must be oar.metric.Metric objects, got "
                    f"{type(m).__name__}"
                )
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics
        self._setup_amp(amp_configs)
        self._prepared = True

    _SCALER_KEYS = (
        "init_loss_scaling",
        "incr_ratio",
        "decr_ratio",
        "incr_every_n_steps",
        "decr_every_n_nan_or_inf",
        "use_dynamic_loss_scaling",
    )

    def _setup_amp(self, amp_configs):
        """amp_configs as Paddle: 'O0'/'O1'/'O2' or a dict with 'level' (default 'O0'),
        'dtype', custom white/black lists and GradScaler arguments. O2 decorates the
        network and optimizer; float16 uses a GradScaler."""
        self._amp_level, self._amp_dtype, self._amp_lists, self._scaler = "O0", None, {}, None
        if amp_configs is None:
            return
        cfg = {"level": amp_configs} if isinstance(amp_configs, str) else dict(amp_configs)
        level = cfg.pop("level", "O0")
        if level not in ("O0", "O1", "O2"):
            raise ValueError(f"Model.prepare: amp level must be 'O0', 'O1' or 'O2', got '{level}'")
        if level == "O0":
            return
        try:
            from .. import amp
        except ImportError:
            raise RuntimeError(
                "Model.prepare: amp_configs needs oar.amp, which this build does not have"
            ) from None

        dtype = cfg.pop("dtype", "float16")
        lists = {k: cfg.pop(k) for k in ("custom_white_list", "custom_black_list") if k in cfg}
        for k in ("custom_black_varnames", "use_fp16_guard", "use_promote"):
            cfg.pop(k, None)
        unknown = sorted(set(cfg) - set(self._SCALER_KEYS))
        if unknown:
            raise ValueError(f"Model.prepare: unknown amp_configs keys {unknown}")
        if level == "O2":
            if self._optimizer is None:
                raise ValueError("Model.prepare: amp level 'O2' needs an optimizer")
            self.network, self._optimizer = amp.decorate(
                models=self.network, optimizers=self._optimizer, level="O2", dtype=dtype
            )
        if dtype == "float16":
            self._scaler = amp.GradScaler(**cfg)
        self._amp_level, self._amp_dtype, self._amp_lists = level, dtype, lists

    def _autocast(self):
        if self._amp_level == "O0":
            return contextlib.nullcontext()
        from .. import amp

        return amp.auto_cast(
            enable=True, level=self._amp_level, dtype=self._amp_dtype, **self._amp_lists
        )

    def parameters(self, *args, **kwargs):
        return self.network.parameters(*args, **kwargs)

    def _metrics_name(self):
        names = ["loss"] if self._loss is not None else []
        for m in self._metrics:
            names.extend(to_list(m.name()))
        return names

    def _split(self, data):
        data = to_list(data)
        n = self._n_inputs
        if n is None:  # forward(*args): labels are what the label spec or loss needs
            n = len(data) - (len(self._labels) if self._labels else (1 if self._loss else 0))
        return data[:n], data[n:]

    # ---- one batch
    def train_batch(self, inputs, labels=None, update=True):
        """Forward, loss, backward and (when update) an optimizer step on one batch.
        Returns [loss arrays], or ([loss arrays], [metric values]) with metrics."""
        if self._optimizer is None or self._loss is None:
            raise RuntimeError(
                "Model.train_batch: call prepare() with an optimizer and a loss first"
            )
        self.network.train()
        place = _place_of(self.network)
        inputs = [_to_tensor(x, place) for x in to_list(inputs)]
        labels = [_to_tensor(x, place) for x in to_list(labels)]
        with self._autocast():
            outputs = self.network(*inputs)
            losses = to_list(self._loss(*(to_list(outputs) + labels)))
            final = losses[0]
            for extra in losses[1:]:
                final = final + extra
        if self._accumulate > 1:
            final = final * (1.0 / self._accumulate)
        if self._scaler is not None:
            self._scaler.scale(final).backward()
            if update:
                self._scaler.minimize(self._optimizer, final)
                self._optimizer.clear_grad()
        else:
            final.backward()
            if update:
                self._optimizer.step()
                self._optimizer.clear_grad()
        metrics = self._update_metrics(outputs, labels)
        loss_np = [_to_numpy(v) for v in losses]
        return (loss_np, metrics) if self._metrics else loss_np

    def _update_metrics(self, outputs, labels):
        res = []
        with no_grad():
            for m in self._metrics:
                outs = m.compute(*(to_list(outputs) + labels))
                res.append(m.update(*[_to_numpy(o) for o in to_list(outs)]))
        return res

    @no_grad()
    def eval_batch(self, inputs, labels=None):
        """Forward and loss without gradients; updates the metrics. Returns like train_batch."""
        self.network.eval()
        place = _place_of(self.network)
        inputs = [_to_tensor(x, place) for x in to_list(inputs)]
        labels = [_to_tensor(x, place) for x in to_list(labels)]
        with self._autocast():
            outputs = self.network(*inputs)
            losses = []
            if self._loss is not None and labels:
                losses = to_list(self._loss(*(to_list(outputs) + labels)))
        metrics = self._update_metrics(outputs, labels)
        loss_np = [_to_numpy(v) for v in losses]
        if self._metrics and self._loss is not None:
            return loss_np, metrics
        return loss_np if self._loss is not None else metrics

    @no_grad()
    def predict_batch(self, inputs):
        """The network's outputs on one batch, as a list of NumPy arrays."""
        self.network.eval()
        inputs = [_to_tensor(x, _place_of(self.network)) for x in to_list(inputs)]
        with self._autocast():
            return [_to_numpy(o) for o in to_list(self.network(*inputs))]

    # ---- loops
    def _loader(self, data, batch_size, shuffle, drop_last, num_workers):
        if data is None:
            return None
        if isinstance(data, DataLoader):
            return data
        if isinstance(data, (Dataset, IterableDataset)):
            return DataLoader(
                data,
                batch_size=batch_size,
                shuffle=shuffle and not isinstance(data, IterableDataset),
                drop_last=drop_last,
                num_workers=num_workers,
            )
        if hasattr(data, "__iter__"):
            return data
        raise TypeError(f"Model: data must be a Dataset or a DataLoader, got {type(data).__name__}")

    @staticmethod
    def _len(loader):
        try:
            return len(loader)
        except TypeError:
            return None

    def _run_one_epoch(self, loader, callbacks, mode):
        for m in self._metrics:
            m.reset()
        logs, outputs = {}, []
        steps = self._len(loader)
        for step, data in enumerate(loader):
            data = to_list(data)
            callbacks.on_batch_begin(mode, step, logs)
            if mode != "predict":
                ins, labs = self._split(data)
                if mode == "train":
                    update = (step + 1) % self._accumulate == 0 or (
                        steps is not None and step + 1 == steps
                    )
                    outs = self.train_batch(ins, labs, update)
                else:
                    outs = self.eval_batch(ins, labs)
                if self._metrics and self._loss is not None:
                    values = [[float(np.asarray(v).reshape(-1)[0]) for v in outs[0]]]
                elif self._loss is not None:
                    values = [[float(np.asarray(v).reshape(-1)[0]) for v in outs]]
                else:
                    values = []
                for m in self._metrics:
                    values.extend(to_list(m.accumulate()))
                for k, v in zip(self._metrics_name(), values):
                    logs[k] = v
            else:
                ins = data[: self._n_inputs] if self._n_inputs else data
                outputs.append(self.predict_batch(ins))
            logs["step"] = step
            first = data[0] if data else None
            logs["batch_size"] = (
                int(first.shape[0]) if hasattr(first, "shape") and len(first.shape) else 1
            )
            callbacks.on_batch_end(mode, step, logs)
            if mode == "train" and self.stop_training:
                break
        if mode == "predict":
            return logs, outputs
        return logs

    def fit(
        self,
        train_data=None,
        eval_data=None,
        batch_size=1,
        epochs=1,
        eval_freq=1,
        log_freq=10,
        save_dir=None,
        save_freq=1,
        verbose=2,
        drop_last=False,
        shuffle=True,
        num_workers=0,
        callbacks=None,
        accumulate_grad_batches=1,
        num_iters=None,
    ):
        """Trains for `epochs` epochs, evaluating on eval_data every eval_freq epochs and
        saving to save_dir every save_freq epochs. Returns nothing (as Paddle)."""
        if train_data is None:
            raise ValueError("Model.fit: train_data is required")
        if not self._prepared or self._optimizer is None or self._loss is None:
            raise RuntimeError("Model.fit: call prepare(optimizer, loss, metrics) first")
        for n, v in (
            ("batch_size", batch_size),
            ("epochs", epochs),
            ("eval_freq", eval_freq),
            ("log_freq", log_freq),
            ("save_freq", save_freq),
            ("accumulate_grad_batches", accumulate_grad_batches),
        ):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"Model.fit: {n} must be a positive integer, got {v!r}")
        train_loader = self._loader(train_data, batch_size, shuffle, drop_last, num_workers)
        eval_loader = self._loader(eval_data, batch_size, False, False, num_workers)
        self._accumulate = accumulate_grad_batches
        self._save_dir = save_dir
        steps = self._len(train_loader)
        if num_iters is not None:
            steps = min(steps, num_iters) if steps else num_iters
        cbks = config_callbacks(
            callbacks,
            model=self,
            batch_size=batch_size,
            epochs=epochs,
            steps=steps,
            log_freq=log_freq,
            verbose=verbose,
            save_freq=save_freq,
            save_dir=save_dir,
            metrics=self._metrics_name(),
        )
        self.stop_training = False
        cbks.on_begin("train")
        logs = {}
        iters = 0
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            loader = train_loader
            if num_iters is not None:
                loader = _Take(train_loader, num_iters - iters)
            logs = self._run_one_epoch(loader, cbks, "train")
            iters += logs.get("step", -1) + 1
            cbks.on_epoch_end(epoch, logs)
            if eval_loader is not None and epoch % eval_freq == 0:
                self._evaluate_into(eval_loader, cbks)
            if self.stop_training or (num_iters is not None and iters >= num_iters):
                break
        cbks.on_end("train", logs)
        self._accumulate = 1

    def _evaluate_into(self, loader, cbks):
        cbks.on_begin("eval", {"steps": self._len(loader), "metrics": self._metrics_name()})
        logs = self._run_one_epoch(loader, cbks, "eval")
        cbks.on_end("eval", logs)
        return logs

    def evaluate(
        self,
        eval_data,
        batch_size=1,
        log_freq=10,
        verbose=2,
        num_workers=0,
        callbacks=None,
        num_iters=None,
    ):
        """Loss and metrics over eval_data: {'loss': [value], 'acc': value, ...}."""
        if self._loss is None and not self._metrics:
            raise RuntimeError("Model.evaluate: call prepare() with a loss or metrics first")
        loader = self._loader(eval_data, batch_size, False, False, num_workers)
        if num_iters is not None:
            loader = _Take(loader, num_iters)
        cbks = config_callbacks(
            callbacks,
            model=self,
            log_freq=log_freq,
            verbose=verbose,
            metrics=self._metrics_name(),
            mode="eval",
        )
        logs = self._evaluate_into(loader, cbks)
        return {k: logs[k] for k in self._metrics_name() if k in logs}

    def predict(
        self, test_data, batch_size=1, num_workers=0, stack_outputs=False, verbose=1, callbacks=None
    ):
        """The network's outputs over test_data: one list per output, holding each batch's
        array (or, with stack_outputs, one array stacked over the batches)."""
        loader = self._loader(test_data, batch_size, False, False, num_workers)
        cbks = config_callbacks(callbacks, model=self, verbose=verbose, mode="test")
        cbks.on_begin("predict", {"steps": self._len(loader)})
        logs, outputs = self._run_one_epoch(loader, cbks, "predict")
        outputs = [list(o) for o in zip(*outputs)]
        if stack_outputs:
            outputs = [np.vstack(o) if o[0].ndim else np.stack(o) for o in outputs]
        cbks.on_end("predict", logs)
        return outputs

    # ---- checkpoints
    def save(self, path, training=True):
        """training=True: writes path.pdparams (the network's state dict) and, with an
        optimizer, path.pdopt (its state, including the LR scheduler). training=False: the
        inference model of oar.jit.save (the network in eval mode, traced with the Model's
        inputs), which oar.jit.load and oar.inference read."""
        from ..framework_io import save

        if not isinstance(path, str) or not path or os.path.basename(path) == "":
            raise ValueError(f"Model.save: path must be 'dir/prefix', got {path!r}")
        if not training:
            self._save_inference(path)
            return
        save(self.network.state_dict(), path + ".pdparams")
        if self._optimizer is not None:
            save(self._optimizer.state_dict(), path + ".pdopt")

    def _save_inference(self, path):
        from .. import jit

        if not self._inputs:
            raise RuntimeError(
                "Model.save(training=False) needs the input specs: pass inputs=[InputSpec(...)] "
                "to Model"
            )
        was_training = self.network.training
        self.network.eval()
        try:
            jit.save(self.network, path, input_spec=self._inputs)
        finally:
            if was_training:
                self.network.train()

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        """Restores what save() wrote. skip_mismatch ignores missing keys and shape
        mismatches (with a warning); reset_optimizer skips the optimizer state."""
        from ..framework_io import load

        if path.endswith(".pdparams"):
            path = path[: -len(".pdparams")]
        state = load(path + ".pdparams")
        if skip_mismatch:
            own = self.network.state_dict()
            keep = {}
            for k, v in state.items():
                if k in own and list(own[k].shape) == list(v.shape):
                    keep[k] = v
                else:
                    warnings.warn(f"Model.load: skipping '{k}' (missing or shape mismatch)")
            self.network.set_state_dict(keep, strict=False)
        else:  # as Paddle's Model.load: a missing key or a shape mismatch raises
            self.network.set_state_dict(state, strict=True)
        opt_path = path + ".pdopt"
        if self._optimizer is not None and not reset_optimizer and os.path.exists(opt_path):
            self._optimizer.set_state_dict(load(opt_path))

    def summary(self, input_size=None, dtype=None):
        """oar.summary of the network; input_size defaults to the inputs given to Model."""
        from .model_summary import summary

        if input_size is None:
            if not self._inputs:
                raise ValueError("Model.summary: give input_size or Model(inputs=[InputSpec...])")
            input_size = [tuple(s.shape) for s in self._inputs]
            if len(input_size) == 1:
                input_size = input_size[0]
        return summary(self.network, input_size, dtypes=dtype)


class _Take:
    """The first n batches of a loader."""

    def __init__(self, loader, n):
        self.loader, self.n = loader, max(int(n), 0)

    def __len__(self):
        try:
            return min(len(self.loader), self.n)
        except TypeError:
            return self.n

    def __iter__(self):
        for i, b in enumerate(self.loader):
            if i >= self.n:
                return
            yield b
