"""Manipulation ops that rearrange, view, gather or scatter along axes (moveaxis, flip,
roll, rot90, tril/triu, unbind, unfold, chunk, repeat_interleave; as_strided, slice,
strided_slice, crop, broadcast_to, expand_as, meshgrid, diag_embed; take/put_along_axis,
index_add, masked_fill, scatter_nd) against NumPy in float64:
forward on several shapes (0-size and broadcast included), gradients by central
differences, bad inputs raising ValueError/IndexError/TypeError naming the op."""
import numpy as np
import pytest

import oar
from op_test_utils import (FLOAT_DTYPES, OpCase, case_id, check_bad_inputs, check_forward,
                           check_grad, bools, normal, tensor)

ALL = FLOAT_DTYPES + ["int64"]
I64 = lambda a: oar.to_tensor(np.asarray(a, dtype=np.int64))  # noqa: E731


def flat_cat(ts):
    return oar.concat([t.reshape([-1]) for t in ts])


def np_flat_cat(arrs):
    return np.concatenate([a.reshape(-1) for a in arrs]) if arrs else np.zeros(0)


def np_put_along(arr, idx, vals, axis, reduce="assign", include_self=True):
    out = arr.copy()
    idx = np.broadcast_to(idx, np.broadcast_shapes(idx.shape, vals.shape)) if vals.ndim else idx
    vals = np.broadcast_to(vals, idx.shape)
    count = np.zeros(arr.shape, dtype=np.int64)
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[axis] = idx[pos]
        dst = tuple(dst)
        v = vals[pos]
        first = count[dst] == 0 and not include_self
        count[dst] += 1
        if reduce == "assign" or first:
            out[dst] = v
        elif reduce in ("add", "mean"):
            out[dst] += v
        elif reduce in ("mul", "multiply"):
            out[dst] *= v
        elif reduce == "amax":
            out[dst] = max(out[dst], v)
        elif reduce == "amin":
            out[dst] = min(out[dst], v)
    if reduce == "mean":
        nz = count > 0
        out[nz] = out[nz] / (count[nz] + (1 if include_self else 0))
    return out


def np_scatter_nd_add(x, index, updates):
    out = x.copy()
    k = index.shape[-1]
    idx = index.reshape(-1, k)
    upd = updates.reshape((idx.shape[0],) + x.shape[k:])
    for j in range(idx.shape[0]):
        out[tuple(idx[j])] += upd[j]
    return out


