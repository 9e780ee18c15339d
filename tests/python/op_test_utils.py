"""A small table-driven harness for op tests: one OpCase per op (or per op variant),
checked against a float64 NumPy reference, central finite differences and bad inputs.

    CASES = [OpCase("exp", oar.exp, np.exp, inputs=[normal()], shapes=UNARY_SHAPES)]

    @pytest.mark.parametrize("case", CASES, ids=case_id)
    def test_forward(case):
        check_forward(case)

`inputs` has one entry per tensor argument: a generator (normal(), uniform(lo, hi),
ints(lo, hi), bools(), ...) or a plain shape tuple (standard normal values). `shapes`
lists shape sets (one shape per input) to run the forward check on; by default the
shapes given in `inputs`. Narrow floats (float16/bfloat16) are checked against the
reference computed on the same rounded inputs, with loose tolerances.
"""
import pathlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import pytest
import yaml

import oar

SEED = 2024
FLOAT_DTYPES = ["float32", "float64"]
NARROW_DTYPES = ["float16", "bfloat16"]
INT_DTYPES = ["int32", "int64"]
DEFAULT_TOL = {  # (atol, rtol) by dtype
    "float64": (1e-10, 1e-10), "float32": (1e-5, 1e-5),
    "float16": (2e-2, 1e-2), "bfloat16": (1e-1, 2e-2),
}

# Shape sets reused by elementwise tables: plain, 0-D, 0-size and broadcast shapes.
UNARY_SHAPES = [[(3, 4)], [()], [(0, 3)], [(2, 3, 5)]]
BINARY_SHAPES = [[(3, 4), (3, 4)], [(2, 3, 4), (4,)], [(3, 1), (1, 4)], [(), (2, 3)],
                 [(2, 1, 3), (4, 1)], [(0, 3), (3,)], [(0, 3), (1, 3)]]


# ---- input generators: gen(rng, shape) -> float64 / int / bool ndarray
@dataclass
class Gen:
    fn: Callable[[np.random.Generator, tuple], np.ndarray]
    shape: Optional[tuple] = None
    float_input: bool = True  # differentiable (checked by check_grad) when True

    def __call__(self, rng, shape):
        return np.asarray(self.fn(rng, tuple(shape)))


def normal(shape=None, scale=1.0):
    return Gen(lambda r, s: r.standard_normal(s) * scale, shape)


def uniform(lo, hi, shape=None):
    return Gen(lambda r, s: r.uniform(lo, hi, s), shape)


def nonzero(shape=None, lo=0.5, hi=2.0):
    """Values with |v| in [lo, hi] and a random sign (divisors, abs, sign)."""
    return Gen(lambda r, s: r.uniform(lo, hi, s) * r.choice([-1.0, 1.0], s), shape)


def ints(lo, hi, shape=None):
    """Integers in [lo, hi): ties for comparisons, exact values for integer dtypes."""
    return Gen(lambda r, s: r.integers(lo, hi, s).astype(np.float64), shape)


def bools(shape=None):
    return Gen(lambda r, s: r.random(s) < 0.5, shape, float_input=False)


def _as_gen(spec):
    return spec if isinstance(spec, Gen) else normal(tuple(spec))


@dataclass
class OpCase:
    name: str  # test id; also the op name errors must mention (unless `op` is given)
    fn_oar: Callable  # (*tensors, **attrs) -> Tensor
    fn_numpy: Callable  # (*float64 arrays, **attrs) -> array
    inputs: Sequence[Any] = ((3, 4),)  # generators or shapes, one per tensor input
    dtypes: Sequence[str] = tuple(FLOAT_DTYPES)
    grad: bool = True  # check_grad applies (float64, every float input)
    attrs: Dict[str, Any] = field(default_factory=dict)  # keyword arguments of both functions
    shapes: Optional[List[List[tuple]]] = None  # shape sets for check_forward
    grad_shapes: Optional[List[List[tuple]]] = None  # for check_grad (default: first 2 sets)
    tol: Dict[str, tuple] = field(default_factory=dict)  # (atol, rtol) overriding DEFAULT_TOL
    out_dtype: Any = "same"  # "same" (as the inputs), a dtype name, fn(dtype), or None
    bad_inputs: Sequence[tuple] = ()  # (args or fn() -> args, ExceptionType, substring[, attrs])
    op: Optional[str] = None  # the name errors must mention (default: name)
    grad_eps: float = 1e-6
    grad_tol: tuple = (1e-6, 1e-5)  # (atol, rtol) against the finite differences

    def shape_sets(self):
        if self.shapes is not None:
            return self.shapes
        shapes = [_as_gen(s).shape for s in self.inputs]
        return [[(3, 4) if s is None else s for s in shapes]]


