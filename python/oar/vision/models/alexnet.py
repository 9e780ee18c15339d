"""AlexNet as Paddle's paddle.vision.models.AlexNet (same sublayer names, so Paddle's
state dicts load); every weight and bias starts U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
import math

from ... import nn
from ...nn import functional as F
from ..._ops import flatten
from ._utils import no_pretrained


def _uniform_attr(fan_in):
    stdv = 1.0 / math.sqrt(fan_in)
    return nn.ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv))


def _conv(cin, cout, k, stride, padding, fan_in):
    return nn.Conv2D(cin, cout, k, stride=stride, padding=padding,
                     weight_attr=_uniform_attr(fan_in), bias_attr=_uniform_attr(fan_in))


class ConvPoolLayer(nn.Layer):
    def __init__(self, input_channels, output_channels, filter_size, stride, padding, stdv=None,
                 groups=1, act=None):
        super().__init__()
        fan_in = input_channels * filter_size * filter_size
        self.relu = nn.ReLU() if act == "relu" else None
        self._conv = _conv(input_channels, output_channels, filter_size, stride, padding, fan_in)
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)

    def forward(self, inputs):
        x = self._conv(inputs)
        if self.relu is not None:
            x = self.relu(x)
        return self._pool(x)


class AlexNet(nn.Layer):
    """AlexNet(num_classes=1000): input [N, 3, 224, 224]; num_classes <= 0 drops the head."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.num_classes = num_classes
        self._conv1 = ConvPoolLayer(3, 64, 11, 4, 2, act="relu")
        self._conv2 = ConvPoolLayer(64, 192, 5, 1, 2, act="relu")
        self._conv3 = _conv(192, 384, 3, 1, 1, 192 * 9)
        self._conv4 = _conv(384, 256, 3, 1, 1, 384 * 9)
        self._conv5 = ConvPoolLayer(256, 256, 3, 1, 1, act="relu")
        if num_classes > 0:
            fan = 256 * 6 * 6
            self._drop1 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc6 = nn.Linear(fan, 4096, weight_attr=_uniform_attr(fan),
                                  bias_attr=_uniform_attr(fan))
            self._drop2 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc7 = nn.Linear(4096, 4096, weight_attr=_uniform_attr(fan),
                                  bias_attr=_uniform_attr(fan))
            self._fc8 = nn.Linear(4096, num_classes, weight_attr=_uniform_attr(fan),
                                  bias_attr=_uniform_attr(fan))

    def forward(self, inputs):
        x = self._conv2(self._conv1(inputs))
        x = F.relu(self._conv4(F.relu(self._conv3(x))))
        x = self._conv5(x)
        if self.num_classes > 0:
            x = flatten(x, start_axis=1, stop_axis=-1)
            x = F.relu(self._fc6(self._drop1(x)))
            x = F.relu(self._fc7(self._drop2(x)))
            x = self._fc8(x)
        return x


def alexnet(pretrained=False, **kwargs):
    no_pretrained("alexnet", pretrained)
    return AlexNet(**kwargs)
