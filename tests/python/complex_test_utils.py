"""The op harness for complex inputs (op_test_utils.py's OpCase is real-valued): one CxCase
per op or variant, checked against a NumPy reference computed in complex128/float64 on
the same rounded inputs, gradients against central finite differences on the real and
the imaginary part of every input, and bad inputs.

Gradients follow Paddle's (PyTorch's) convention (Note [Complex autograd] in
docs/notes/autograd.md): with the cotangent v of the output, the gradient of a complex
input z is dL/dRe(z) + i dL/dIm(z) for the real loss L = sum(Re(v) Re(out) + Im(v) Im(out)).
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import pytest

import oar

SEED = 2025
COMPLEX_DTYPES = ("complex64", "complex128")
REAL_OF = {"complex64": "float32", "complex128": "float64"}
TOL = {"complex64": (2e-5, 2e-5), "complex128": (1e-10, 1e-10),
       "float32": (2e-5, 2e-5), "float64": (1e-10, 1e-10)}


@dataclass
class CxCase:
    name: str  # test id; also the op name errors must mention (unless `op` is given)
    fn_oar: Callable  # (*tensors, **attrs) -> Tensor
    fn_numpy: Callable  # (*complex128 / float64 arrays, **attrs) -> array
    kinds: str = "c"  # one letter per tensor input: "c" complex, "r" real (of the case's precision)
    shapes: List[List[tuple]] = field(default_factory=lambda: [[(3, 4)]])
    dtypes: Sequence[str] = COMPLEX_DTYPES  # the complex dtype; "r" inputs get its real dtype
    grad: bool = True
    grad_shapes: Optional[List[List[tuple]]] = None  # default: the first two shape sets
    attrs: Dict[str, Any] = field(default_factory=dict)
    tol: Dict[str, tuple] = field(default_factory=dict)
    bad_inputs: Sequence[tuple] = ()  # (args or fn() -> args, ExceptionType, substring[, attrs])
    op: Optional[str] = None
    scale: float = 1.0  # input magnitude


def case_id(case):
    return case.name


def _draw(rng, kind, shape, scale):
    a = rng.standard_normal(shape) * scale
    if kind == "c":
        a = a + 1j * rng.standard_normal(shape) * scale
    return a


def _round(a, kind, cdtype):
    dt = cdtype if kind == "c" else REAL_OF[cdtype]
    return np.array(np.asarray(a).astype(dt), dtype=np.complex128 if kind == "c" else np.float64)


def _tensor(a, kind, cdtype, stop_gradient=True):
    dt = cdtype if kind == "c" else REAL_OF[cdtype]
    return oar.to_tensor(np.asarray(a).astype(dt), stop_gradient=stop_gradient)


def make_inputs(case, cdtype, shapes, rng):
    arrays = [_round(_draw(rng, k, s, case.scale), k, cdtype) for k, s in zip(case.kinds, shapes)]
    return arrays, [_tensor(a, k, cdtype) for a, k in zip(arrays, case.kinds)]


def assert_close(actual, expected, dtype, tol=None, msg=""):
    atol, rtol = (tol or {}).get(dtype, TOL.get(dtype, (0, 0)))
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{msg}: shape {actual.shape} != {expected.shape}"
    if actual.dtype == np.bool_ or expected.dtype == np.bool_:
        np.testing.assert_array_equal(actual, expected, err_msg=msg)
        return
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol, equal_nan=True, err_msg=msg)


def check_forward(case):
    rng = np.random.default_rng(SEED)
    for cdtype in case.dtypes:
        for shapes in case.shapes:
            arrays, tensors = make_inputs(case, cdtype, shapes, rng)
            out = case.fn_oar(*tensors, **case.attrs)
            with np.errstate(all="ignore"):
                ref = np.asarray(case.fn_numpy(*arrays, **case.attrs))
            where = f"{case.name} dtype={cdtype} shapes={shapes}"
            if ref.dtype.kind == "c":
                assert out.dtype.name == cdtype, f"{where}: output dtype {out.dtype.name}"
            elif ref.dtype.kind == "f":
                assert out.dtype.name == REAL_OF[cdtype], f"{where}: output dtype {out.dtype.name}"
            assert_close(out.numpy(), ref, out.dtype.name, case.tol, where)


def _loss(out, cot):
    out = np.asarray(out)
    return float(np.sum(np.real(cot) * np.real(out) + np.imag(cot) * np.imag(out)))


def _eval(case, xs, kinds):
    with oar.no_grad():
        return case.fn_oar(*[_tensor(x, k, "complex128") for x, k in zip(xs, kinds)], **case.attrs).numpy()


def check_grad(case, eps=1e-6, atol=1e-6, rtol=1e-5):
    """oar.grad and backward() vs central differences in complex128/float64."""
    rng = np.random.default_rng(SEED + 1)
    for shapes in case.grad_shapes or case.shapes[:2]:
        arrays, tensors = make_inputs(case, "complex128", shapes, rng)
        for t in tensors:
            t.stop_gradient = False
        out = case.fn_oar(*tensors, **case.attrs)
        cot = rng.standard_normal(out.shape)
        if out.dtype.name.startswith("complex"):
            cot = cot + 1j * rng.standard_normal(out.shape)
        grads = oar.grad([out], tensors, grad_outputs=[oar.to_tensor(cot)], retain_graph=True)
        out.backward(oar.to_tensor(cot))
        for i, (a, k) in enumerate(zip(arrays, case.kinds)):
            where = f"{case.name} d/d(input {i}) shapes={shapes}"
            assert grads[i] is not None, f"{where}: no gradient"
            assert grads[i].dtype == tensors[i].dtype and grads[i].shape == tensors[i].shape, where
            assert_close(tensors[i].grad.numpy(), grads[i].numpy(), "float64", msg=where)
            num = np.zeros(a.shape, dtype=np.complex128 if k == "c" else np.float64)
            xs = [x.copy() for x in arrays]
            steps = (1.0, 1j) if k == "c" else (1.0,)
            for idx in np.ndindex(*a.shape):
                old = xs[i][idx]
                for step in steps:
                    xs[i][idx] = old + eps * step
                    hi = _loss(_eval(case, xs, case.kinds), cot)
                    xs[i][idx] = old - eps * step
                    lo = _loss(_eval(case, xs, case.kinds), cot)
                    xs[i][idx] = old
                    num[idx] += (hi - lo) / (2 * eps) * (1 if step == 1.0 else 1j)
            np.testing.assert_allclose(grads[i].numpy(), num, atol=atol, rtol=rtol, err_msg=where)


def check_bad_inputs(case):
    for args, exc, substring, *attrs in case.bad_inputs:
        args = args() if callable(args) else args
        with pytest.raises(exc) as info:
            case.fn_oar(*args, **(attrs[0] if attrs else case.attrs))
        msg = str(info.value)
        assert substring in msg, f"{case.name}: '{substring}' not in '{msg}'"
        assert (case.op or case.name) in msg, f"{case.name}: op name not in '{msg}'"


def ctensor(data, dtype="complex128", stop_gradient=True):
    return oar.to_tensor(np.asarray(data).astype(dtype), stop_gradient=stop_gradient)
