"""Static vs eager, op by op: the same function built into a static program (inputs
declared with a dynamic batch) and run by the Executor gives the eager results."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import static

rng = np.random.default_rng(0)


def _f32(*shape):
    return rng.standard_normal(shape).astype("float32")


CASES = {
    "add_broadcast": (lambda x, y: x + y * 2.0, [_f32(4, 3), _f32(1, 3)]),
    "matmul": (lambda x, y: oar.matmul(x, y), [_f32(4, 3), _f32(3, 5)], (0,)),
    "softmax": (lambda x: F.softmax(x, axis=-1), [_f32(4, 6)]),
    "log_softmax_mean": (lambda x: F.log_softmax(x).mean(axis=0), [_f32(4, 6)]),
    "reduce": (lambda x: [x.sum(axis=1), x.max(axis=0), oar.mean(x)], [_f32(4, 6)]),
    "reshape_transpose": (lambda x: oar.transpose(oar.reshape(x, [-1, 3, 2]), [0, 2, 1]), [_f32(4, 6)]),
    "concat_split": (lambda x, y: oar.split(oar.concat([x, y], axis=1), 3, axis=1), [_f32(4, 3), _f32(4, 6)]),
    "slice_index": (lambda x: x[:, 1:4] * x[:, :1], [_f32(4, 6)]),
    "where_compare": (lambda x, y: oar.where(x > y, x, y * 0.5), [_f32(4, 3), _f32(4, 3)]),
    "cumsum_cast": (lambda x: oar.cumsum(x, axis=1).astype("float64"), [_f32(4, 3)]),
    "activations": (lambda x: [F.relu(x), F.gelu(x), oar.tanh(x), F.sigmoid(x), oar.exp(x).log()], [_f32(4, 5)]),
    "layer_norm": (lambda x: F.layer_norm(x, [5]), [_f32(4, 5)]),
    "conv_pool": (lambda x, w: F.max_pool2d(F.conv2d(x, w, padding=1), 2), [_f32(2, 3, 8, 8), _f32(4, 3, 3, 3)],
                  (0,)),
    "gather_int": (lambda x, i: oar.gather(x, i), [_f32(4, 5), np.array([3, 0, 2], "int64")]),
    "argmax_onehot": (lambda x: F.one_hot(oar.argmax(x, axis=1), 5), [_f32(4, 5)]),
    "cross_entropy": (lambda x, y: F.cross_entropy(x, y), [_f32(4, 5), np.array([[1], [0], [4], [2]], "int64")]),
    "expand_unsqueeze": (lambda x: oar.unsqueeze(x, 1).expand([-1, 3, -1]), [_f32(4, 5)]),
}


def _listify(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("name", sorted(CASES))
def test_static_matches_eager(name):
    fn, arrays, *dyn = CASES[name]
    # Inputs get a dynamic leading dim (all but 1-D ones, or those the case lists).
    dyn = dyn[0] if dyn else [i for i, a in enumerate(arrays) if a.ndim > 1]
    eager = [t.numpy() for t in _listify(fn(*[oar.to_tensor(a) for a in arrays]))]
    main, startup = static.Program(), static.Program()
    oar.enable_static()
    try:
        with static.program_guard(main, startup), static.scope_guard(static.Scope()):
            xs = [static.data(f"in{i}", [None] + list(a.shape[1:]) if i in dyn else list(a.shape), str(a.dtype))
                  for i, a in enumerate(arrays)]
            outs = _listify(fn(*xs))
            exe = static.Executor()
            exe.run(startup)
            got = exe.run(main, feed={f"in{i}": a for i, a in enumerate(arrays)}, fetch_list=outs)
    finally:
        oar.disable_static()
    assert len(got) == len(eager)
    for g, e in zip(got, eager):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
