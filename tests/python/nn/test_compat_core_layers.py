"""Issue 18 (compat_core): Layer.astype to any dtype, float() storing a DataType,
to_static_state_dict, and paddle.summary's layout and whole-input calls (lists and dicts)."""
import numpy as np
import pytest

import oar
import oar.nn as nn


def test_astype_casts_parameters_to_an_integer_dtype():
    lin = nn.Linear(2, 2, weight_attr=oar.ParamAttr(initializer=nn.initializer.Constant(1.5)),
                    bias_attr=oar.ParamAttr(initializer=nn.initializer.Constant(2.5)))
    lin = lin.astype("int8")
    assert [p.dtype.name for p in lin.parameters()] == ["int8", "int8"]
    np.testing.assert_array_equal(lin.weight.numpy(), np.ones((2, 2)))
    assert "dtype=paddle.int8" in repr(lin)
    assert "dtype=paddle.float32" in repr(nn.Sequential(nn.Linear(1, 1)).float())
    assert "dtype=float32" in repr(nn.Linear(1, 1).to(dtype="float32"))
    with pytest.raises(TypeError, match="to: dtype must be a float type"):
        nn.Linear(1, 1).to(dtype="int8")


def test_to_static_state_dict_is_the_state_dict():
    emb = nn.Embedding(10, 4)
    sd = emb.to_static_state_dict()
    assert list(sd) == list(emb.state_dict()) == ["weight"]
    np.testing.assert_array_equal(sd["weight"].numpy(), emb.weight.numpy())


class _DictNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2D(1, 2, 3), nn.Linear(4, 3)

    def forward(self, inputs):
        a, b = (inputs["a"], inputs["b"]) if isinstance(inputs, dict) else inputs
        return self.conv(a).sum() + self.fc(b).sum()


@pytest.mark.parametrize("kind", ["dict", "list"])
def test_summary_passes_a_given_input_whole(kind, capsys):
    a, b = oar.rand([1, 1, 5, 5]), oar.rand([2, 4])
    info = oar.summary(_DictNet(), input={"a": a, "b": b} if kind == "dict" else [a, b])
    assert info == {"total_params": 2 * 9 + 2 + 4 * 3 + 3, "trainable_params": 35}
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "-" * 75 and lines[2] == "=" * 75  # Paddle's minimum width
    assert lines[3].split() == ["Conv2D-1", "[[1,", "1,", "5,", "5]]", "[1,", "2,", "3,", "3]", "20"]
    with pytest.raises(ValueError, match="summary: input must be"):
        oar.summary(_DictNet(), input=3)


class AVeryLongLayerClassNameThatWidensTheFirstColumn(nn.Layer):
    def forward(self, x):
        return x * 2


def test_summary_widens_for_long_cells(capsys):
    oar.summary(AVeryLongLayerClassNameThatWidensTheFirstColumn(), input_size=(2, 3))
    lines = capsys.readouterr().out.splitlines()
    width = len("AVeryLongLayerClassNameThatWidensTheFirstColumn-1") + 20 + 20 + 15 + 5
    assert width > 75 and lines[0] == "-" * width and lines[2] == "=" * width
