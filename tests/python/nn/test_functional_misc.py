"""multi_label_margin_loss, temporal_shift, gather_tree (nn/_functional_misc.py),
nn.clip.clip_by_norm and nn.utils.weight_norm / remove_weight_norm against NumPy in float64,
gradients by central differences, bad inputs."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.nn import clip
from oar.nn.utils import remove_weight_norm, weight_norm
from op_test_utils import OpCase, case_id, check_case, tensor

I64 = lambda a: oar.to_tensor(np.asarray(a, np.int64))  # noqa: E731
LABEL = np.array([[3, 0, -1, 1], [0, 2, 2, -1], [-1, 1, 2, 3]])


def np_mlml(x, label, reduction="mean"):
    n, c = x.shape
    out = np.zeros(n)
    for s in range(n):
        targets = []
        for v in label[s]:
            if v < 0:
                break
            targets.append(v)
        others = [k for k in range(c) if k not in targets]
        out[s] = sum(max(0.0, 1 - (x[s, j] - x[s, k])) for j in targets for k in others) / c
    return out.mean() if reduction == "mean" else out.sum() if reduction == "sum" else out


def np_tsm(x, t, ratio):
    nt, c, h, w = x.shape
    v = x.reshape(nt // t, t, c, h, w)
    out = np.zeros_like(v)
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out[:, 1:, :c1] = v[:, :-1, :c1]
    out[:, :-1, c1:c2] = v[:, 1:, c1:c2]
    out[:, :, c2:] = v[:, :, c2:]
    return out.reshape(nt, c, h, w)


CASES = [
    OpCase("multi_label_margin_loss", lambda x, *a, **k: F.multi_label_margin_loss(x, *(a or (I64(LABEL),)), **k),
           lambda x: np_mlml(x, LABEL), inputs=[(3, 4)],
           bad_inputs=[((tensor(np.ones((3, 4))), I64(LABEL + 5)), ValueError, "[0, 4)"),
                       ((tensor(np.ones((3, 4))), I64(LABEL[:2])), ValueError, "same shape"),
                       ((tensor(np.ones((3, 4))), I64(LABEL)), ValueError, "reduction",
                        {"reduction": "avg"})]),
    OpCase("multi_label_margin_loss_none",
           lambda x: F.multi_label_margin_loss(x, I64(LABEL), reduction="none"),
           lambda x: np_mlml(x, LABEL, "none"), inputs=[(3, 4)], op="multi_label_margin_loss"),
    OpCase("temporal_shift", lambda x, *a: F.temporal_shift(x, *(a or (3, 0.25))),
           lambda x: np_tsm(x, 3, 0.25), inputs=[(6, 8, 2, 1)],
           shapes=[[(6, 8, 2, 1)], [(3, 5, 1, 2)], [(0, 4, 1, 1)]],
           bad_inputs=[((tensor(np.ones((6, 4, 1, 1))), 4), ValueError, "seg_num"),
                       ((tensor(np.ones((6, 4, 1))), 2), ValueError, "4-D")]),
    OpCase("clip_by_norm", lambda x, m=1.0: clip.clip_by_norm(x, m),
           lambda x: x * 1.0 / max(np.sqrt((x ** 2).sum()), 1.0), inputs=[(3, 4)],
           shapes=[[(3, 4)], [(2,)], [()]],
           bad_inputs=[((tensor(np.ones(2)), 0.0), ValueError, "max_norm")]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


def test_temporal_shift_nhwc_and_layer():
    x = np.random.default_rng(0).standard_normal((4, 2, 3, 8))
    out = F.temporal_shift(oar.to_tensor(x), 2, 0.25, data_format="NHWC").numpy()
    np.testing.assert_array_equal(out, np_tsm(x.transpose(0, 3, 1, 2), 2, 0.25).transpose(0, 2, 3, 1))
    lab = I64(LABEL)
    x = oar.to_tensor(np.random.default_rng(1).standard_normal((3, 4)))
    np.testing.assert_allclose(oar.nn.MultiLabelMarginLoss("sum")(x, lab).numpy(),
                               np_mlml(x.numpy(), LABEL, "sum"))


def np_gather_tree(ids, parents):
    t, b, k = ids.shape
    out = np.zeros_like(ids)
    for bb in range(b):
        for kk in range(k):
            p = kk
            for s in range(t - 1, -1, -1):
                out[s, bb, kk] = ids[s, bb, p]
                p = parents[s, bb, p]
    return out


def test_gather_tree():
    rng = np.random.default_rng(2)
    ids, parents = rng.integers(0, 9, (5, 3, 4)), rng.integers(0, 4, (5, 3, 4))
    np.testing.assert_array_equal(F.gather_tree(I64(ids), I64(parents)).numpy(),
                                  np_gather_tree(ids, parents))
    assert F.gather_tree(I64(np.zeros((0, 2, 2))), I64(np.zeros((0, 2, 2)))).shape == [0, 2, 2]
    with pytest.raises(ValueError, match="gather_tree: parents must be beam indices"):
        F.gather_tree(I64(ids), I64(parents + 4))
    with pytest.raises(TypeError, match="gather_tree: ids and parents must be int32/int64"):
        F.gather_tree(oar.to_tensor(ids.astype(np.float32)), I64(parents))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_reparameterizes_and_trains(dim):
    oar.seed(3)
    conv = oar.nn.Conv2D(3, 5, 3)
    w = conv.weight.numpy().astype(np.float64)
    x = oar.rand([2, 3, 6, 6])
    before = conv(x).numpy()
    weight_norm(conv, dim=dim)
    axes = tuple(a for a in range(4) if a != dim) if dim is not None else None
    g = np.sqrt((w ** 2).sum(axis=axes)) if axes else np.sqrt((w ** 2).sum()).reshape(1)
    np.testing.assert_allclose(conv.weight_g.numpy(), g, rtol=1e-6)
    assert "weight" not in dict(conv.named_parameters())
    np.testing.assert_allclose(conv(x).numpy(), before, rtol=1e-5, atol=1e-6)
    conv(x).sum().backward()
    assert conv.weight_g.grad is not None and conv.weight_v.grad is not None
    with oar.no_grad():
        conv.weight_g.set_value(conv.weight_g * 2)
    np.testing.assert_allclose(conv(x).numpy() - conv.bias.numpy()[None, :, None, None],
                               2 * (before - conv.bias.numpy()[None, :, None, None]),
                               rtol=1e-4, atol=1e-5)
    remove_weight_norm(conv)
    assert sorted(dict(conv.named_parameters())) == ["bias", "weight"]
    np.testing.assert_allclose(conv.weight.numpy(), 2 * w, rtol=1e-5)


def test_weight_norm_bad_inputs():
    lin = oar.nn.Linear(2, 3)
    with pytest.raises(ValueError, match="weight_norm: layer Linear has no parameter 'w'"):
        weight_norm(lin, name="w")
    with pytest.raises(ValueError, match="weight_norm: dim must be"):
        weight_norm(lin, dim=5)
    weight_norm(lin)
    with pytest.raises(RuntimeError, match="already weight-normed"):
        weight_norm(lin)
    with pytest.raises(ValueError, match="remove_weight_norm: 'bias' of Linear is not"):
        remove_weight_norm(lin, "bias")
