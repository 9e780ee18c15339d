"""Harness entries for issue 3's manipulation ops that the per-group suites left out:
expand, flatten, squeeze, unsqueeze, slice and one_hot against NumPy (0-size shapes,
16-bit and integer dtypes, finite-difference gradients), and bad inputs of reshape,
transpose, tile, unbind, expand(_as), flatten, (un)squeeze, slice and one_hot."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from op_test_utils import (FLOAT_DTYPES, INT_DTYPES, NARROW_DTYPES, OpCase, case_id,
                           check_bad_inputs, check_forward, check_grad, ints, normal, tensor)

ALL = FLOAT_DTYPES + NARROW_DTYPES + INT_DTYPES


def _x23():
    return tensor(np.arange(6.0).reshape(2, 3))


def _np_slice(x, axes, starts, ends):
    idx = [slice(None)] * x.ndim
    for a, s, e in zip(axes, starts, ends):
        idx[a] = slice(s, e)
    return x[tuple(idx)]


def _np_flatten(x, start_axis=0, stop_axis=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_axis % x.ndim, stop_axis % x.ndim
    return x.reshape(x.shape[:s] + (-1 if x.size else 0,) + x.shape[e + 1:]) if x.size else \
        x.reshape(x.shape[:s] + (0,) + x.shape[e + 1:])


def _np_flatten_01(x):
    return x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:])


CASES = [
    OpCase("expand", lambda x, shape: oar.expand(x, shape),
           lambda x, shape: np.broadcast_to(x, [x.shape[i - len(shape) + x.ndim]
                                                if s == -1 else s for i, s in enumerate(shape)]),
           inputs=[normal()], shapes=[[(3, 1)], [(1, 1)]], attrs={"shape": [2, 3, 4]},
           dtypes=ALL, grad_shapes=[[(3, 1)]],
           bad_inputs=[(lambda: (_x23(), [3, 3]), ValueError, "cannot expand", {}),
                       (lambda: (_x23(), [3]), ValueError, "", {})]),
    OpCase("expand[keep,-1]", lambda x: oar.expand(x, [2, -1, 4]),
           lambda x: np.broadcast_to(x, (2, x.shape[0], 4)), inputs=[normal()],
           shapes=[[(3, 1)], [(0, 1)]], dtypes=ALL, op="expand"),
    OpCase("expand_as[bad]", oar.expand_as, None, dtypes=(), grad=False, op="expand_as",
           bad_inputs=[(lambda: (_x23(), tensor(np.ones((3, 3)))), ValueError, "expand")]),
    OpCase("flatten", lambda x, start_axis=0, stop_axis=-1: oar.flatten(x, start_axis, stop_axis),
           _np_flatten, inputs=[normal()], shapes=[[(2, 3, 4)], [(2, 0, 3)], [(3, 1)]],
           attrs={"start_axis": 1, "stop_axis": -1}, dtypes=ALL,
           bad_inputs=[(lambda: (_x23(), 1, 0), ValueError, "start_axis", {}),
                       (lambda: (_x23(), 0, 5), IndexError, "out of range", {})]),
    # a 0 in the flattened range: the new size is 0, not Paddle's "0 copies the dim" of reshape
    OpCase("flatten[0-size]", lambda x: oar.flatten(x, 0, 1), _np_flatten_01, inputs=[normal()],
           shapes=[[(3, 0, 2)], [(0, 4, 2)]], dtypes=ALL, op="flatten"),
    OpCase("flatten[all]", lambda x: oar.flatten(x), _np_flatten, inputs=[normal()],
           shapes=[[(2, 3, 4)], [()], [(0, 3)]], dtypes=ALL, op="flatten"),
    OpCase("squeeze", lambda x, axis=None: oar.squeeze(x, axis),
           lambda x, axis=None: np.squeeze(x, tuple(a for a in axis if x.shape[a] == 1)),
           inputs=[normal()], shapes=[[(2, 1, 3, 1)], [(0, 1, 3, 1)]], attrs={"axis": [1, -1]},
           dtypes=ALL,
           bad_inputs=[(lambda: (_x23(), 4), IndexError, "out of range", {})]),
    OpCase("squeeze[all]", lambda x: oar.squeeze(x), np.squeeze, inputs=[normal()],
           shapes=[[(1, 3, 1)], [(1,)], [(2, 3)]], dtypes=ALL, op="squeeze"),
    OpCase("unsqueeze", lambda x, axis: oar.unsqueeze(x, axis),
           lambda x, axis: np.expand_dims(x, axis), inputs=[normal()],
           shapes=[[(2, 3)], [(0, 3)], [()]], attrs={"axis": [0, -1]}, dtypes=ALL,
           bad_inputs=[(lambda: (_x23(), 4), IndexError, "out of range", {})]),
    OpCase("slice", lambda x, axes, starts, ends: oar.slice(x, axes, starts, ends), _np_slice,
           inputs=[normal()], shapes=[[(4, 5, 3)], [(4, 0, 3)]],
           attrs={"axes": [0, 1], "starts": [1, -4], "ends": [3, 100]}, dtypes=ALL,
           bad_inputs=[(lambda: (_x23(), [5], [0], [1]), IndexError, "out of range", {}),
                       (lambda: (_x23(), [0, 1], [0], [1]), ValueError, "", {})]),
    OpCase("one_hot", lambda x, num_classes: F.one_hot(x, num_classes),
           lambda x, num_classes: np.eye(num_classes)[x.astype(np.int64)].astype(np.float32),
           inputs=[ints(0, 5)], shapes=[[(6,)], [(2, 3)], [(0,)]], attrs={"num_classes": 5},
           dtypes=INT_DTYPES, out_dtype="float32", grad=False,
           bad_inputs=[(lambda: (oar.to_tensor(np.array([0, 5])), 5), IndexError, "out of range",
                        {}),
                       (lambda: (oar.to_tensor(np.array([0, -1])), 5), IndexError, "-1", {}),
                       (lambda: (tensor([0.0, 1.0]), 5), TypeError, "int", {})]),
    OpCase("reshape[bad]", oar.reshape, None, dtypes=(), grad=False, op="reshape",
           bad_inputs=[(lambda: (_x23(), [4, 2]), ValueError, "8 elements"),
                       (lambda: (_x23(), [-1, -1]), ValueError, "-1"),
                       (lambda: (_x23(), [-2, 3]), ValueError, "")]),
    OpCase("transpose[bad]", oar.transpose, None, dtypes=(), grad=False, op="transpose",
           bad_inputs=[(lambda: (_x23(), [0, 0]), ValueError, "repeats"),
                       (lambda: (_x23(), [0]), ValueError, ""),
                       (lambda: (_x23(), [0, 2]), IndexError, "")]),
    OpCase("tile[bad]", oar.tile, None, dtypes=(), grad=False, op="tile",
           bad_inputs=[(lambda: (_x23(), [-1, 2]), ValueError, ">= 0")]),
    OpCase("unbind[bad]", oar.unbind, None, dtypes=(), grad=False, op="unbind",
           bad_inputs=[(lambda: (_x23(), 5), IndexError, "out of range")]),
]


@pytest.mark.parametrize("case", [c for c in CASES if c.dtypes], ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_views_share_storage():
    # Issue 3: reshape / transpose / slice / (un)squeeze / flatten are views: a write to x
    # shows through each of them.
    x = oar.to_tensor(np.arange(12.0).reshape(3, 4))
    views = [oar.reshape(x, [4, 3]), oar.transpose(x, [1, 0]), oar.slice(x, [0], [0], [2]),
             oar.squeeze(oar.unsqueeze(x, 0), 0), oar.flatten(x)]
    x[0, 1] = 100.0
    got = [v.numpy() for v in views]
    assert got[0][0, 1] == 100.0 and got[1][1, 0] == 100.0 and got[2][0, 1] == 100.0
    assert got[3][0, 1] == 100.0 and got[4][1] == 100.0
