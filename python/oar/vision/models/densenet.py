"""DenseNet 121/161/169/201/264 as Paddle's paddle.vision.models.DenseNet (same sublayer
names)."""
import math

from ... import nn
from ...nn import functional as F
from ..._ops import concat, flatten
from ._utils import no_pretrained

# layers -> (initial features, growth rate, dense layers per block)
_SPEC = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
         169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32]),
         264: (64, 32, [6, 12, 64, 48])}


class _BNReLU(nn.BatchNorm2D):
    """BatchNorm followed by ReLU: Paddle's BatchNorm(num_channels, act='relu')."""

    def forward(self, x):
        return F.relu(super().forward(x))


class BNACConvLayer(nn.Layer):
    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1):
        super().__init__()
        self._batch_norm = _BNReLU(num_channels)
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride,
                               padding=pad, groups=groups, bias_attr=False)

    def forward(self, x):
        return self._conv(self._batch_norm(x))


class DenseLayer(nn.Layer):
    def __init__(self, num_channels, growth_rate, bn_size, dropout):
        super().__init__()
        self.dropout = dropout
        self.bn_ac_func1 = BNACConvLayer(num_channels, bn_size * growth_rate, 1)
        self.bn_ac_func2 = BNACConvLayer(bn_size * growth_rate, growth_rate, 3, pad=1)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode="downscale_in_infer")

    def forward(self, x):
        y = self.bn_ac_func2(self.bn_ac_func1(x))
        if self.dropout:
            y = self.dropout_func(y)
        return concat([x, y], axis=1)


class DenseBlock(nn.Layer):
    def __init__(self, num_channels, num_layers, bn_size, growth_rate, dropout, name=None):
        super().__init__()
        self.dense_layer_func = []
        for i in range(num_layers):
            self.dense_layer_func.append(self.add_sublayer(
                f"{name}_{i + 1}",
                DenseLayer(num_channels + i * growth_rate, growth_rate, bn_size, dropout)))

    def forward(self, x):
        for layer in self.dense_layer_func:
            x = layer(x)
        return x


class TransitionLayer(nn.Layer):
    def __init__(self, num_channels, num_output_features):
        super().__init__()
        self.conv_ac_func = BNACConvLayer(num_channels, num_output_features, 1)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, x):
        return self.pool2d_avg(self.conv_ac_func(x))


class ConvBNLayer(nn.Layer):
    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1):
        super().__init__()
        self._conv = nn.Conv2D(num_channels, num_filters, filter_size, stride=stride,
                               padding=pad, groups=groups, bias_attr=False)
        self._batch_norm = _BNReLU(num_filters)

    def forward(self, x):
        return self._batch_norm(self._conv(x))


class DenseNet(nn.Layer):
    """DenseNet(layers=121, bn_size=4, dropout=0.0, num_classes=1000, with_pool=True)."""

    def __init__(self, layers=121, bn_size=4, dropout=0.0, num_classes=1000, with_pool=True):
        super().__init__()
        if layers not in _SPEC:
            raise ValueError(f"DenseNet: layers must be one of {sorted(_SPEC)}, got {layers}")
        self.num_classes, self.with_pool = num_classes, with_pool
        features, growth, self.block_config = _SPEC[layers]
        self.conv1_func = ConvBNLayer(3, features, 7, stride=2, pad=3)
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.dense_block_func_list, self.transition_func_list = [], []
        last = len(self.block_config) - 1
        for i, n in enumerate(self.block_config):
            self.dense_block_func_list.append(self.add_sublayer(
                f"db_conv_{i + 2}",
                DenseBlock(features, n, bn_size, growth, dropout, name=f"conv{i + 2}")))
            features += n * growth
            if i != last:
                self.transition_func_list.append(self.add_sublayer(
                    f"tr_conv{i + 2}_blk", TransitionLayer(features, features // 2)))
                features //= 2
        self.batch_norm = _BNReLU(features)
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            stdv = 1.0 / math.sqrt(features)
            self.out = nn.Linear(features, num_classes, weight_attr=nn.ParamAttr(
                initializer=nn.initializer.Uniform(-stdv, stdv)))

    def forward(self, x):
        y = self.pool2d_max(self.conv1_func(x))
        for i in range(len(self.block_config)):
            y = self.dense_block_func_list[i](y)
            if i < len(self.transition_func_list):
                y = self.transition_func_list[i](y)
        y = self.batch_norm(y)
        if self.with_pool:
            y = self.pool2d_avg(y)
        if self.num_classes > 0:
            y = self.out(flatten(y, start_axis=1, stop_axis=-1))
        return y


def _densenet(name, layers, pretrained, **kwargs):
    no_pretrained(name, pretrained)
    return DenseNet(layers=layers, **kwargs)


def densenet121(pretrained=False, **kwargs):
    return _densenet("densenet121", 121, pretrained, **kwargs)


def densenet161(pretrained=False, **kwargs):
    return _densenet("densenet161", 161, pretrained, **kwargs)


def densenet169(pretrained=False, **kwargs):
    return _densenet("densenet169", 169, pretrained, **kwargs)


def densenet201(pretrained=False, **kwargs):
    return _densenet("densenet201", 201, pretrained, **kwargs)


def densenet264(pretrained=False, **kwargs):
    return _densenet("densenet264", 264, pretrained, **kwargs)
