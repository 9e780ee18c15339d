"""LPPool1D/2D and MaxUnPool1D/2D/3D layers over _functional_pool_more, FractionalMaxPool2D/3D,
MultiLabelMarginLoss and CTCLoss."""
from .layer import Layer

__all__ = ["LPPool1D", "LPPool2D", "MaxUnPool1D", "MaxUnPool2D", "MaxUnPool3D",
           "MultiLabelMarginLoss", "CTCLoss", "FractionalMaxPool2D", "FractionalMaxPool3D"]


class _LPPool(Layer):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False,
                 data_format=None, name=None):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride = norm_type, kernel_size, stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.data_format = data_format or self._format

    def forward(self, x):
        from . import _functional_pool_more as P
        return getattr(P, self._fn)(x, self.norm_type, self.kernel_size, self.stride,
                                    self.padding, self.ceil_mode, self.data_format)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class LPPool1D(_LPPool):
    """Power-average pooling over [N, C, L] (F.lp_pool1d)."""
    _fn, _format = "lp_pool1d", "NCL"


class LPPool2D(_LPPool):
    """Power-average pooling over [N, C, H, W] (F.lp_pool2d)."""
    _fn, _format = "lp_pool2d", "NCHW"


class _MaxUnPool(Layer):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, data_format=None, output_size=None,
                 name=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.data_format = data_format or self._format
        self.output_size = output_size

    def forward(self, x, indices):
        from . import _functional_pool_more as P
        return getattr(P, self._fn)(x, indices, self.kernel_size, self.stride, self.padding,
                                    self.data_format, self.output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnPool1D(_MaxUnPool):
    """Inverse of max_pool1d with return_mask=True (F.max_unpool1d)."""
    _fn, _format = "max_unpool1d", "NCL"


class MaxUnPool2D(_MaxUnPool):
    """Inverse of max_pool2d with return_mask=True (F.max_unpool2d)."""
    _fn, _format = "max_unpool2d", "NCHW"


class MaxUnPool3D(_MaxUnPool):
    """Inverse of max_pool3d with return_mask=True (F.max_unpool3d)."""
    _fn, _format = "max_unpool3d", "NCDHW"


class MultiLabelMarginLoss(Layer):
    """F.multi_label_margin_loss as a layer."""

    def __init__(self, reduction="mean", name=None):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"MultiLabelMarginLoss: reduction must be 'mean', 'sum' or 'none', "
                             f"got '{reduction}'")
        self.reduction = reduction

    def forward(self, input, label):
        from ._functional_misc import multi_label_margin_loss
        return multi_label_margin_loss(input, label, self.reduction)


class CTCLoss(Layer):
    """F.ctc_loss as a layer."""

    def __init__(self, blank=0, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"CTCLoss: reduction must be 'mean', 'sum' or 'none', got "
                             f"'{reduction}'")
        self.blank, self.reduction = blank, reduction

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        from ._functional_ctc import ctc_loss
        return ctc_loss(log_probs, labels, input_lengths, label_lengths, self.blank,
                        self.reduction, norm_by_times)


class _FractionalMaxPool(Layer):
    _fn = None

    def __init__(self, output_size, kernel_size=None, random_u=None, return_mask=False,
                 name=None):
        super().__init__()
        self._output_size, self._kernel_size = output_size, kernel_size
        self._random_u, self._return_mask = random_u, return_mask

    def forward(self, x):
        from . import _functional_fractional_pool as P
        return getattr(P, self._fn)(x, self._output_size, self._kernel_size, self._random_u,
                                    self._return_mask)

    def extra_repr(self):
        return f"output_size={self._output_size}, return_mask={self._return_mask}"


class FractionalMaxPool2D(_FractionalMaxPool):
    """Fractional max pooling over [N, C, H, W] (F.fractional_max_pool2d); random_u None
    draws a new u on every call."""
    _fn = "fractional_max_pool2d"


class FractionalMaxPool3D(_FractionalMaxPool):
    """Fractional max pooling over [N, C, D, H, W] (F.fractional_max_pool3d)."""
    _fn = "fractional_max_pool3d"
