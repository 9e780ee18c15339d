// Fused updates of NAdam, RAdam, Rprop and ASGD (see phi_kernels/funcs/optimizer_update.h),
// the formulas of Paddle's docs. Everything that depends on the step count is computed here
// from `step`, so that a DistModel program, which feeds the step as an input, stays right
// (Note [DistModel] in docs/notes/distributed.md). State and arithmetic are in the parameter's
// math type (float for float32 and 16-bit parameters, double for float64), as for the other rules.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "phi_kernels/cpu/optimizer_loop.h"

namespace oar::phi {

namespace {
using namespace optimizer_loop;  // NOLINT(build/namespaces): for_each_param, MathOf, state

void check_args(const UpdateArgs& a, size_t states, const char* op, bool uses_step = true) {
  const size_t n = a.params.size();
  OAR_ENFORCE(a.grads.size() == n && a.lrs.size() == n && a.wds.size() == n, InvalidArgument, op, ": got ", n,
              " parameters but ", a.grads.size(), " gradients, ", a.lrs.size(), " learning rates and ", a.wds.size(),
              " weight decays");
  OAR_ENFORCE(a.states.size() == states, InvalidArgument, op, ": expected ", states, " state lists, got ",
              a.states.size());
  for (const ParamList& s : a.states)
    OAR_ENFORCE(s.size() == n, InvalidArgument, op, ": a state list of ", s.size(), " tensors for ", n, " parameters");
  OAR_ENFORCE(!uses_step || a.step >= 1, InvalidArgument, op, ": the step count must be >= 1, got ", a.step);
}

double pw(double x, int64_t t) { return std::pow(x, static_cast<double>(t)); }
}  // namespace

// NAdam. scalars: beta1, beta2, epsilon, momentum_decay; states: moment1, moment2,
// mu_product (prod of mu_i, i <= t, per element). With g = grad + wd p:
//   mu_t = b1 (1 - 0.5 * 0.96^(t psi)), mu_product *= mu_t,
//   m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
//   m_hat = mu_{t+1} m / (1 - mu_product mu_{t+1}) + (1 - mu_t) g / (1 - mu_product),
//   p -= lr m_hat / (sqrt(v / (1 - b2^t)) + eps).
void nadam_update(const UpdateArgs& a) {
  check_args(a, 3, "nadam");
  const double b1 = a.scalars[0], b2 = a.scalars[1], psi = a.scalars[3];
  const double mu = b1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(a.step) * psi));
  const double mu1 = b1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(a.step + 1) * psi));
  const double inv_bc2 = 1.0 / (1.0 - pw(b2, a.step));
  for_each_param(a.params, a.grads, "nadam", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* m1 = state<M>(a.params[k], a.states[0][k], "nadam", "moment1");
    M* m2 = state<M>(a.params[k], a.states[1][k], "nadam", "moment2");
    M* prod = state<M>(a.params[k], a.states[2][k], "nadam", "mu_product");
    const M c1 = static_cast<M>(b1), c2 = static_cast<M>(b2), eps = static_cast<M>(a.scalars[2]);
    const M fmu = static_cast<M>(mu), fmu1 = static_cast<M>(mu1), ibc2 = static_cast<M>(inv_bc2);
    const M lr = static_cast<M>(a.lrs[k]), wd = static_cast<M>(a.wds[k]);
    parallel_for(n, [=](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]) + wd * pv;
        M pr = prod[i] * fmu;
        M mv = c1 * m1[i] + (M(1) - c1) * gv;
        M vv = c2 * m2[i] + (M(1) - c2) * gv * gv;
        prod[i] = pr;
        m1[i] = mv;
        m2[i] = vv;
        M mh = fmu1 * mv / (M(1) - pr * fmu1) + (M(1) - fmu) * gv / (M(1) - pr);
        p[i] = static_cast<T>(pv - lr * (mh / (std::sqrt(vv * ibc2) + eps)));
      }
    });
  });
}

