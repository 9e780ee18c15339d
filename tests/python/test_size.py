"""Tensor.shape is an oar.Size (Paddle 3.3's paddle.Size): a list subclass that equals lists
and tuples, keeps its type through slicing and concatenation, prints as paddle.Size([...]) and
has numel()."""
import json
import pickle

import numpy as np
import pytest

import oar


def test_shape_is_a_size_and_a_list():
    s = oar.ones([2, 3]).shape
    assert type(s) is oar.Size and isinstance(s, list)
    assert s == [2, 3] and s == (2, 3) and [2, 3] == s and (2, 3) == s
    assert s != (2, 4) and s != [3] and not (s == (3, 2))
    assert s[0] == 2 and s[-1] == 3 and type(s[0]) is int
    assert list(s) == [2, 3] and len(s) == 2 and tuple(s) == (2, 3)
    assert oar.to_tensor(1.0).shape == [] and oar.to_tensor(1.0).shape.numel() == 1
    assert oar.zeros([2, 0, 4]).shape.numel() == 0


def test_size_keeps_its_type():
    s = oar.ones([2, 3, 4]).shape
    for t in (s[1:], s[::-1], s + [5], s + (5,)):
        assert type(t) is oar.Size
    assert s[1:] == [3, 4] and s + (5,) == [2, 3, 4, 5] and s.numel() == 24
    assert oar.Size([1, 2]) == [1, 2] and oar.Size() == []
    with pytest.raises(TypeError, match="paddle.Size"):
        s + 3


def test_size_prints_like_paddle_and_round_trips():
    s = oar.ones([2, 3]).shape
    assert repr(s) == str(s) == "paddle.Size([2, 3])"
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is oar.Size
    assert json.loads(json.dumps(s)) == [2, 3]
    assert np.zeros(s).shape == (2, 3) and oar.zeros(s).shape == [2, 3]
    assert "shape=[2, 3]" in repr(oar.ones([2, 3]))  # the tensor's repr keeps Paddle's form


def test_size_is_a_mutable_copy():
    x = oar.ones([2, 3])
    s = x.shape
    s[0] = 5
    s.append(7)
    assert s == [5, 3, 7] and x.shape == [2, 3]  # a new list each time, as in Paddle
    with pytest.raises(TypeError):
        hash(s)


def test_size_numel_overflow():
    with pytest.raises(OverflowError, match="numel"):
        oar.Size([2**62, 8]).numel()
