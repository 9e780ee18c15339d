"""Dropout under the fusion compiler (issue 15's dropout rule): F.dropout is written with
primitives (a `uniform` draw, `>= p`, a cast of the mask and products), so no `decomp:`
rule is needed: the draw stays a kernel and everything after it fuses with the
neighbouring elementwise ops, forward and backward. The compiled program equals the
unfused one for the same seed (the same draws), including a mask shared along an axis."""
import numpy as np
import pytest

import oar
from oar import _C

F = oar.nn.functional


def kernels(program):
    text = str(program)
    return text.count('"kernel.compiled_kernel"'), [
        line.split('kernel_name = "')[1].split('"')[0] for line in text.splitlines() if "kernel.phi_kernel" in line]


class Net(oar.nn.Layer):
    def __init__(self, p, axis, mode):
        super().__init__()
        self.lin = oar.nn.Linear(48, 40)
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, x):
        return F.dropout(F.gelu(self.lin(x)), self.p, axis=self.axis, training=True, mode=self.mode) * 2.0 + 1.0


@pytest.mark.parametrize("p,axis,mode", [(0.3, None, "upscale_in_train"), (0.5, 1, "upscale_in_train"),
                                         (0.2, None, "downscale_in_infer")])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_fuses_and_equals_the_unfused_program(p, axis, mode, dtype):
    x0 = np.random.default_rng(3).standard_normal((32, 48)).astype(dtype)
    results = {}
    for cinn in (False, True):
        oar.seed(11)
        net = Net(p, axis, mode)
        if dtype == "float64":
            net.to(dtype="float64")
        lin = net.lin
        sf = oar.jit.to_static(net, backend="CINN" if cinn else None)
        x = oar.to_tensor(x0, stop_gradient=False)
        oar.seed(5)  # the same draws in both programs
        y = sf(x)
        (y * y).sum().backward()
        results[cinn] = (y.numpy(), x.grad.numpy(), lin.weight.grad.numpy(), sf)
    eps = 1e-6 if dtype == "float32" else 1e-12
    for a, b in zip(results[True][:3], results[False][:3]):
        # Gradients are sums of products of magnitude ~100: rounding scales with that.
        np.testing.assert_allclose(a, b, rtol=10 * eps, atol=eps * max(1.0, np.abs(b).max()))
    y = results[True][0]
    dropped = np.isclose(y, 1.0, atol=1e-6)  # a dropped element is 0 * 2 + 1
    assert 0 < dropped.mean() < 1
    if axis == 1:  # one draw per column, shared by the rows
        assert (dropped == dropped[:1]).all()
    cp = results[True][3].forward.concrete_programs[-1]
    fwd_kernels, fwd_ops = kernels(cp.executed_program)
    # The draw and the product stay library kernels; the bias add, gelu, the compare,
    # the mask's cast, the scale and the affine tail are one kernel. A mask shared along
    # an axis ([1, 40]) is made and scaled by a small kernel of its own (the backward reads
    # it too; F.dropout scales the mask before the product). The draw is float32 for every
    # dtype, so with float64 values the compare is a float32 op alone, outside (one float
    # dtype per group, Note [Select and masks]).
    assert fwd_kernels == 1 + (axis is not None), cp.executed_program
    alone = [] if dtype == "float32" else ["greater_equal"]
    assert sorted(set(fwd_ops)) == sorted(["full", "matmul", "uniform"] + alone), fwd_ops
    bwd_kernels, bwd_ops = kernels(cp.executed_backward_program)
    assert bwd_kernels >= 1 and "multiply" not in bwd_ops and "gelu_grad" not in bwd_ops, bwd_ops
    assert _C.cinn.cache_stats()["fallbacks"] == 0