// RAdam. scalars: beta1, beta2, epsilon; states: moment1, moment2. With g = grad + wd p,
// m, v as Adam's, m_hat = m / (1 - b1^t), rho_inf = 2 / (1 - b2) - 1,
// rho_t = rho_inf - 2 t b2^t / (1 - b2^t): when rho_t > 5,
//   r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
//   p -= lr m_hat r sqrt(1 - b2^t) / (sqrt(v) + eps); else p -= lr m_hat.
void radam_update(const UpdateArgs& a) {
  check_args(a, 2, "radam");
  const double b1 = a.scalars[0], b2 = a.scalars[1];
  const double bc1 = 1.0 - pw(b1, a.step), bc2 = 1.0 - pw(b2, a.step);
  const double rho_inf = 2.0 / (1.0 - b2) - 1.0;
  const double rho = rho_inf - 2.0 * static_cast<double>(a.step) * pw(b2, a.step) / bc2;
  const bool adaptive = rho > 5.0;
  const double rect =
      adaptive ? std::sqrt((rho - 4.0) * (rho - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho)) : 0.0;
  for_each_param(a.params, a.grads, "radam", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* m1 = state<M>(a.params[k], a.states[0][k], "radam", "moment1");
    M* m2 = state<M>(a.params[k], a.states[1][k], "radam", "moment2");
    const M c1 = static_cast<M>(b1), c2 = static_cast<M>(b2), eps = static_cast<M>(a.scalars[2]);
    const M inv_bc1 = static_cast<M>(1.0 / bc1);
    const M wd = static_cast<M>(a.wds[k]);
    // the step factor of m_hat: lr, or lr r sqrt(1 - b2^t) / (sqrt(v) + eps)
    const M lr = static_cast<M>(a.lrs[k]), lr_ad = static_cast<M>(a.lrs[k] * rect * std::sqrt(bc2));
    parallel_for(n, [=](int64_t lo, int64_t hi) {
      if (adaptive) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          M gv = static_cast<M>(g[i]) + wd * pv;
          M mv = c1 * m1[i] + (M(1) - c1) * gv;
          M vv = c2 * m2[i] + (M(1) - c2) * gv * gv;
          m1[i] = mv;
          m2[i] = vv;
          p[i] = static_cast<T>(pv - lr_ad * (mv * inv_bc1 / (std::sqrt(vv) + eps)));
        }
      } else {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          M gv = static_cast<M>(g[i]) + wd * pv;
          M mv = c1 * m1[i] + (M(1) - c1) * gv;
          m1[i] = mv;
          m2[i] = c2 * m2[i] + (M(1) - c2) * gv * gv;
          p[i] = static_cast<T>(pv - lr * (mv * inv_bc1));
        }
      }
    });
  });
}