def np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n))
    for i in range(x.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = x[..., i]
    r = x.ndim + 1
    d1, d2 = dim1 % r, dim2 % r
    # place the two new dims at d1, d2 (out's last two are (d1, d2) in order)
    rest = [i for i in range(r) if i not in (d1, d2)]
    perm = [0] * r
    for k, a in enumerate(rest):
        perm[a] = k
    perm[d1], perm[d2] = r - 2, r - 1
    return np.transpose(out, perm)


def np_unfold(x, axis, size, step):
    n = x.shape[axis]
    wins = [np.take(x, range(s, s + size), axis=axis) for s in range(0, n - size + 1, step)]
    return np.moveaxis(np.stack(wins, axis=axis), axis + 1, -1)


TAKE_IDX = np.array([[0, 2, 1, 2], [1, 0, 0, 2]])  # [2, 4] along axis 0 of a [3, 4]
ND_IDX = np.array([[0, 1], [2, 3], [0, 1]])

CASES = [
    OpCase("moveaxis", lambda x: oar.moveaxis(x, [0, 1], [2, 0]),
           lambda x: np.moveaxis(x, [0, 1], [2, 0]), inputs=[(2, 3, 4)], dtypes=ALL,
           shapes=[[(2, 3, 4)], [(0, 3, 4)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3))),), IndexError, "destination",
                        {}), ]),
    OpCase("chunk", lambda x: flat_cat(oar.chunk(x, 3, axis=1)),
           lambda x: np_flat_cat(np.split(x, 3, 1)), inputs=[(2, 6)], dtypes=ALL,
           shapes=[[(2, 6)], [(0, 6)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 5))),), ValueError, "divisible")]),
    OpCase("unbind", lambda x: flat_cat(oar.unbind(x, axis=-1)),
           lambda x: np_flat_cat([x[..., i] for i in range(x.shape[-1])]), inputs=[(2, 3)],
           dtypes=ALL),
    OpCase("expand_as", lambda x, y: oar.expand_as(x, y), lambda x, y: np.broadcast_to(x, y.shape),
           inputs=[(3, 1), bools((2, 3, 4))], shapes=[[(3, 1), (2, 3, 4)], [(1,), (0, 2)]], dtypes=ALL,
           grad_shapes=[[(3, 1), (2, 3, 4)]]),
    OpCase("broadcast_to", lambda x: oar.broadcast_to(x, [2, 3, 4]),
           lambda x: np.broadcast_to(x, (2, 3, 4)), inputs=[(3, 1)], dtypes=ALL,
           shapes=[[(3, 1)], [(4,)], [()]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 2))),), ValueError, "expand")]),
    OpCase("broadcast_tensors", lambda x, y: flat_cat(oar.broadcast_tensors([x, y])),
           lambda x, y: np_flat_cat(np.broadcast_arrays(x, y)), inputs=[(3, 1), (1, 4)],
           shapes=[[(3, 1), (1, 4)], [(2, 1, 3), (4, 1)], [(0, 1), (1, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3))), tensor(np.ones((4,)))), ValueError,
                        "cannot be broadcast")]),
    OpCase("flip", lambda x: oar.flip(x, [0, 2]), lambda x: np.flip(x, (0, 2)), inputs=[(2, 3, 4)],
           dtypes=ALL + ["bool"], shapes=[[(2, 3, 4)], [(0, 3, 2)], [(3, 1, 5)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3))),), IndexError, "axis")]),
    OpCase("flip[last]", lambda x: oar.flip(x, -1), lambda x: np.flip(x, -1), inputs=[(3, 5)],
           op="flip"),
    OpCase("roll", lambda x: oar.roll(x, [1, -2], [0, 2]), lambda x: np.roll(x, (1, -2), (0, 2)),
           inputs=[(3, 2, 5)], dtypes=ALL + ["bool"], shapes=[[(3, 2, 5)], [(0, 2, 5)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 3))),), IndexError, "axis")]),
    OpCase("roll[flat]", lambda x: oar.roll(x, 7), lambda x: np.roll(x, 7), inputs=[(3, 4)],
           op="roll", bad_inputs=[]),
    OpCase("rot90", lambda x: oar.rot90(x, 1, [0, 1]), lambda x: np.rot90(x, 1, (0, 1)),
           inputs=[(2, 3, 2)], dtypes=ALL,
           bad_inputs=[(lambda: (tensor(np.ones(3)),), ValueError, "rank")]),
    OpCase("rot90[k=3]", lambda x: oar.rot90(x, 3, [1, 2]), lambda x: np.rot90(x, 3, (1, 2)),
           inputs=[(2, 3, 4)], op="rot90"),
    OpCase("rot90[k=2]", lambda x: oar.rot90(x, -2, [0, 1]), lambda x: np.rot90(x, -2, (0, 1)),
           inputs=[(3, 4)], op="rot90"),
    OpCase("scatter_nd_add", lambda x, u: oar.scatter_nd_add(x, I64(ND_IDX), u),
           lambda x, u: np_scatter_nd_add(x, ND_IDX, u), inputs=[(3, 4, 2), (3, 2)], dtypes=ALL,
           bad_inputs=[(lambda: (tensor(np.ones((3, 4, 2))), tensor(np.ones((2, 2)))), ValueError,
                        "updates must have shape"),
                       (lambda: (tensor(np.ones((2, 2, 2))), tensor(np.ones((3, 2)))), IndexError,
                        "out of range")]),
    OpCase("scatter_nd", lambda u: oar.scatter_nd(I64([[1], [3], [1]]), u, [5, 2]),
           lambda u: np_scatter_nd_add(np.zeros((5, 2)), np.array([[1], [3], [1]]), u),
           inputs=[(3, 2)], op="scatter_nd_add"),
    OpCase("index_add", lambda x, v: oar.index_add(x, I64([2, 0, 2]), 1, v),
           lambda x, v: (lambda o: (np.add.at(o, (slice(None), [2, 0, 2]), v), o)[1])(x.copy()),
           inputs=[(2, 4, 3), (2, 3, 3)], dtypes=ALL,
           shapes=[[(2, 4, 3), (2, 3, 3)], [(0, 4, 3), (0, 3, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 4))), tensor(np.ones((2, 2)))), ValueError,
                        "value must have shape"),
                       (lambda: (tensor(np.ones((2, 2))), tensor(np.ones((2, 3)))), IndexError,
                        "out of range")]),
    OpCase("take_along_axis", lambda x: oar.take_along_axis(x, I64(TAKE_IDX), 0),
           lambda x: np.take_along_axis(x, TAKE_IDX, 0), inputs=[(3, 4)], dtypes=ALL + ["bool"],
           bad_inputs=[(lambda: (tensor(np.ones((2, 4))),), IndexError, "out of range"),
                       (lambda: (tensor(np.ones(4)),), ValueError, "rank")]),
    OpCase("take_along_axis[bcast]", lambda x: oar.take_along_axis(x, I64([[0], [2]]), 1),
           lambda x: np.take_along_axis(x, np.array([[0], [2]]), 1), inputs=[(2, 3)],
           op="take_along_axis"),
    OpCase("take_along_axis[bcast2]", lambda x: oar.take_along_axis(x, I64([[[1, 0]]]), 2),
           lambda x: np.take_along_axis(x, np.broadcast_to(np.array([[[1, 0]]]), (2, 3, 2)), 2),
           inputs=[(2, 3, 4)], op="take_along_axis"),
    OpCase("masked_fill", lambda x: oar.masked_fill(x, oar.to_tensor(np.array([True, False, True])), -2.5),
           lambda x: np.where(np.array([True, False, True]), -2.5, x), inputs=[(2, 3)],
           shapes=[[(2, 3)], [(0, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 4))),), ValueError, "broadcast")]),
    OpCase("tril", lambda x: oar.tril(x, -1), lambda x: np.tril(x, -1), inputs=[(3, 4)],
           dtypes=ALL + ["bool"], shapes=[[(3, 4)], [(2, 4, 3)], [(0, 3)], [(3, 0)]],
           bad_inputs=[(lambda: (tensor(np.ones(3)),), ValueError, "rank")]),
    OpCase("tril[k=2]", lambda x: oar.tril(x, 2), lambda x: np.tril(x, 2), inputs=[(3, 4)], op="tril"),
    OpCase("triu", lambda x: oar.triu(x, 1), lambda x: np.triu(x, 1), inputs=[(4, 3)], dtypes=ALL,
           shapes=[[(4, 3)], [(2, 3, 5)]],
           bad_inputs=[(lambda: (tensor(1.0),), ValueError, "rank")]),
    OpCase("triu[k=-5]", lambda x: oar.triu(x, -5), lambda x: np.triu(x, -5), inputs=[(3, 4)],
           op="triu"),
    OpCase("diag[vec]", lambda x: oar.diag(x, 1), lambda x: np.diag(x, 1), inputs=[(3,)],
           dtypes=ALL, shapes=[[(3,)], [(0,)]], op="diag"),
    OpCase("diag[pad]", lambda x: oar.diag(x, -1, padding_value=2.0),
           lambda x: np.diag(x, -1) + 2.0 * (np.diag(np.ones_like(x), -1) == 0), inputs=[(3,)],
           op="diag"),
    OpCase("diag[mat]", lambda x: oar.diag(x, -1), lambda x: np.diag(x, -1), inputs=[(3, 4)],
           dtypes=ALL, shapes=[[(3, 4)], [(4, 2)]], op="diag",
           bad_inputs=[(lambda: (tensor(np.ones((2, 2, 2))),), ValueError, "1-D or 2-D")]),
    OpCase("diag_embed", lambda x: oar.diag_embed(x, 1, 0, 2), lambda x: np_diag_embed(x, 1, 0, 2),
           inputs=[(2, 3)], dtypes=ALL, shapes=[[(2, 3)], [(0, 3)]],
           bad_inputs=[(lambda: (tensor(np.ones(3)),), IndexError, "axis 2")]),
    OpCase("diag_embed[neg]", lambda x: oar.diag_embed(x, -2), lambda x: np_diag_embed(x, -2),
           inputs=[(2, 3)], op="diag_embed"),
    OpCase("repeat_interleave", lambda x: oar.repeat_interleave(x, 2, axis=1),
           lambda x: np.repeat(x, 2, axis=1), inputs=[(2, 3)], dtypes=ALL,
           bad_inputs=[(lambda: (tensor(np.ones(3)),), IndexError, "axis 1")]),
    OpCase("repeat_interleave[rows]", lambda x: oar.repeat_interleave(x, 3, axis=1),
           lambda x: np.repeat(x, 3, axis=1), inputs=[(2, 3, 70)], dtypes=ALL,
           shapes=[[(2, 3, 70)], [(2, 0, 70)]], op="repeat_interleave"),
    OpCase("repeat_interleave[zero]", lambda x: oar.repeat_interleave(x, 0, axis=0),
           lambda x: np.repeat(x, 0, axis=0), inputs=[(3, 64)], op="repeat_interleave"),
    OpCase("repeat_interleave[tensor]", lambda x: oar.repeat_interleave(x, I64([1, 0, 3])),
           lambda x: np.repeat(x.reshape(-1), [1, 0, 3]), inputs=[(3,)], op="repeat_interleave",
           bad_inputs=[(lambda: (tensor(np.ones(4)),), ValueError, "entries")]),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [0, 2], [1, -1], [3, 0], [1, -2]),
           lambda x: x[1:3, :, -1:0:-2], inputs=[(4, 2, 6)], dtypes=ALL,
           bad_inputs=[(lambda: (tensor(np.ones(3)),), IndexError, "axes 2")]),
    OpCase("slice", lambda x: oar.slice(x, [0, 1], [1, -3], [3, 100]), lambda x: x[1:3, -3:],
           inputs=[(4, 5)], dtypes=ALL, op="strided_slice",
           bad_inputs=[(lambda: (tensor(np.ones(3)),), IndexError, "axes 1")]),
    OpCase("meshgrid", lambda x, y: flat_cat(oar.meshgrid(x, y)),
           lambda x, y: np_flat_cat(np.meshgrid(x, y, indexing="ij")), inputs=[(3,), (4,)],
           shapes=[[(3,), (4,)], [(0,), (2,)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 2))), tensor(np.ones(3))), ValueError, "1-D")]),
    OpCase("unfold", lambda x: x.unfold(1, 3, 2), lambda x: np_unfold(x, 1, 3, 2), inputs=[(2, 7)],
           dtypes=ALL, shapes=[[(2, 7)], [(0, 7)], [(2, 3, 2)]],
           bad_inputs=[(lambda: (tensor(np.ones((2, 2))),), ValueError, "size")]),
    OpCase("as_strided", lambda x: oar.as_strided(x, [3, 3], [1, 2], 1),
           lambda x: np.lib.stride_tricks.as_strided(x.reshape(-1)[1:], (3, 3), (8, 16)),
           inputs=[(2, 5)], dtypes=["float64"],
           bad_inputs=[(lambda: (tensor(np.ones(4)),), IndexError, "reach element")]),
    OpCase("crop", lambda x: oar.crop(x, [2, -1], [1, 1]), lambda x: x[1:3, 1:], inputs=[(4, 3)],
           dtypes=ALL, bad_inputs=[(lambda: (tensor(np.ones((2, 2))),), ValueError, "exceed")]),
]
for _mode in ["assign", "add", "mul", "mean", "amin", "amax"]:
    for _self in [True, False]:
        CASES.append(OpCase(
            f"put_along_axis[{_mode},{_self}]",
            lambda x, v, m=_mode, s=_self: oar.put_along_axis(x, I64(TAKE_IDX[:, :3]), v, 0, m, s),
            lambda x, v, m=_mode, s=_self: np_put_along(x, TAKE_IDX[:, :3], v, 0, m, s),
            inputs=[normal(), normal()], shapes=[[(3, 3), (2, 3)]], op="put_along_axis",
            # ties make amin/amax non-differentiable; assign with repeated indices too
            grad=_mode not in ("assign",),
            bad_inputs=[(lambda: (tensor(np.ones((3, 3))), tensor(np.ones((2, 3)))), ValueError,
                         "reduce", {"m": "max"})] if _mode == "add" and _self else []))
