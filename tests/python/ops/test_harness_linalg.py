"""Harness entries for issue 3's linear-algebra ops that test_linalg.py left without bad
inputs (pinv), and wrong-rank / non-square / shape-mismatch inputs of the decompositions."""
import numpy as np
import pytest

import oar
from op_test_utils import OpCase, case_id, check_bad_inputs, tensor


def _bad(name, fn, *bad):
    return OpCase(f"{name}[bad]", fn, None, dtypes=(), grad=False, op=name, bad_inputs=list(bad))


def _m(*shape):
    return tensor(np.random.default_rng(0).standard_normal(shape), "float64")


BAD_CASES = [
    _bad("pinv", oar.linalg.pinv, (lambda: (_m(3),), ValueError, "rank"),
         (lambda: ([[1.0]],), TypeError, "Tensor")),
    _bad("inv", oar.linalg.inv, (lambda: (_m(2, 3),), ValueError, "square")),
    _bad("det", oar.linalg.det, (lambda: (_m(2, 3),), ValueError, "square")),
    _bad("cholesky", oar.linalg.cholesky, (lambda: (_m(3),), ValueError, "")),
    _bad("solve", oar.linalg.solve, (lambda: (_m(3, 3), _m(4, 2)), ValueError, "")),
    _bad("matrix_power", oar.linalg.matrix_power, (lambda: (_m(2, 3), 2), ValueError, "square")),
]


@pytest.mark.parametrize("case", BAD_CASES, ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)
