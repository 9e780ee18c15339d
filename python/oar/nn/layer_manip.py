"""Layers over the padding/resampling/embedding functionals (Paddle's names and
constructor arguments): Pad1D/2D/3D, ZeroPad2D, Upsample, UpsamplingNearest2D,
UpsamplingBilinear2D, PixelShuffle, PixelUnshuffle, Embedding, CosineSimilarity,
PairwiseDistance, Unfold, Fold."""
from . import _functional_manip as F
from . import initializer as init
from .layer import Layer

__all__ = ["Pad1D", "Pad2D", "Pad3D", "ZeroPad2D", "Upsample", "UpsamplingNearest2D",
           "UpsamplingBilinear2D", "PixelShuffle", "PixelUnshuffle", "Embedding",
           "CosineSimilarity", "PairwiseDistance", "Unfold", "Fold"]


def _pad_layer(name, nd, default_format):
    class Pad(Layer):
        def __init__(self, padding, mode="constant", value=0.0, data_format=default_format,
                     name=None):
            super().__init__()
            pads = [padding] * (2 * nd) if isinstance(padding, int) else list(padding)
            if len(pads) != 2 * nd:
                raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * nd} ints, "
                                 f"got {padding}")
            self._pad, self._mode, self._value, self._format = pads, mode, value, data_format

        def forward(self, x):
            return F.pad(x, self._pad, self._mode, self._value, self._format)

        def extra_repr(self):
            return f"padding={self._pad}, mode={self._mode}, value={self._value}, data_format={self._format}"
    Pad.__name__ = Pad.__qualname__ = name
    return Pad


Pad1D = _pad_layer("Pad1D", 1, "NCL")
Pad2D = _pad_layer("Pad2D", 2, "NCHW")
Pad3D = _pad_layer("Pad3D", 3, "NCDHW")


class ZeroPad2D(Pad2D):
    def __init__(self, padding, data_format="NCHW", name=None):
        super().__init__(padding, "constant", 0.0, data_format)


class Upsample(Layer):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=False,
                 align_mode=0, data_format=None, name=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.align_mode, self.data_format = align_corners, align_mode, data_format

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.align_mode, self.data_format)


class UpsamplingNearest2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "nearest", False, 0, data_format)


class UpsamplingBilinear2D(Upsample):
    def __init__(self, size=None, scale_factor=None, data_format="NCHW", name=None):
        super().__init__(size, scale_factor, "bilinear", True, 0, data_format)


class PixelShuffle(Layer):
    def __init__(self, upscale_factor, data_format="NCHW", name=None):
        super().__init__()
        self.upscale_factor, self.data_format = upscale_factor, data_format

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor, self.data_format)


class PixelUnshuffle(Layer):
    def __init__(self, downscale_factor, data_format="NCHW", name=None):
        super().__init__()
        self.downscale_factor, self.data_format = downscale_factor, data_format

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor, self.data_format)


class Embedding(Layer):
    """Lookup table [num_embeddings, embedding_dim]; the padding_idx row starts at zero."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, sparse=False, weight_attr=None, name=None):
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise ValueError(f"Embedding: num_embeddings and embedding_dim must be positive, got "
                             f"{num_embeddings}, {embedding_dim}")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range "
                             f"[{-num_embeddings}, {num_embeddings})")
        self._num_embeddings, self._embedding_dim = num_embeddings, embedding_dim
        self._padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self.weight = self.create_parameter([num_embeddings, embedding_dim], attr=weight_attr,
                                            default_initializer=init.XavierUniform())
        if self._padding_idx is not None:
            w = self.weight.numpy()
            w[self._padding_idx] = 0
            self.weight.set_value(w)

    def forward(self, x):
        return F.embedding(x, self.weight, self._padding_idx)

    def extra_repr(self):
        return f"{self._num_embeddings}, {self._embedding_dim}, padding_idx={self._padding_idx}"


class CosineSimilarity(Layer):
    def __init__(self, axis=1, eps=1e-8):
        super().__init__()
        self.axis, self.eps = axis, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.axis, self.eps)


class PairwiseDistance(Layer):
    def __init__(self, p=2.0, epsilon=1e-6, keepdim=False, name=None):
        super().__init__()
        self.p, self.epsilon, self.keepdim = p, epsilon, keepdim

    def forward(self, x, y):
        return F.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)


class Unfold(Layer):
    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self.kernel_sizes, self.dilations, self.paddings, self.strides = (
            kernel_sizes, dilations, paddings, strides)

    def forward(self, x):
        return F.unfold(x, self.kernel_sizes, self.strides, self.paddings, self.dilations)


class Fold(Layer):
    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self.output_sizes, self.kernel_sizes = output_sizes, kernel_sizes
        self.dilations, self.paddings, self.strides = dilations, paddings, strides

    def forward(self, x):
        return F.fold(x, self.output_sizes, self.kernel_sizes, self.strides, self.paddings,
                      self.dilations)