CASES.append(OpCase("put_along_axis[bcast]",
                    lambda x: oar.put_along_axis(x, I64([[1], [0]]), 9.0, 1),
                    lambda x: np_put_along(x, np.array([[1], [0]]), np.array(9.0), 1),
                    inputs=[(2, 3)], dtypes=ALL, op="put_along_axis", grad=True))

IDS = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.bad_inputs], ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


def test_put_along_axis_assign_grad_unique_indices():
    # With distinct positions assign is differentiable: x gets grad off the written cells.
    case = OpCase("put_along_axis", lambda x, v: oar.put_along_axis(x, I64([[0, 1, 2]]), v, 0),
                  lambda x, v: np_put_along(x, np.array([[0, 1, 2]]), v, 0),
                  inputs=[(3, 3), (1, 3)])
    check_forward(case)
    check_grad(case)


def test_views_share_storage():
    # moveaxis, broadcast_to and unfold are views: writes to x show through them.
    x = oar.to_tensor(np.arange(12.0).reshape(3, 4))
    m, b, u = oar.moveaxis(x, 0, 1), oar.broadcast_to(x, [2, 3, 4]), x.unfold(1, 2, 2)
    assert u.shape == [3, 2, 2]
    np.testing.assert_array_equal(u.numpy(), np_unfold(np.arange(12.0).reshape(3, 4), 1, 2, 2))
    x[0, 0] = 100.0
    assert m.numpy()[0, 0] == 100.0 and b.numpy()[1, 0, 0] == 100.0 and u.numpy()[0, 0, 0] == 100.0


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "int8", "float64", "complex128"])
def test_flip_every_axis_set_against_numpy(dtype, threads):
    """flip walks its rows by an odometer with negative steps on flipped dims, from each pool
    chunk's first row: every set of axes of ranks 1-4 (the last dim reversed or copied, rows
    under and over 64 bytes), at 1 and 2 threads."""
    import itertools
    rng = np.random.default_rng(4)
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for shape in [(9,), (5, 70), (3, 4, 5), (40, 3, 33, 7), (2, 300, 4, 65)]:
            a = (rng.standard_normal(shape) * 40).astype(dtype)
            t = oar.to_tensor(a)
            for k in range(1, len(shape) + 1):
                for axes in itertools.combinations(range(len(shape)), k):
                    np.testing.assert_array_equal(oar.flip(t, list(axes)).numpy(), np.flip(a, axes),
                                                  err_msg=f"{shape} {axes}")
    finally:
        oar.set_num_threads(prev)


