// Fused updates of NAdam, RAdam, Rprop and ASGD (see phi_kernels/funcs/optimizer_update.h),
// the formulas of Paddle's docs. Everything that depends on the step count is computed here
// from `step`, so that a DistModel program, which feeds the step as an input, stays right
// (Note [DistModel] in docs/notes/distributed.md). State is float32, as for the other rules;
// the parameter's own arithmetic runs in its math type.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "phi_kernels/cpu/optimizer_loop.h"

namespace oar::phi {

namespace {
using namespace optimizer_loop;  // NOLINT(build/namespaces): check, for_each_param, MathOf

// A float32 state of `per` values per parameter element (ASGD's gradient window: batch_num).
float* state(const DenseTensor* p, DenseTensor* s, const char* op, const char* what, int64_t per = 1) {
  OAR_ENFORCE(s->dtype() == DataType::FLOAT32 && s->is_contiguous() && s->numel() == per * p->numel(), InvalidArgument,
              op, ": state '", what, "' must be contiguous float32 with ", per * p->numel(), " elements, got ",
              dtype_name(s->dtype()), " with ", s->numel());
  return s->data<float>();
}

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
  const float inv_bc2 = static_cast<float>(1.0 / (1.0 - pw(b2, a.step)));
  for_each_param(a.params, a.grads, "nadam", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    float* m1 = state(a.params[k], a.states[0][k], "nadam", "moment1");
    float* m2 = state(a.params[k], a.states[1][k], "nadam", "moment2");
    float* prod = state(a.params[k], a.states[2][k], "nadam", "mu_product");
    const float c1 = static_cast<float>(b1), c2 = static_cast<float>(b2), eps = static_cast<float>(a.scalars[2]);
    const float fmu = static_cast<float>(mu), fmu1 = static_cast<float>(mu1);
    const M lr = static_cast<M>(a.lrs[k]), wd = static_cast<M>(a.wds[k]);
    parallel_for(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
        float pr = prod[i] * fmu;
        float mv = c1 * m1[i] + (1.0f - c1) * gv;
        float vv = c2 * m2[i] + (1.0f - c2) * gv * gv;
        prod[i] = pr;
        m1[i] = mv;
        m2[i] = vv;
        float mh = fmu1 * mv / (1.0f - pr * fmu1) + (1.0f - fmu) * gv / (1.0f - pr);
        p[i] = static_cast<T>(pv - lr * static_cast<M>(mh / (std::sqrt(vv * inv_bc2) + eps)));
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
    float* m1 = state(a.params[k], a.states[0][k], "radam", "moment1");
    float* m2 = state(a.params[k], a.states[1][k], "radam", "moment2");
    const float c1 = static_cast<float>(b1), c2 = static_cast<float>(b2), eps = static_cast<float>(a.scalars[2]);
    const float inv_bc1 = static_cast<float>(1.0 / bc1);
    const M wd = static_cast<M>(a.wds[k]);
    // the step factor of m_hat: lr, or lr r sqrt(1 - b2^t) / (sqrt(v) + eps)
    const M lr = static_cast<M>(a.lrs[k]), lr_ad = static_cast<M>(a.lrs[k] * rect * std::sqrt(bc2));
    parallel_for(n, [&](int64_t lo, int64_t hi) {
      if (adaptive) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
          float mv = c1 * m1[i] + (1.0f - c1) * gv;
          float vv = c2 * m2[i] + (1.0f - c2) * gv * gv;
          m1[i] = mv;
          m2[i] = vv;
          p[i] = static_cast<T>(pv - lr_ad * static_cast<M>(mv * inv_bc1 / (std::sqrt(vv) + eps)));
        }
      } else {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
          float mv = c1 * m1[i] + (1.0f - c1) * gv;
          m1[i] = mv;
          m2[i] = c2 * m2[i] + (1.0f - c2) * gv * gv;
          p[i] = static_cast<T>(pv - lr * static_cast<M>(mv * inv_bc1));
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
  const float eta_neg = static_cast<float>(a.scalars[0]), eta_pos = static_cast<float>(a.scalars[1]);
  const float lo_lr = static_cast<float>(a.scalars[2]), hi_lr = static_cast<float>(a.scalars[3]);
  for_each_param(a.params, a.grads, "rprop", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    float* prev = state(a.params[k], a.states[0][k], "rprop", "prev_grad");
    float* size = state(a.params[k], a.states[1][k], "rprop", "step_size");
    const float up = eta_pos - 1.0f, down = eta_neg - 1.0f;
    parallel_for(n, [&](int64_t lo, int64_t hi) {
    // The signs from the bits: float compares chained into selects keep the loop scalar
    // (they may trap, so GCC does not if-convert them); integer ones vectorize. A zero is
    // +-0; g and prev "differ" when both are nonzero with different sign bits.
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        const float gv = static_cast<float>(static_cast<M>(g[i]));
        const uint32_t gb = std::bit_cast<uint32_t>(gv), pb = std::bit_cast<uint32_t>(prev[i]);
        const int32_t gnz = static_cast<int32_t>((gb & 0x7fffffffu) != 0);
        const int32_t both = gnz & static_cast<int32_t>((pb & 0x7fffffffu) != 0);
        const int32_t differ = static_cast<int32_t>((gb ^ pb) >> 31);
        const int32_t flip = both & differ, grow = both & (1 - differ);
        float sz = size[i] * (1.0f + static_cast<float>(grow) * up + static_cast<float>(flip) * down);
        sz = sz < lo_lr ? lo_lr : sz;
        sz = sz > hi_lr ? hi_lr : sz;
        size[i] = sz;
        prev[i] = flip ? 0.0f : gv;
        const float step = static_cast<float>((1 - flip) * gnz * (1 - 2 * static_cast<int32_t>(gb >> 31))) * sz;
        // A NaN gradient makes the parameter NaN, as Paddle's sign(NaN) does (never hidden).
        const uint32_t nan_bits = static_cast<uint32_t>(-static_cast<int32_t>((gb & 0x7fffffffu) > 0x7f800000u));
        const float step_or_nan = std::bit_cast<float>(std::bit_cast<uint32_t>(step) | (nan_bits & 0x7fc00000u));
        p[i] = static_cast<T>(static_cast<M>(p[i]) - static_cast<M>(step_or_nan));
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
    float* d = state(a.params[k], a.states[0][k], "asgd", "d");
    float* y = state(a.params[k], a.states[1][k], "asgd", "y", batch) + slot * n;
    const M lr = static_cast<M>(a.lrs[k]), wd = static_cast<M>(a.wds[k]), inv = static_cast<M>(1.0 / count);
    parallel_for(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        const float gv = static_cast<float>(static_cast<M>(g[i]));
        const float dv = d[i] - y[i] + gv;
        d[i] = dv;
        y[i] = gv;
        M pv = static_cast<M>(p[i]);
        p[i] = static_cast<T>(pv - (static_cast<M>(dv) * inv + pv * wd) * lr);
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
