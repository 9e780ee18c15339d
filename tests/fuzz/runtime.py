"""What a fuzz call needs at run time: builds the tensors a recipe names. Self-contained
(numpy and oar only) because a finding's reproducer script embeds this file verbatim, so
the script runs anywhere oar is installed, without this package."""
import numpy as np

import oar

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64"]


def _values(kind, shape, rng):
    if kind == "int":
        return rng.integers(-4, 5, size=shape).astype(np.float64)
    if kind == "pos":
        return rng.uniform(0.1, 3.0, size=shape)
    if kind in ("special", "extreme"):  # the IEEE edge values every float op must survive
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e-310, 1.0])
        return rng.choice(pool, size=shape)
    if kind == "zero":
        return np.zeros(shape)
    return rng.standard_normal(size=shape)


def T(dtype, shape, kind="rand", seed=0, view=None, grad=False):
    """A tensor of `dtype` and `shape` filled by `kind`; `view` makes it a non-contiguous
    view ('t': transposed, 'step': every other element of the last dim, 'expand': a
    stride-0 broadcast of a size-1 leading dim) of the same shape."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    if view == "step" and shape:
        base = _values(kind, shape[:-1] + (shape[-1] * 2,), rng)
    elif view == "t" and len(shape) >= 2:
        base = _values(kind, shape[:-2] + (shape[-1], shape[-2]), rng)
    else:
        base = _values(kind, shape, rng)
    with np.errstate(all="ignore"):
        if dtype == "bool":
            x = oar.to_tensor(base != 0)
        elif dtype in ("float16", "bfloat16"):
            x = oar.to_tensor(base.astype(np.float32)).astype(dtype)
        elif dtype.startswith(("int", "uint")) and kind == "extreme":  # integer range ends
            info = np.iinfo(dtype)
            pool = np.array([info.min, info.max, -1, 0, 1], dtype=np.int64).astype(dtype)
            x = oar.to_tensor(rng.choice(pool, size=shape))
        elif dtype.startswith(("int", "uint")):
            x = oar.to_tensor(np.nan_to_num(base).clip(-100, 100).astype(dtype))
        else:
            x = oar.to_tensor(base.astype(dtype))
    if view == "step" and shape:
        x = x[..., ::2]
    elif view == "t" and len(shape) >= 2:
        x = x.transpose(list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2])
    elif view == "expand" and shape and shape[0] > 1:
        x = x[:1].expand(list(shape))
    if grad and dtype in ("float16", "bfloat16", "float32", "float64"):
        x.stop_gradient = False
    return x


def load_as(fmt, data, other=b""):
    """Loads bytes `data` the way format `fmt` is read from disk ('checkpoint' and
    'paddle_checkpoint', a paddle.save pickle: oar.load,
    'jit': oar.jit.load, 'predictor': the inference predictor, 'pir_text': oar.pir.parse,
    'pir_bin': oar.pir.deserialize). For the two-file saved model, `data` is the
    .pdmodel (or the .pdiparams when fmt ends in '_params') and `other` the intact partner."""
    import tempfile
    if fmt == "pir_text":
        return oar.pir.parse(data.decode("utf-8", "replace"))
    if fmt == "pir_bin":
        return oar.pir.deserialize(data)
    with tempfile.TemporaryDirectory(prefix="oar-fuzz-file-") as d:
        return _load_files(fmt, data, other, d)


def _load_files(fmt, data, other, d):
    import os
    if fmt in ("checkpoint", "paddle_checkpoint"):
        with open(os.path.join(d, "m.pdparams"), "wb") as f:
            f.write(data)
        return oar.load(os.path.join(d, "m.pdparams"))
    model, params = (other, data) if fmt.endswith("_params") else (data, other)
    with open(os.path.join(d, "m.pdmodel"), "wb") as f:
        f.write(model)
    with open(os.path.join(d, "m.pdiparams"), "wb") as f:
        f.write(params)
    prefix = os.path.join(d, "m")
    x = oar.ones([2, 4])
    if fmt.startswith("jit"):
        return oar.jit.load(prefix)(x)
    config = oar.inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    pred = oar.inference.create_predictor(config)
    return pred.run([x])