def test_flip_is_a_copy():
    x = oar.to_tensor(np.arange(4.0))
    y = oar.flip(x, 0)
    x[0] = 10.0
    assert y.numpy()[-1] == 0.0


def test_tensor_methods_exist():
    x = oar.to_tensor(np.ones((2, 3)))
    for name in ["moveaxis", "chunk", "unbind", "expand_as", "broadcast_to", "flip", "roll",
                 "rot90", "take_along_axis", "put_along_axis", "masked_fill", "tril", "triu",
                 "diag_embed", "repeat_interleave", "strided_slice", "unfold", "as_strided",
                 "index_add", "scatter_nd_add"]:
        assert callable(getattr(x, name)), name
    assert oar.tril(x).shape == x.tril().shape


def test_index_add_int32_index_and_negative():
    x = np.zeros((4, 2))
    out = oar.index_add(oar.to_tensor(x), oar.to_tensor(np.array([-1, 0], np.int32)), 0,
                        oar.to_tensor(np.ones((2, 2))))
    np.testing.assert_array_equal(out.numpy(), [[1, 1], [0, 0], [0, 0], [1, 1]])


def test_chunk_and_diag_errors_name_values():
    with pytest.raises(ValueError, match=r"chunk: the size of axis 0 \(5\) is not divisible by chunks \(2\)"):
        oar.chunk(oar.ones([5]), 2)
    with pytest.raises(IndexError, match=r"flip: axis 3 is out of range"):
        oar.flip(oar.ones([2, 2]), 3)


