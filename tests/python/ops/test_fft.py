"""oar.fft against numpy.fft (float64/complex128 references): every transform with each
norm, n / s cropping and padding, explicit axes, 0-size batch dims; gradients by finite
differences on the real and imaginary parts; bad arguments; fftfreq, rfftfreq, fftshift,
ifftshift."""
import numpy as np
import pytest

import oar
import oar.fft as offt
from complex_test_utils import CxCase, case_id, check_bad_inputs, check_forward, check_grad, ctensor

NORMS = ("backward", "forward", "ortho")
TOL = {"complex64": (1e-4, 1e-4), "float32": (1e-4, 1e-4)}


def _hfft_np(a, n=None, axis=-1, norm="backward"):
    return np.fft.hfft(a, n=n, axis=axis, norm=norm)


def _last_axes(a, s, axes):
    return axes if axes is not None or s is None else tuple(range(a.ndim - len(s), a.ndim))


def _np_nd(f):
    return lambda a, s=None, axes=None, norm="backward": f(a, s=s, axes=_last_axes(a, s, axes), norm=norm)


def _hfftn_np(a, s=None, axes=None, norm="backward"):
    axes = _last_axes(a, s, axes)
    # hfftn(x) = irfftn(conj(x)) with the opposite normalization (numpy has no hfftn)
    inv = {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.fft.irfftn(np.conj(a), s=s, axes=axes, norm=inv)


def _ihfftn_np(a, s=None, axes=None, norm="backward"):
    axes = _last_axes(a, s, axes)
    inv = {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.conj(np.fft.rfftn(a, s=s, axes=axes, norm=inv))


def _one_axis_cases():
    cases = []
    specs = [  # name, oar fn, numpy fn, input kind, shapes
        ("fft", offt.fft, np.fft.fft, "c", [[(3, 8)], [(5,)], [(0, 4)], [(2, 3, 5)]]),
        ("fft[real]", offt.fft, np.fft.fft, "r", [[(3, 8)], [(2, 7)]]),
        ("ifft", offt.ifft, np.fft.ifft, "c", [[(3, 8)], [(0, 4)], [(2, 3, 5)]]),
        ("ifft[real]", offt.ifft, np.fft.ifft, "r", [[(3, 6)]]),
        ("rfft", offt.rfft, np.fft.rfft, "r", [[(3, 8)], [(4, 7)], [(0, 4)], [(2, 3, 5)]]),
        ("irfft", offt.irfft, np.fft.irfft, "c", [[(3, 5)], [(4, 4)], [(0, 4)], [(2, 3, 5)]]),
        ("hfft", offt.hfft, _hfft_np, "c", [[(3, 5)], [(4, 4)], [(2, 3, 5)]]),
        ("ihfft", offt.ihfft, np.fft.ihfft, "r", [[(3, 8)], [(4, 7)], [(2, 3, 5)]]),
    ]
    for name, fo, fn, kind, shapes in specs:
        op = name.split("[")[0]
        for norm in NORMS:
            cases.append(CxCase(f"{name}[{norm}]", fo, fn, kinds=kind, shapes=shapes, op=op,
                                attrs={"norm": norm}, tol=TOL, grad_shapes=[[(2, 6)], [(5,)]]))
        for n, axis in ((5, 0), (11, -1), (4, 1)):
            cases.append(CxCase(f"{name}[n={n},axis={axis}]", fo, fn, kinds=kind, shapes=[[(6, 8)]],
                                op=op, attrs={"n": n, "axis": axis}, tol=TOL, grad_shapes=[[(3, 4)]]))
    return cases


def _nd_cases():
    specs = [
        ("fftn", offt.fftn, _np_nd(np.fft.fftn), "c"), ("ifftn", offt.ifftn, _np_nd(np.fft.ifftn), "c"),
        ("fftn[real]", offt.fftn, _np_nd(np.fft.fftn), "r"), ("rfftn", offt.rfftn, _np_nd(np.fft.rfftn), "r"),
        ("irfftn", offt.irfftn, _np_nd(np.fft.irfftn), "c"), ("hfftn", offt.hfftn, _hfftn_np, "c"),
        ("ihfftn", offt.ihfftn, _ihfftn_np, "r"),
        ("fft2", offt.fft2, np.fft.fft2, "c"), ("ifft2", offt.ifft2, np.fft.ifft2, "c"),
        ("rfft2", offt.rfft2, np.fft.rfft2, "r"), ("irfft2", offt.irfft2, np.fft.irfft2, "c"),
        ("hfft2", offt.hfft2, lambda a, s=None, axes=(-2, -1), norm="backward": _hfftn_np(a, s, axes, norm), "c"),
        ("ihfft2", offt.ihfft2, lambda a, s=None, axes=(-2, -1), norm="backward": _ihfftn_np(a, s, axes, norm), "r"),
    ]
    cases = []
    for name, fo, fn, kind in specs:
        op = name.split("[")[0]
        two = op.endswith("2")
        for norm in NORMS:  # fft2 & co. leave axis 0 alone: a 0-size batch there
            cases.append(CxCase(f"{name}[{norm}]", fo, fn, kinds=kind, op=op, attrs={"norm": norm}, tol=TOL,
                                shapes=[[(3, 4, 6)], [(4, 5)]] + ([[(0, 4, 6)]] if two else []),
                                grad_shapes=[[(3, 4)]]))
        if not two:
            cases.append(CxCase(f"{name}[0-size batch]", fo, fn, kinds=kind, op=op, attrs={"axes": (1, 2)},
                                tol=TOL, shapes=[[(0, 4, 6)]], grad=False))
        axes = (0, 2) if two else (2, 0)
        cases.append(CxCase(f"{name}[s,axes]", fo, fn, kinds=kind, op=op, attrs={"s": (5, 4), "axes": axes},
                            tol=TOL, shapes=[[(3, 4, 6)]], grad_shapes=[[(2, 3, 3)]]))
        if not two:
            cases.append(CxCase(f"{name}[s]", fo, fn, kinds=kind, op=op, attrs={"s": (3, 6)}, tol=TOL,
                                shapes=[[(2, 4, 5)]], grad_shapes=[[(2, 2, 3)]]))
    return cases


CASES = _one_axis_cases() + _nd_cases()
GRAD_CASES = [c for c in CASES if c.grad]


def _x():
    return ctensor(np.ones((2, 4)) + 1j, "complex64")


BAD_CASES = [
    CxCase("fft[bad]", offt.fft, None, op="fft", bad_inputs=[
        (lambda: (_x(),), ValueError, "argument 'n' must be positive, got 0", {"n": 0}),
        (lambda: (_x(),), ValueError, "argument 'n' must be positive, got -3", {"n": -3}),
        (lambda: (_x(),), TypeError, "argument 'n' must be an integer", {"n": 2.5}),
        (lambda: (_x(),), ValueError, "axis 2 is out of range", {"axis": 2}),
        (lambda: (_x(),), ValueError, "argument 'norm'", {"norm": "unitary"}),
        (lambda: ([1.0, 2.0],), TypeError, "argument 'x' must be a Tensor"),
        (lambda: (oar.zeros([2, 0]),), ValueError, "has length 0"),
    ]),
    CxCase("rfft[bad]", offt.rfft, None, op="rfft", bad_inputs=[
        (lambda: (_x(),), TypeError, "must be a real tensor, got complex64"),
        (lambda: (oar.ones([4]),), ValueError, "axis -2 is out of range", {"axis": -2}),
    ]),
    CxCase("irfft[bad]", offt.irfft, None, op="irfft", bad_inputs=[
        (lambda: (ctensor([1j]),), ValueError, "is not positive"),
        (lambda: (_x(),), ValueError, "argument 'n' must be positive", {"n": 0}),
    ]),
    CxCase("fftn[bad]", offt.fftn, None, op="fftn", bad_inputs=[
        (lambda: (_x(),), ValueError, "same length", {"s": (2, 2), "axes": (0,)}),
        (lambda: (_x(),), ValueError, "repeats an axis", {"axes": (1, -1)}),
        (lambda: (_x(),), ValueError, "argument 's' must be positive", {"s": (0, 2)}),
    ]),
    CxCase("fft2[bad]", offt.fft2, None, op="fft2", bad_inputs=[
        (lambda: (ctensor([1j, 2j]),), ValueError, "at least 2 dimensions"),
        (lambda: (_x(),), ValueError, "argument 'axes'", {"axes": (0, 1, 1)}),
    ]),
    CxCase("fftfreq[bad]", offt.fftfreq, None, op="fftfreq", bad_inputs=[
        ((0,), ValueError, "argument 'n' must be positive"),
        ((4,), ValueError, "argument 'd' must not be 0", {"d": 0}),
    ]),
    CxCase("fft_c2c[bad]", oar._C.ops._fft_c2c, None, op="fft_c2c", bad_inputs=[
        (lambda: (oar.ones([4]), [0]), TypeError, "complex64 or complex128 tensor, got float32"),
        (lambda: (_x(), [3]), IndexError, "axis 3 is out of range"),
        (lambda: (_x(), [0], "bogus"), ValueError, "'backward', 'forward' or 'ortho'"),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_id)
def test_grad(case):
    check_grad(case)


@pytest.mark.parametrize("case", BAD_CASES, ids=case_id)
def test_bad_inputs(case):
    check_bad_inputs(case)


@pytest.mark.parametrize("n, d", [(1, 1.0), (4, 1.0), (5, 0.3), (8, 2.5)])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_fftfreq(n, d, dtype):
    f, rf = offt.fftfreq(n, d, dtype=dtype), offt.rfftfreq(n, d, dtype=dtype)
    want = "float32" if dtype is None else dtype
    assert f.dtype.name == want and rf.dtype.name == want
    tol = 1e-6 if want == "float32" else 1e-15
    np.testing.assert_allclose(f.numpy(), np.fft.fftfreq(n, d), rtol=tol, atol=tol)
    np.testing.assert_allclose(rf.numpy(), np.fft.rfftfreq(n, d), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape, axes", [((5,), None), ((4, 5), None), ((4, 5), 1), ((3, 4, 5), (0, 2)),
                                         ((0, 3), None)])
def test_fftshift(shape, axes):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = oar.to_tensor(a)
    np.testing.assert_array_equal(offt.fftshift(x, axes).numpy(), np.fft.fftshift(a, axes))
    np.testing.assert_array_equal(offt.ifftshift(x, axes).numpy(), np.fft.ifftshift(a, axes))
    np.testing.assert_array_equal(offt.ifftshift(offt.fftshift(x, axes), axes).numpy(), a)


def test_round_trips_and_dtypes():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 10))
    x = oar.to_tensor(a)  # float64
    assert offt.rfft(x).dtype == oar.complex128 and offt.fft(x.astype("float32")).dtype == oar.complex64
    np.testing.assert_allclose(offt.irfft(offt.rfft(x), n=10).numpy(), a, atol=1e-12)
    np.testing.assert_allclose(offt.ifft(offt.fft(x)).numpy(), a, atol=1e-12)
    np.testing.assert_allclose(offt.fft(oar.to_tensor([1, 2, 3])).numpy(), np.fft.fft([1, 2, 3]), rtol=1e-6)
    assert offt.fft(oar.to_tensor([1, 2, 3])).dtype == oar.complex64  # ints: the default float


def test_grad_through_real_loss():
    # Parseval: sum |fft(x)|^2 = n sum x^2, so d/dx = 2 n x.
    a = np.array([0.5, -1.0, 2.0, 0.25])
    x = oar.to_tensor(a, stop_gradient=False)
    (oar.abs(offt.fft(x)) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 4 * a, rtol=1e-12)


def test_non_contiguous_input():
    a = np.random.default_rng(1).standard_normal((6, 4)) + 0j
    x = oar.to_tensor(a).T  # a transposed view
    np.testing.assert_allclose(offt.fft(x, axis=0).numpy(), np.fft.fft(a.T, axis=0), atol=1e-12)


def test_fft_namespace_is_lazy():
    import subprocess
    import sys
    code = "import sys, oar; assert 'oar.fft' not in sys.modules; oar.fft.fft; assert 'oar.fft' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