def case_id(case):
    return case.name


# ---- dtype helpers
def round_to(a, dtype):
    """float64 values as they are after conversion to `dtype` (the reference's input)."""
    a = np.asarray(a)
    if dtype == "bool" or a.dtype == np.bool_:
        return a.astype(np.bool_) if dtype == "bool" else a.astype(np.dtype(dtype))
    if dtype == "bfloat16":  # round to nearest even on the float32 bits
        b = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        return b.astype(np.uint32).view(np.float32).astype(np.float64)
    if dtype in ("float16", "float32"):
        return a.astype(dtype).astype(np.float64)
    if np.dtype(dtype).kind in "iu":
        return np.round(a).astype(np.dtype(dtype))
    return a.astype(np.dtype(dtype))


def to_oar(a, dtype, stop_gradient=True):
    """A Tensor of `dtype` holding `a` (already rounded to it)."""
    a = np.asarray(a)
    if dtype == "bfloat16":
        t = oar.to_tensor(a.astype(np.float32)).astype("bfloat16")
        t.stop_gradient = stop_gradient
        return t
    return oar.to_tensor(a.astype(np.dtype(dtype)), stop_gradient=stop_gradient)


def to_numpy(t):
    """Tensor -> ndarray (bfloat16 read back as float32)."""
    return (t.astype("float32") if t.dtype.name == "bfloat16" else t).numpy()


def assert_close(actual, expected, dtype, tol=None, msg=""):
    """Exact for bool/integer dtypes, within `dtype`'s (atol, rtol) for floats."""
    atol, rtol = (tol or {}).get(dtype, DEFAULT_TOL.get(dtype, (0, 0)))
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{msg}: shape {actual.shape} != {expected.shape}"
    if actual.dtype == np.bool_ or expected.dtype == np.bool_ or dtype.startswith("int"):
        np.testing.assert_array_equal(actual, expected, err_msg=msg)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   atol=atol, rtol=rtol, equal_nan=True, err_msg=msg)


def make_inputs(case, dtype, shapes, rng):
    """float64/bool reference arrays (rounded to dtype) and the matching Tensors."""
    arrays, tensors = [], []
    for spec, shape in zip(case.inputs, shapes):
        g = _as_gen(spec)
        raw = g(rng, shape)
        d = dtype if g.float_input else "bool"
        a = round_to(raw, d)  # float dtypes come back as float64 holding the rounded values
        arrays.append(a)
        tensors.append(to_oar(a, d))
    return arrays, tensors


def _expected_dtype(case, dtype):
    if case.out_dtype == "same":
        return dtype
    return case.out_dtype(dtype) if callable(case.out_dtype) else case.out_dtype


def check_forward(case):
    """Output dtype and values vs fn_numpy on the same (rounded) inputs, every dtype x shape set."""
    rng = np.random.default_rng(SEED)
    for dtype in case.dtypes:
        for shapes in case.shape_sets():
            arrays, tensors = make_inputs(case, dtype, shapes, rng)
            out = case.fn_oar(*tensors, **case.attrs)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice
                ref = np.asarray(case.fn_numpy(*arrays, **case.attrs))
            where = f"{case.name} dtype={dtype} shapes={shapes}"
            if case.out_dtype is not None:
                assert out.dtype.name == _expected_dtype(case, dtype), \
                    f"{where}: output dtype {out.dtype.name}"
            if ref.dtype != np.bool_ and out.dtype.name.startswith("int"):
                ref = ref.astype(out.dtype.name)
            assert_close(to_numpy(out), ref, out.dtype.name, case.tol, where)


def _objective(case, xs, tensors, diff, cot):
    """sum(fn(xs) * cot) in float64, inputs `diff` taken from the arrays xs."""
    ts = [to_oar(x, "float64") if i in diff else t
          for i, (x, t) in enumerate(zip(xs, tensors))]
    with oar.no_grad():
        o = case.fn_oar(*ts, **case.attrs)
    return float(np.sum(to_numpy(o).astype(np.float64) * cot))


