"""Sequential.append/insert/extend, LayerDict.update replacing in place,
named_sublayers(remove_duplicate=False), Dropout's Paddle 3.3 argument order, repr and
inplace."""
from collections import OrderedDict

import numpy as np
import pytest

import oar
import oar.nn as nn


def test_sequential_append_insert_extend():
    x = oar.rand([3, 10])
    m = nn.Sequential(nn.Linear(20, 30))
    m.insert(0, nn.Linear(10, 20))
    assert m(x).shape == [3, 30] and list(m._sub_layers) == ["0", "1"]
    m = nn.Sequential(nn.Linear(10, 20)).append(nn.Linear(20, 30))
    assert m(x).shape == [3, 30]
    m = nn.Sequential()
    m.extend([nn.Linear(10, 20), nn.Linear(20, 30)])
    np.testing.assert_allclose(m(x).numpy(), m[1](m[0](x)).numpy())
    named = nn.Sequential(("a", nn.ReLU()), ("b", nn.Tanh()))
    named.insert(1, nn.Sigmoid())
    assert list(named._sub_layers) == ["a", "1", "b"]
    with pytest.raises(IndexError, match="Sequential.insert: index 9 out of range"):
        named.insert(9, nn.ReLU())


def test_layer_dict_update_keeps_positions():
    d = nn.LayerDict(OrderedDict([("conv1d", nn.Conv1D(3, 2, 3)), ("conv2d", nn.Conv2D(3, 2, 3)),
                                  ("conv3d", nn.Conv3D(4, 6, 3))]))
    new = nn.Conv2D(4, 2, 4)
    d.update(OrderedDict([("relu", nn.ReLU()), ("conv2d", new)]))
    assert list(d.keys()) == ["conv1d", "conv2d", "conv3d", "relu"] and d["conv2d"] is new
    assert sum(p.size for p in d.parameters()) == sum(p.size for p in (
        list(d["conv1d"].parameters()) + list(new.parameters()) + list(d["conv3d"].parameters())))


def test_named_sublayers_duplicates():
    lin = nn.Linear(10, 3)
    model = nn.Sequential(lin, lin)
    assert [p for p, _ in model.named_sublayers()] == ["0"]
    assert [p for p, _ in model.named_sublayers(include_self=True, remove_duplicate=False)] == \
        ["", "0", "1"]


def test_dropout_order_repr_inplace():
    d = nn.Dropout(0.3, axis=1)
    assert d.p == 0.3 and d.axis == 1 and not d.inplace
    assert repr(d) == "Dropout(p=0.3, axis=1, mode=upscale_in_train, inplace=False)"
    x = oar.ones([8, 8])
    y = nn.Dropout(0.5, True)(x)
    assert y is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    d.eval()
    z = oar.ones([3])
    assert d(z).numpy().tolist() == [1.0, 1.0, 1.0]


def test_paddle_nn_layer_submodules():
    from oar.nn.layer.layers import Layer
    from oar.nn.layer.transformer import Transformer
    import oar.nn.layer.loss as losses
    assert Layer is nn.Layer and Transformer is nn.Transformer
    assert losses.CrossEntropyLoss is nn.CrossEntropyLoss
    mask = Transformer(8, 4, dim_feedforward=16).generate_square_subsequent_mask(3).numpy()
    assert np.isneginf(mask[0, 1]) and mask[1, 0] == 0
    with pytest.raises(ImportError):
        from oar.nn.layer.conv import NoSuchLayer  # noqa: F401
