"""The model zoo beyond ResNet/VGG/MobileNetV2: trainable parameter counts equal the published
counts of each architecture (torchvision's, whose layouts Paddle's zoo shares; not ShuffleNetV2
x2.0, whose first stage Paddle makes 224 channels wide rather than 244), forward shapes
with a custom head and without one, gradients reach the first layer, and bad arguments raise
naming the model."""
import numpy as np
import pytest

import oar

M = oar.vision.models


def trainable(net):
    return sum(int(np.prod(p.shape)) for p in net.parameters() if not p.stop_gradient)


PUBLISHED = [("alexnet", 61100840), ("squeezenet1_0", 1248424), ("squeezenet1_1", 1235496),
             ("densenet121", 7978856), ("densenet161", 28681000), ("densenet169", 14149480),
             ("densenet201", 20013928), ("mobilenet_v1", 4231976),
             ("mobilenet_v3_small", 2542856), ("mobilenet_v3_large", 5483032),
             ("shufflenet_v2_x0_5", 1366792), ("shufflenet_v2_x1_0", 2278604),
             ("shufflenet_v2_x1_5", 3503624),
             ("resnext50_32x4d", 25028904), ("wide_resnet50_2", 68883240),
             ("wide_resnet101_2", 126886696),
             ("inception_v3", 23834568)]  # torchvision's count without its auxiliary head


@pytest.mark.parametrize("name,count", PUBLISHED)
def test_parameter_counts_match_published(name, count):
    assert trainable(getattr(M, name)()) == count


SMALL_INPUT = [("alexnet", 224), ("squeezenet1_0", 64), ("squeezenet1_1", 64),
               ("densenet121", 32), ("mobilenet_v1", 32), ("mobilenet_v3_small", 32),
               ("mobilenet_v3_large", 32), ("shufflenet_v2_x0_25", 32),
               ("shufflenet_v2_x0_33", 32), ("shufflenet_v2_swish", 32),
               ("resnext50_64x4d", 32), ("googlenet", 224), ("inception_v3", 75)]


@pytest.mark.parametrize("name,size", SMALL_INPUT)
def test_forward_shapes_and_gradient(name, size):
    oar.seed(1)
    net = getattr(M, name)(num_classes=7)
    net.eval()
    x = oar.randn([2, 3, size, size])
    out = net(x)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        assert list(o.shape) == [2, 7]
        assert np.isfinite(o.numpy()).all()
    net.train()
    out = net(x)
    sum(o.sum() for o in (out if isinstance(out, tuple) else (out,))).backward()
    first = next(p for p in net.parameters() if not p.stop_gradient)
    assert first.grad is not None and np.abs(first.grad.numpy()).sum() > 0


@pytest.mark.parametrize("name,channels", [("mobilenet_v1", 1024), ("shufflenet_v2_x1_0", 1024),
                                           ("densenet121", 1024), ("mobilenet_v3_small", 576)])
def test_without_head_returns_pooled_features(name, channels):
    net = getattr(M, name)(num_classes=0)
    net.eval()
    assert list(net(oar.randn([1, 3, 32, 32])).shape) == [1, channels, 1, 1]


def test_scaled_variants_and_eval_is_deterministic():
    net = M.MobileNetV1(scale=0.5, num_classes=3)
    net.eval()
    x = oar.randn([1, 3, 32, 32])
    np.testing.assert_array_equal(net(x).numpy(), net(x).numpy())
    assert list(M.MobileNetV3Large(scale=0.75, num_classes=4)(x).shape) == [1, 4]
    assert list(M.ShuffleNetV2(scale=0.5, act="swish", num_classes=2)(x).shape) == [1, 2]
    assert list(M.DenseNet(layers=121, dropout=0.2, num_classes=5)(x).shape) == [1, 5]
    sq = M.SqueezeNet("1.1", num_classes=6, with_pool=False)
    assert list(sq(oar.randn([1, 3, 64, 64])).shape)[:2] == [1, 6]


def test_state_dict_names_follow_paddle():
    keys = set(M.mobilenet_v1().state_dict())
    assert "conv2_1._depthwise_conv.0.weight" in keys and "fc.weight" in keys
    keys = set(M.shufflenet_v2_x0_25().state_dict())
    assert "2_1._conv_dw_1.0.weight" in keys and "_fc.bias" in keys
    keys = set(M.inception_v3().state_dict())
    assert "inception_block_list.10.branch3x3dbl_3b.1._variance" in keys
    keys = set(M.densenet121().state_dict())
    assert "db_conv_2.conv2_1.bn_ac_func1._conv.weight" in keys
    assert "tr_conv2_blk.conv_ac_func._batch_norm._mean" in keys


BAD = [
    (lambda: M.SqueezeNet("2.0"), "SqueezeNet"),
    (lambda: M.ShuffleNetV2(scale=0.7), "ShuffleNetV2"),
    (lambda: M.ShuffleNetV2(act="gelu"), "ShuffleNetV2"),
    (lambda: M.DenseNet(layers=100), "DenseNet"),
    (lambda: M.MobileNetV1(scale=0), "MobileNetV1"),
    (lambda: M.MobileNetV3Small(scale=-1), "MobileNetV3Small"),
    (lambda: M.alexnet(pretrained=True), "alexnet"),
    (lambda: M.densenet264(pretrained=True), "densenet264"),
]


@pytest.mark.parametrize("call,needle", BAD)
def test_bad_arguments_name_the_model(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()
