"""i0 / i0e / i1 / i1e (python/oar/_special_composites.py) against scipy.special in float64
across both the series and the asymptotic range, gradients by central differences (I0' = I1),
bad inputs."""
import numpy as np
import pytest
import scipy.special as sp

import oar
from op_test_utils import UNARY_SHAPES, Gen, OpCase, case_id, check_case

WIDE = Gen(lambda r, s: r.uniform(-40, 40, s))

CASES = [OpCase(name, getattr(oar, name), getattr(sp, name), inputs=[WIDE], shapes=UNARY_SHAPES,
                tol={"float32": (1e-6, 2e-5), "float64": (1e-12, 1e-11)}, grad=False,
                bad_inputs=[((oar.to_tensor([True]),), TypeError, "real number"),
                            (([1.0],), TypeError, "Tensor")])
         for name in ("i0", "i0e", "i1", "i1e")]
# finite differences where the values stay moderate (the wide range is checked against the
# analytic derivatives below)
CASES += [OpCase(name + "_grad", getattr(oar, name), getattr(sp, name), op=name,
                 inputs=[Gen(lambda r, s: r.uniform(-8, 8, s))], dtypes=["float64"])
          for name in ("i0", "i0e", "i1", "i1e")]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward_grad_bad(case):
    check_case(case)


def test_across_the_split_and_identities():
    x = np.concatenate([np.linspace(-80, 80, 2001), [19.999, 20.0, 20.001, 0.0, 1e-300]])
    t = oar.to_tensor(x)
    for name in ("i0", "i0e", "i1", "i1e"):
        np.testing.assert_allclose(getattr(oar, name)(t).numpy(), getattr(sp, name)(x),
                                   rtol=2e-12, atol=1e-300, err_msg=name)
    t = oar.to_tensor(x, stop_gradient=False)
    g = oar.grad([oar.i0(t).sum()], [t])[0].numpy()
    np.testing.assert_allclose(g, sp.i1(x), rtol=1e-10, atol=1e-300)  # I0' = I1
    g = oar.grad([oar.i0e(t).sum()], [t])[0].numpy()
    np.testing.assert_allclose(g, sp.i1e(x) - np.sign(x) * sp.i0e(x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(oar.to_tensor([1e4]).i0e().numpy(), sp.i0e([1e4]), rtol=1e-6)
    assert oar.to_tensor([0, 1, 2]).i1().dtype.name == "float32"  # ints become the default float
