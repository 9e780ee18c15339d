"""The constants of Note [erf on double lanes] (phi_kernels/cpu/vec_erf.h): Chebyshev fits at
50 digits with mpmath (a dependency of sympy; `pip install mpmath`), printed as the C++
arrays, monomial coefficients lowest first, and each fit's maximum error.

    python3 docs/notes/fits/erf_double.py
"""
import mpmath as mp

mp.mp.dps = 50


def fit(f, lo, hi, n, shift=0):
    """Degree n - 1 fit of f on [lo, hi] as a polynomial in (x - shift)."""
    c, err = mp.chebyfit(lambda u: f(u + shift), [lo - shift, hi - shift], n, error=True)
    return [float(v) for v in c[::-1]], float(err)


def main():
    fits = {
        # erf(a) / a - 1 in s = a^2, a in [0, 1]
        "kSmall": fit(lambda s: (mp.erf(mp.sqrt(s)) / mp.sqrt(s) if s else 2 / mp.sqrt(mp.pi)) - 1, 0, 1, 13),
        # erfc(a) exp(a^2) in a - 1.75, a in [1, 2.5]
        "kMid": fit(lambda a: mp.erfc(a) * mp.exp(a * a), 1, 2.5, 19, shift=1.75),
        # erfc(a) exp(a^2) in t - 17/60, t = 1 / a in [1/6, 0.4] (17/60 as the double rounds it)
        "kFar": fit(lambda t: mp.erfc(1 / t) * mp.exp(1 / (t * t)), mp.mpf(1) / 6, 0.4, 14,
                    shift=mp.mpf(0.2833333333333333)),
        # exp(r), r in [-ln2 / 2, ln2 / 2]
        "kExp": fit(mp.exp, -mp.log(2) / 2, mp.log(2) / 2, 12),
    }
    for name, (c, err) in fits.items():
        print(f"// max error {err:.2g}")
        print(f"constexpr double {name}[] = {{{', '.join(repr(v) for v in c)}}};")
    ln2 = mp.log(2)
    print(f"// ln2 = {float(ln2)!r} + {float(ln2 - mp.mpf(float(ln2)))!r}")


if __name__ == "__main__":
    main()