def check_grad(case):
    """oar.grad and backward() vs central differences of sum(out * cotangent), float64."""
    rng = np.random.default_rng(SEED + 1)
    for shapes in case.grad_shapes or case.shape_sets()[:2]:
        arrays, tensors = make_inputs(case, "float64", shapes, rng)
        diff = [i for i, s in enumerate(case.inputs) if _as_gen(s).float_input]
        for i in diff:
            tensors[i].stop_gradient = False
        out = case.fn_oar(*tensors, **case.attrs)
        cot = rng.standard_normal(out.shape)

        grads = oar.grad([out], [tensors[i] for i in diff],
                         grad_outputs=[oar.to_tensor(cot)], retain_graph=True)
        out.backward(oar.to_tensor(cot))
        for k, i in enumerate(diff):
            where = f"{case.name} d/d(input {i}) shapes={shapes}"
            assert grads[k] is not None, f"{where}: no gradient"
            assert grads[k].dtype.name == "float64" and grads[k].shape == tensors[i].shape, where
            assert_close(tensors[i].grad.numpy(), grads[k].numpy(), "float64", msg=where)
            num = np.zeros_like(arrays[i])
            xs = [a.copy() for a in arrays]
            for idx in np.ndindex(*arrays[i].shape):
                old = xs[i][idx]
                xs[i][idx] = old + case.grad_eps
                hi = _objective(case, xs, tensors, diff, cot)
                xs[i][idx] = old - case.grad_eps
                lo = _objective(case, xs, tensors, diff, cot)
                xs[i][idx] = old
                num[idx] = (hi - lo) / (2 * case.grad_eps)
            np.testing.assert_allclose(grads[k].numpy(), num, atol=case.grad_tol[0],
                                       rtol=case.grad_tol[1], err_msg=where)


def check_case(case):
    """The whole harness for one case: forward against its reference, the gradient against
    finite differences when the case has one, and its bad inputs."""
    check_forward(case)
    if case.grad:
        check_grad(case)
    check_bad_inputs(case)


def check_bad_inputs(case):
    """Each bad input raises its exception type, with the substring and the op's name."""
    for args, exc, substring, *attrs in case.bad_inputs:
        args = args() if callable(args) else args
        with pytest.raises(exc) as info:
            case.fn_oar(*args, **(attrs[0] if attrs else case.attrs))
        msg = str(info.value)
        assert substring in msg, f"{case.name}: '{substring}' not in '{msg}'"
        assert (case.op or case.name) in msg, f"{case.name}: op name not in '{msg}'"


def run_in_isa_copy(nodeid, capability, passed):
    """Runs pytest node `nodeid` in a child forced to the kernels' `capability` copy ("avx2",
    "avx512"; Note [CPU dispatch]); skips where this CPU lacks it. `passed`: how many tests the
    child must pass, so that a child that selected nothing fails."""
    import os
    import subprocess
    import sys
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    if capability == "avx512" and "avx512f" not in flags:
        pytest.skip("this CPU has no AVX-512")
    env = dict(os.environ, OAR_CPU_CAPABILITY=capability)
    p = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", nodeid],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert f" {passed} passed" in p.stdout, p.stdout[-2000:]


def declared_ops(yaml_file):
    """Names of the ops declared in paddle_core/ops/<yaml_file>."""
    root = pathlib.Path(__file__).resolve().parents[2]
    return {e["op"] for e in yaml.safe_load((root / "paddle_core/ops" / yaml_file).read_text())}


def tensor(data, dtype="float32", stop_gradient=True):
    """Shorthand for tests: a Tensor of `dtype` from nested lists / arrays."""
    return to_oar(round_to(np.asarray(data, dtype=np.float64) if dtype != "bool"
                           else np.asarray(data), dtype), dtype, stop_gradient)


# ---- random ops: checked by moments / frequencies under a seed, not against a reference
@dataclass
class RandomCase:
    """One random op (or variant). `sample(dtype)` draws a Tensor (after oar.seed(SEED));
    `check(values, dtype)` asserts its moments or frequencies (values: float64 ndarray).
    `fn_oar(*args, **attrs)` is the op itself, called by check_bad_inputs."""
    name: str
    fn_oar: Callable
    sample: Callable[[str], Any]
    check: Callable[[np.ndarray, str], None]
    dtypes: Sequence[str] = tuple(FLOAT_DTYPES)
    bad_inputs: Sequence[tuple] = ()
    op: Optional[str] = None
    attrs: Dict[str, Any] = field(default_factory=dict)
    out_dtype: Any = "same"  # as for OpCase


def check_random(case):
    """Per dtype: output dtype, moments/frequencies, and the same draws after reseeding."""
    for dtype in case.dtypes:
        oar.seed(SEED)
        out = case.sample(dtype)
        where = f"{case.name} dtype={dtype}"
        if case.out_dtype is not None:
            want = dtype if case.out_dtype == "same" else (
                case.out_dtype(dtype) if callable(case.out_dtype) else case.out_dtype)
            assert out.dtype.name == want, f"{where}: output dtype {out.dtype.name}"
        values = to_numpy(out).astype(np.float64)
        case.check(values, dtype)
        oar.seed(SEED)
        again = to_numpy(case.sample(dtype)).astype(np.float64)
        np.testing.assert_array_equal(values, again, err_msg=f"{where}: not reproducible")
