"""SqueezeNet 1.0 / 1.1 as Paddle's paddle.vision.models.SqueezeNet (same sublayer names)."""
from ... import nn
from ...nn import functional as F
from ..._ops import concat, squeeze
from ._utils import no_pretrained


class MakeFireConv(nn.Layer):
    def __init__(self, input_channels, output_channels, filter_size, padding=0):
        super().__init__()
        self._conv = nn.Conv2D(input_channels, output_channels, filter_size, padding=padding)

    def forward(self, x):
        return F.relu(self._conv(x))


class MakeFire(nn.Layer):
    def __init__(self, input_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super().__init__()
        self._conv = MakeFireConv(input_channels, squeeze_channels, 1)
        self._conv_path1 = MakeFireConv(squeeze_channels, expand1x1_channels, 1)
        self._conv_path2 = MakeFireConv(squeeze_channels, expand3x3_channels, 3, padding=1)

    def forward(self, inputs):
        x = self._conv(inputs)
        return concat([self._conv_path1(x), self._conv_path2(x)], axis=1)


# (squeeze, expand) channels of fire modules 1..8; inputs follow from the previous output.
_FIRES = [(16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256)]
# After which fire modules (1-based) the max pool runs, per version.
_POOL_AFTER = {"1.0": (3, 7), "1.1": (2, 4)}


class SqueezeNet(nn.Layer):
    """SqueezeNet(version, num_classes=1000, with_pool=True); version is '1.0' or '1.1'."""

    def __init__(self, version, num_classes=1000, with_pool=True):
        super().__init__()
        if version not in _POOL_AFTER:
            raise ValueError(f"SqueezeNet: version must be '1.0' or '1.1', got {version!r}")
        self.version, self.num_classes, self.with_pool = version, num_classes, with_pool
        if version == "1.0":
            self._conv = nn.Conv2D(3, 96, 7, stride=2)
            cin = 96
        else:
            self._conv = nn.Conv2D(3, 64, 3, stride=2, padding=1)
            cin = 64
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)
        for i, (sq, ex) in enumerate(_FIRES, 1):
            setattr(self, f"_conv{i}", MakeFire(cin, sq, ex, ex))
            cin = 2 * ex
        self._drop = nn.Dropout(p=0.5, mode="downscale_in_infer")
        self._conv9 = nn.Conv2D(512, num_classes, 1)
        self._avg_pool = nn.AdaptiveAvgPool2D(1)

    def forward(self, inputs):
        x = self._pool(F.relu(self._conv(inputs)))
        pools = _POOL_AFTER[self.version]
        for i in range(1, len(_FIRES) + 1):
            x = getattr(self, f"_conv{i}")(x)
            if i in pools:
                x = self._pool(x)
        if self.num_classes > 0:
            x = self._conv9(self._drop(x))
        if self.with_pool:
            x = squeeze(self._avg_pool(F.relu(x)), axis=[2, 3])
        return x


def squeezenet1_0(pretrained=False, **kwargs):
    no_pretrained("squeezenet1_0", pretrained)
    return SqueezeNet("1.0", **kwargs)


def squeezenet1_1(pretrained=False, **kwargs):
    no_pretrained("squeezenet1_1", pretrained)
    return SqueezeNet("1.1", **kwargs)
