"""oar.nn: layers, losses, initializers (Paddle's nn API)."""
from . import functional, initializer  # noqa: F401
from .layer import Layer, Parameter, ParamAttr, Sequential, LayerList  # noqa: F401
from .layer import LayerDict, ParameterList, ParameterDict  # noqa: F401
from .embedding import Embedding  # noqa: F401
from .clip import ClipGradByValue, ClipGradByNorm, ClipGradByGlobalNorm  # noqa: F401
from . import clip as _clip  # noqa: F401
from . import utils  # noqa: F401
from .layers import (  # noqa: F401
    Linear, ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax, Identity, Flatten, Dropout,
    CrossEntropyLoss, MSELoss, L1Loss,
)
