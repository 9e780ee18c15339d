"""oar.linalg.cov, corrcoef, cholesky_inverse and vecdot (compositions) against NumPy in
float64, with finite-difference gradients and bad inputs."""
import numpy as np
import pytest

import oar
from op_test_utils import OpCase, case_id, check_forward, check_grad, tensor


def np_chol_inv(x):
    return np.linalg.inv(x @ np.swapaxes(x, -1, -2))


def chol_factor(shape):
    from op_test_utils import Gen

    def gen(r, s):
        a = r.standard_normal(s)
        return np.tril(a, -1) + np.eye(s[-1]) * (1.5 + np.abs(np.diagonal(a, 0, -2, -1))[..., None])
    return Gen(gen, shape)


CASES = [
    OpCase("cov", oar.linalg.cov, np.cov, inputs=[(3, 6)], shapes=[[(3, 6)], [(1, 4)], [(5,)]]),
    OpCase("cov_columns", lambda x: oar.linalg.cov(x, rowvar=False, ddof=False),
           lambda x: np.cov(x, rowvar=False, ddof=0), inputs=[(6, 3)], op="cov"),
    OpCase("corrcoef", oar.linalg.corrcoef, np.corrcoef, inputs=[(3, 6)]),
    OpCase("cholesky_inverse", oar.linalg.cholesky_inverse, np_chol_inv, inputs=[chol_factor((3, 3))],
           shapes=[[(3, 3)], [(2, 4, 4)]], tol={"float32": (1e-4, 1e-4)}, grad_tol=(1e-5, 1e-5)),
    OpCase("cholesky_inverse_upper", lambda x: oar.linalg.cholesky_inverse(oar.matrix_transpose(x), upper=True),
           np_chol_inv, inputs=[chol_factor((3, 3))], op="cholesky_inverse"),
    OpCase("linalg_vecdot", lambda x, y: oar.linalg.vecdot(x, y, axis=0),
           lambda x, y: (x * y).sum(0), inputs=[(3, 4), (3, 4)], op="vecdot"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_grad(case):
    check_grad(case)


def test_cov_weights_and_bad_inputs():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5))
    fw, aw = np.array([1, 2, 1, 3, 1]), rng.random(5)
    got = oar.linalg.cov(tensor(x, "float64"), fweights=oar.to_tensor(fw),
                         aweights=tensor(aw, "float64"))
    np.testing.assert_allclose(got.numpy(), np.cov(x, fweights=fw, aweights=aw), rtol=1e-10)
    with pytest.raises(ValueError, match="cov: fweights must be 1-D with 5"):
        oar.linalg.cov(tensor(x, "float64"), fweights=oar.to_tensor([1, 2]))
    with pytest.raises(ValueError, match="cov: aweights must be non-negative"):
        oar.linalg.cov(tensor(x, "float64"), aweights=tensor(-np.ones(5), "float64"))
    with pytest.raises(ValueError, match="cov: x must be a 1-D or 2-D"):
        oar.linalg.cov(tensor(np.ones((2, 2, 2)), "float64"))
    with pytest.raises(ValueError, match="cholesky_inverse: x must be a stack of square"):
        oar.linalg.cholesky_inverse(tensor(np.ones((2, 3)), "float64"))
