// Special functions without a SLEEF version: erfinv (float64; the float kernel is in
// math_functions_kernels.cc), digamma and polygamma. They are
// evaluated in double (then rounded to the tensor's dtype): an approximation plus
// Newton steps for erfinv, recurrence + asymptotic series for digamma, and the Hurwitz
// zeta function (Euler-Maclaurin summation) for polygamma of order n >= 1.
#include <cmath>
#include <limits>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/special_functions.h"

namespace oar::phi {
namespace {

constexpr double kPi = 3.141592653589793;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// Inverse error function: Giles' single-precision polynomial (a published
// approximation in w = -log(1 - y^2)), refined by two Newton steps on erf(x) = y.
double erfinv(double y) {
  if (!(y >= -1.0 && y <= 1.0)) return kNaN;
  if (y == 1.0) return kInf;
  if (y == -1.0) return -kInf;
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int it = 0; it < 2; ++it) {  // Newton: f = erf(x) - y, f' = 2/sqrt(pi) exp(-x^2)
    const double d = 1.1283791670955126 * std::exp(-x * x);
    if (d == 0) break;
    x -= (std::erf(x) - y) / d;
  }
  return x;
}

namespace {

double digamma(double x) {
  if (std::isnan(x) || x == -kInf) return kNaN;
  if (x == kInf) return kInf;
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;  // poles at the negative integers
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
    return digamma(1.0 - x) - kPi / std::tan(kPi * x);
  }
  double r = 0;
  while (x < 6.0) {
    r -= 1.0 / x;
    x += 1.0;
  }
  const double f = 1.0 / (x * x);
  const double series =
      f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
  return r + std::log(x) - 0.5 / x - series;
}

// Hurwitz zeta(s, q) = sum_k (q + k)^-s for integer s >= 2: direct terms until q + k > 9,
// then Euler-Maclaurin with Bernoulli numbers B_2j / (2j)!.
double hurwitz_zeta(double s, double q) {
  if (q <= 0 && q == std::floor(q)) return kInf;
  static const double kB2jOverFact[] = {
      1.0 / 12,  -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
      -1.0 / 1.8924375803183791606e9,  1.0 / 7.47242496e10, -1.0 / 2.950130727918164224e12,
      1.0 / 1.1646782814350067249e14, -1.0 / 4.5979787224074726105e15,
      1.0 / 1.8152105401943546773e17, -1.0 / 7.1661652561756670113e18};
  double sum = 0, a = q;
  int k = 0;
  while (k < 9 || a <= 9.0) {
    sum += std::pow(a, -s);
    a += 1.0;
    ++k;
    if (std::abs(std::pow(a, -s) / sum) < 1e-17) return sum;
  }
  // Tail: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)..(s+2j-2) a^(-s-2j+1)
  sum += std::pow(a, 1.0 - s) / (s - 1.0) + 0.5 * std::pow(a, -s);
  double fac = s, t = std::pow(a, -s - 1.0);
  for (int j = 0; j < 12; ++j) {
    const double term = kB2jOverFact[j] * fac * t;
    sum += term;
    if (std::abs(term / sum) < 1e-17) break;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2);
    t /= a * a;
  }
  return sum;
}

// psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1.
double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (std::isnan(x)) return kNaN;
  const double fact = std::tgamma(static_cast<double>(n) + 1.0);
  return ((n % 2) ? 1.0 : -1.0) * fact * hurwitz_zeta(static_cast<double>(n) + 1.0, x);
}

template <typename T>
void DigammaKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  unary_kernel<T, T>(x, out, [](auto v) {
    return static_cast<decltype(v)>(digamma(static_cast<double>(v)));
  });
}

template <typename T>
void PolygammaKernel(const DeviceContext&, const DenseTensor& x, int64_t n, DenseTensor* out) {
  unary_kernel<T, T>(x, out, [n](auto v) {
    return static_cast<decltype(v)>(polygamma(n, static_cast<double>(v)));
  });
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(digamma, CPU, DigammaKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(polygamma, CPU, PolygammaKernel, OAR_FLOAT_TYPES)
