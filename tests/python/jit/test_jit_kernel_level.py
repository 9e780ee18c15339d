"""Note [Kernel-level programs] (docs/notes/dispatch.md): every program the executor runs
is lowered to kernels; the user's program stays in the op dialect."""
import re

import numpy as np

import oar
from oar.static import InputSpec
from oar.vision.models import LeNet

_OP_DIALECT = re.compile(r'^\s*(%[^=]*=\s*)?"pd_op\.', re.M)


def test_lenet_forward_and_backward_programs_run_lowered():
    oar.seed(0)
    net = LeNet()
    static = oar.jit.to_static(net, input_spec=[InputSpec([None, 1, 28, 28], "float32")])
    x = oar.randn([4, 1, 28, 28])
    x.stop_gradient = False
    out = static(x)
    out.sum().backward()
    (cp,) = static.forward.concrete_programs
    for executor in (cp.executor, cp.backward_executor):
        text = executor.lowered_program_text
        assert "kernel.phi_kernel" in text
        assert not _OP_DIALECT.search(text), text
    assert 'kernel_name = "conv2d' in cp.executor.lowered_program_text
    # The program users see is still the op dialect.
    assert _OP_DIALECT.search(str(cp.program))
    # And it computes what eager does.
    eager_x = oar.to_tensor(x.numpy(), stop_gradient=False)
    ref = net(eager_x)
    ref.sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), eager_x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_program_executor_lowers_a_copy():
    x = oar.randn([3, 4])
    tracer_prog = oar.jit.to_static(lambda a: oar.exp(a) * a + 1.0)
    out = tracer_prog(x)
    (cp,) = tracer_prog.concrete_programs
    assert not _OP_DIALECT.search(cp.executor.lowered_program_text)
    np.testing.assert_allclose(out.numpy(), np.exp(x.numpy()) * x.numpy() + 1.0, rtol=1e-6)
