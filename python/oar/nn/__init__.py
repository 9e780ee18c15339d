"""oar.nn: layers, losses, initializers (Paddle's nn API)."""
from . import functional, initializer  # noqa: F401
from .layer import Layer, Parameter, ParamAttr, Sequential, LayerList  # noqa: F401
from .layer import LayerDict, ParameterList, ParameterDict  # noqa: F401
from .clip import ClipGradByValue, ClipGradByNorm, ClipGradByGlobalNorm  # noqa: F401
from . import clip as _clip  # noqa: F401
from . import utils  # noqa: F401
from .layer_common import (  # noqa: F401
    Linear, ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax, Identity, Flatten, Dropout,
    CrossEntropyLoss, MSELoss, L1Loss,
)
from .layer_cnn import *  # noqa: E402,F401,F403  (conv, pool, norm, dropout and activation layers)
from .layer_manip import *  # noqa: F401,F403  (Pad2D, Upsample, Embedding, ...)
from .layer_transformer import *  # noqa: E402,F401,F403  (MultiHeadAttention, Transformer*)
from .layer_rnn import *  # noqa: E402,F401,F403  (SimpleRNN/LSTM/GRU, cells, RNN, BiRNN)
from .layer_loss import *  # noqa: E402,F401,F403  (NLLLoss, BCELoss, KLDivLoss, Bilinear, ...)


def _loss_module():
    import importlib  # not `from . import loss`: that asks this __getattr__ first
    return importlib.import_module("oar.nn.loss")


def _quant_module():
    import importlib
    return importlib.import_module("oar.nn.quant")


# More loss layers, Maxout, the named pads, SiLU... (layer_more), paddle.nn.loss and
# paddle.nn.quant load on first use (oar._lazy).
from .. import _lazy  # noqa: E402
__getattr__ = _lazy.module_getattr("oar.nn", _lazy.NN_LAYERS, {"loss": _loss_module,
                                                              "quant": _quant_module})


def _register_layer_submodules():
    """paddle.nn.layer.<file> (transformer, common, conv, loss...), which model code imports
    from: each resolves names to oar.nn's own classes (`from paddle.nn.layer.transformer
    import Transformer`)."""
    import sys
    import types
    from . import layer as _layer_module

    def make(sub):
        mod = types.ModuleType(f"oar.nn.layer.{sub}")

        def resolve(name):
            if name.startswith("__"):
                raise AttributeError(name)
            return getattr(sys.modules["oar.nn"], name)
        mod.__getattr__ = resolve
        return mod
    _layer_module.__path__ = []  # a package to the import system; its children are below
    for sub in ("activation", "common", "container", "conv", "distance", "layers", "loss",
                "norm", "pooling", "rnn", "transformer", "vision"):
        mod = make(sub)
        sys.modules[mod.__name__] = mod
        setattr(_layer_module, sub, mod)


_register_layer_submodules()