PADDLE_NAMES = ["moveaxis", "chunk", "unbind", "expand_as", "broadcast_to", "broadcast_tensors",
                "flip", "roll", "rot90", "scatter_nd_add", "scatter_nd", "index_add",
                "take_along_axis", "put_along_axis", "masked_fill", "tril", "triu", "diag",
                "diag_embed", "repeat_interleave", "strided_slice", "meshgrid", "unfold",
                "as_strided", "crop", "reshape", "flatten", "transpose", "concat", "stack", "split",
                "tile", "expand", "gather", "gather_nd", "scatter", "index_select", "index_put",
                "masked_select", "where", "nonzero", "squeeze", "unsqueeze", "slice"]


@pytest.mark.parametrize("name", PADDLE_NAMES)
def test_paddle_name_exists(name):
    assert callable(getattr(oar, name)), f"oar.{name} is missing"


@pytest.mark.parametrize("threads", [1, 2])
def test_along_axis_slices_in_parallel(threads):
    """take/put_along_axis where indices has arr's dims outside the axis run outer slices in
    parallel (along_axis_slices, reorder_kernels.cc): every reduce mode with duplicate and
    negative indices on a middle axis, against the serial NumPy walk, at 1 and 2 threads."""
    rng = np.random.default_rng(3)
    arr = rng.standard_normal((40, 7, 33))
    idx = rng.integers(-7, 7, (40, 9, 33))
    vals = rng.standard_normal((40, 9, 33))
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for it in (oar.to_tensor(idx), oar.to_tensor(idx.astype("int32"))):  # indices read in place
            np.testing.assert_array_equal(oar.take_along_axis(oar.to_tensor(arr), it, 1).numpy(),
                                          np.take_along_axis(arr, idx % 7, 1))
        bad = idx.copy()
        bad[3, 2, 1] = 7
        with pytest.raises(IndexError, match=r"take_along_axis: indices value 7 is out of range for axis 1 of size 7"):
            oar.take_along_axis(oar.to_tensor(arr), oar.to_tensor(bad), 1)
        for mode in ("assign", "add", "mul", "mean", "amax", "amin"):
            for include_self in (True, False):
                got = oar.put_along_axis(oar.to_tensor(arr), oar.to_tensor(idx), oar.to_tensor(vals), 1, mode,
                                         include_self).numpy()
                np.testing.assert_allclose(got, np_put_along(arr, idx % 7, vals, 1, mode, include_self),
                                           rtol=1e-12, err_msg=f"{mode} include_self={include_self}")
        # integers (mean divides as C does, toward zero) and the "multiply" spelling
        iarr, ivals = rng.integers(-50, 50, arr.shape), rng.integers(-3, 4, vals.shape)
        for mode in ("mean", "multiply", "amin", "add"):
            for include_self in (True, False):
                got = oar.put_along_axis(oar.to_tensor(iarr), oar.to_tensor(idx), oar.to_tensor(ivals), 1, mode,
                                         include_self).numpy()
                np.testing.assert_array_equal(got, np_put_along(iarr, idx % 7, ivals, 1, mode, include_self),
                                              err_msg=f"int64 {mode} include_self={include_self}")
        # along the last axis (one index a position), with enough indices that the range
        # check runs in chunks: a bad value in the last chunk, above and below the range
        arr2 = rng.standard_normal((64, 600))
        idx2 = rng.integers(-600, 600, (64, 700))
        vals2 = rng.standard_normal((64, 700))
        for it in (oar.to_tensor(idx2), oar.to_tensor(idx2.astype("int32"))):
            np.testing.assert_array_equal(oar.take_along_axis(oar.to_tensor(arr2), it, 1).numpy(),
                                          np.take_along_axis(arr2, idx2 % 600, 1))
        for mode in ("assign", "add", "amax"):
            got = oar.put_along_axis(oar.to_tensor(arr2), oar.to_tensor(idx2), oar.to_tensor(vals2), 1, mode).numpy()
            np.testing.assert_allclose(got, np_put_along(arr2, idx2 % 600, vals2, 1, mode, True), rtol=1e-12,
                                       err_msg=mode)
        for v in (600, -601):
            bad2 = idx2.copy()
            bad2[63, 698] = v
            with pytest.raises(IndexError, match=rf"put_along_axis: indices value {v} is out of range for axis 1 "
                                                 r"of size 600"):
                oar.put_along_axis(oar.to_tensor(arr2), oar.to_tensor(bad2), oar.to_tensor(vals2), 1)
    finally:
        oar.set_num_threads(prev)