// Rprop. scalars: eta_negative, eta_positive, learning_rate_range's low and high; states:
// prev_grad, step_size (starting at the learning rate). s = sign(g prev):
//   step_size = clip(step_size * (s > 0 ? eta+ : s < 0 ? eta- : 1), low, high),
//   g = s < 0 ? 0 : g, p -= sign(g) step_size, prev = g.
// No learning rate or decay enters (Paddle's Rprop takes no weight_decay).
void rprop_update(const UpdateArgs& a) {
  check_args(a, 2, "rprop", false);
  for_each_param(a.params, a.grads, "rprop", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    // M's bits as an unsigned and a signed integer of the same width.
    using U = std::conditional_t<sizeof(M) == 4, uint32_t, uint64_t>;
    using I = std::make_signed_t<U>;
    constexpr int kSignShift = 8 * sizeof(M) - 1;
    constexpr U kAbs = ~(U(1) << kSignShift);
    const U kInf = std::bit_cast<U>(std::numeric_limits<M>::infinity());
    const U kQuietNan = std::bit_cast<U>(std::numeric_limits<M>::quiet_NaN());
    M* prev = state<M>(a.params[k], a.states[0][k], "rprop", "prev_grad");
    M* size = state<M>(a.params[k], a.states[1][k], "rprop", "step_size");
    const M up = static_cast<M>(a.scalars[1]) - M(1), down = static_cast<M>(a.scalars[0]) - M(1);
    const M lo_lr = static_cast<M>(a.scalars[2]), hi_lr = static_cast<M>(a.scalars[3]);
    parallel_for(n, [=](int64_t lo, int64_t hi) {
    // The signs from the bits: float compares chained into selects keep the loop scalar
    // (they may trap, so GCC does not if-convert them); integer ones vectorize. A zero is
    // +-0; g and prev "differ" when both are nonzero with different sign bits.
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        const M gv = static_cast<M>(g[i]);
        const U gb = std::bit_cast<U>(gv), pb = std::bit_cast<U>(prev[i]);
        const I gnz = static_cast<I>((gb & kAbs) != 0);
        const I both = gnz & static_cast<I>((pb & kAbs) != 0);
        const I differ = static_cast<I>((gb ^ pb) >> kSignShift);
        const I flip = both & differ, grow = both & (1 - differ);
        M sz = size[i] * (M(1) + static_cast<M>(grow) * up + static_cast<M>(flip) * down);
        sz = sz < lo_lr ? lo_lr : sz;
        sz = sz > hi_lr ? hi_lr : sz;
        size[i] = sz;
        prev[i] = flip ? M(0) : gv;
        const M step = static_cast<M>((1 - flip) * gnz * (1 - 2 * static_cast<I>(gb >> kSignShift))) * sz;
        // A NaN gradient makes the parameter NaN, as Paddle's sign(NaN) does (never hidden).
        const U nan_bits = static_cast<U>(-static_cast<I>((gb & kAbs) > kInf));
        const M step_or_nan = std::bit_cast<M>(std::bit_cast<U>(step) | (nan_bits & kQuietNan));
        p[i] = static_cast<T>(static_cast<M>(p[i]) - step_or_nan);
      }
    });
  });
}

void asgd_update(const UpdateArgs& a) {
  check_args(a, 2, "asgd");
  const double nb = a.scalars[0];
  OAR_ENFORCE(nb >= 1 && nb == std::floor(nb), InvalidArgument, "asgd: batch_num must be a positive integer, got ", nb);
  const auto batch = static_cast<int64_t>(nb);
  const int64_t m = a.step - 1, slot = m % batch;
  const double count = static_cast<double>(std::min(m + 1, batch));
  for_each_param(a.params, a.grads, "asgd", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* d = state<M>(a.params[k], a.states[0][k], "asgd", "d");
    M* y = state<M>(a.params[k], a.states[1][k], "asgd", "y", batch) + slot * n;
    const M lr = static_cast<M>(a.lrs[k]), wd = static_cast<M>(a.wds[k]), inv = static_cast<M>(1.0 / count);
    parallel_for(n, [=](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        const M gv = static_cast<M>(g[i]);
        const M dv = d[i] - y[i] + gv;
        d[i] = dv;
        y[i] = gv;
        M pv = static_cast<M>(p[i]);
        p[i] = static_cast<T>(pv - (dv * inv + pv * wd) * lr);
      }
    });
  });
}

namespace {
void nadam_kernel(const DeviceContext&, const UpdateArgs& a) { nadam_update(a); }
void radam_kernel(const DeviceContext&, const UpdateArgs& a) { radam_update(a); }
void rprop_kernel(const DeviceContext&, const UpdateArgs& a) { rprop_update(a); }
void asgd_kernel(const DeviceContext&, const UpdateArgs& a) { asgd_update(a); }

const bool registered = register_update_kernels({{"nadam_update", nadam_kernel},
                                                 {"radam_update", radam_kernel},
                                                 {"rprop_update", rprop_kernel},
                                                 {"asgd_update", asgd_kernel}});
}  // namespace

}  // namespace oar::phi
