// Fused multi-tensor optimizer updates (see phi_kernels/funcs/optimizer_update.h).
// Each rule is one loop body; for_each_param walks the parameter list, checks shapes
// and dtypes once, and runs the body over each parameter's memory in parallel chunks.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "phi_kernels/cpu/optimizer_loop.h"

namespace oar::phi {

namespace {
using namespace optimizer_loop;  // NOLINT(build/namespaces): for_each_param, MathOf, state

void check_lists(size_t n, const std::vector<double>& lrs, const std::vector<double>& wds,
                 const char* op) {
  OAR_ENFORCE(lrs.size() == n && wds.size() == n, InvalidArgument, op, ": got ", n,
              " parameters but ", lrs.size(), " learning rates and ", wds.size(),
              " weight decays");
}

}  // namespace

void sgd_update(const ParamList& params, const GradList& grads, const std::vector<double>& lrs,
                const std::vector<double>& wds) {
  check_lists(params.size(), lrs, wds, "sgd");
  for_each_param(params, grads, "sgd", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    const M lr = static_cast<M>(lrs[k]), wd = static_cast<M>(wds[k]);
    parallel_for(n, [=](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) {
        M pv = static_cast<M>(p[i]);
        p[i] = static_cast<T>(pv - lr * (static_cast<M>(g[i]) + wd * pv));
      }
    });
  });
}

void momentum_update(const ParamList& params, const GradList& grads, const ParamList& velocities,
                     const std::vector<double>& lrs, const std::vector<double>& wds, double mu,
                     bool nesterov) {
  check_lists(params.size(), lrs, wds, "momentum");
  for_each_param(params, grads, "momentum", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* v = state<M>(params[k], velocities[k], "momentum", "velocity");
    const M lr = static_cast<M>(lrs[k]), m = static_cast<M>(mu), wd = static_cast<M>(wds[k]);
    parallel_for(n, [=](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]) + wd * pv;
        M vv = m * static_cast<M>(v[i]) + gv;
        v[i] = vv;
        p[i] = static_cast<T>(pv - lr * (nesterov ? gv + m * vv : vv));
      }
    });
  });
}

void adam_update(const ParamList& params, const GradList& grads, const ParamList& moment1,
                 const ParamList& moment2, const std::vector<double>& lrs,
                 const std::vector<double>& wds, const AdamConfig& cfg) {
  check_lists(params.size(), lrs, wds, "adam");
  const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(cfg.step));
  const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(cfg.step));
  for_each_param(params, grads, "adam", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* m1 = state<M>(params[k], moment1[k], "adam", "moment1");
    M* m2 = state<M>(params[k], moment2[k], "adam", "moment2");
    const M b1 = static_cast<M>(cfg.beta1), b2 = static_cast<M>(cfg.beta2);
    // Paddle's form: lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); eps scaled accordingly.
    const M lr_t = static_cast<M>(lrs[k] * std::sqrt(bc2) / bc1);
    const M eps = static_cast<M>(cfg.epsilon * std::sqrt(bc2));
    const M wd = static_cast<M>(wds[k]);
    const M decay = static_cast<M>(1.0 - lrs[k] * wds[k]);
    const bool decoupled = cfg.decoupled;
    // By value: captured by reference, every scalar was reloaded after each store to p/m1/m2
    // (a float store may alias them), and the loop ran scalar on OpenMP's threads.
    parallel_for(n, [=](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]);
        if (decoupled) {
          pv *= decay;
        } else {
          gv += wd * pv;
        }
        M a = b1 * m1[i] + (M(1) - b1) * gv;
        M b = b2 * m2[i] + (M(1) - b2) * gv * gv;
        m1[i] = a;
        m2[i] = b;
        p[i] = static_cast<T>(pv - lr_t * a / (std::sqrt(b) + eps));
      }
    });
  });
}

void adamax_update(const ParamList& params, const GradList& grads, const ParamList& moment,
                   const ParamList& inf_norm, const std::vector<double>& lrs,
                   const std::vector<double>& wds, double beta1, double beta2, double epsilon,
                   int64_t step) {
  check_lists(params.size(), lrs, wds, "adamax");
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  for_each_param(params, grads, "adamax", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* m = state<M>(params[k], moment[k], "adamax", "moment");
    M* u = state<M>(params[k], inf_norm[k], "adamax", "inf_norm");
    const M b1 = static_cast<M>(beta1), b2 = static_cast<M>(beta2);
    const M eps = static_cast<M>(epsilon);
    const M lr_t = static_cast<M>(lrs[k] / bc1), wd = static_cast<M>(wds[k]);
    parallel_for(n, [=](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]) + wd * pv;
        M a = b1 * m[i] + (M(1) - b1) * gv;
        const M decayed = b2 * u[i] + eps, ag = std::fabs(gv);
        M b = decayed > ag ? decayed : ag;  // not std::fmax: a libm call per element
        m[i] = a;
        u[i] = b;
        p[i] = static_cast<T>(pv - lr_t * (a / b));
      }
    });
  });
}

void adagrad_update(const ParamList& params, const GradList& grads, const ParamList& moment,
                    const std::vector<double>& lrs, const std::vector<double>& wds, double epsilon) {
  check_lists(params.size(), lrs, wds, "adagrad");
  for_each_param(params, grads, "adagrad", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* a = state<M>(params[k], moment[k], "adagrad", "moment");
    const M lr = static_cast<M>(lrs[k]), wd = static_cast<M>(wds[k]);
    const M eps = static_cast<M>(epsilon);
    parallel_for(n, [=](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]) + wd * pv;
        M av = a[i] + gv * gv;
        a[i] = av;
        p[i] = static_cast<T>(pv - lr * (gv / (std::sqrt(av) + eps)));
      }
    });
  });
}

void adadelta_update(const ParamList& params, const GradList& grads, const ParamList& avg_sq_grad,
                     const ParamList& avg_sq_update, const std::vector<double>& lrs,
                     const std::vector<double>& wds, double rho, double epsilon) {
  check_lists(params.size(), lrs, wds, "adadelta");
  for_each_param(params, grads, "adadelta", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* eg = state<M>(params[k], avg_sq_grad[k], "adadelta", "avg_squared_grad");
    M* ex = state<M>(params[k], avg_sq_update[k], "adadelta", "avg_squared_update");
    const M r = static_cast<M>(rho), eps = static_cast<M>(epsilon);
    const M lr = static_cast<M>(lrs[k]), wd = static_cast<M>(wds[k]);
    parallel_for(n, [=](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]) + wd * pv;
        M egv = r * eg[i] + (M(1) - r) * gv * gv;
        M d = -std::sqrt((ex[i] + eps) / (egv + eps)) * gv;
        eg[i] = egv;
        ex[i] = r * ex[i] + (M(1) - r) * d * d;
        p[i] = static_cast<T>(pv + lr * d);
      }
    });
  });
}

void rmsprop_update(const ParamList& params, const GradList& grads, const ParamList& mean_square,
                    const ParamList& mean_grad, const ParamList& momentum,
                    const std::vector<double>& lrs, const std::vector<double>& wds, double rho,
                    double epsilon, double mu, bool centered) {
  check_lists(params.size(), lrs, wds, "rmsprop");
  OAR_ENFORCE(!centered || mean_grad.size() == params.size(), InvalidArgument,
              "rmsprop: centered needs one mean_grad tensor per parameter");
  for_each_param(params, grads, "rmsprop", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* ms = state<M>(params[k], mean_square[k], "rmsprop", "mean_square");
    M* mg = centered ? state<M>(params[k], mean_grad[k], "rmsprop", "mean_grad") : nullptr;
    M* mom = state<M>(params[k], momentum[k], "rmsprop", "momentum");
    const M r = static_cast<M>(rho), eps = static_cast<M>(epsilon);
    const M m = static_cast<M>(mu), lr = static_cast<M>(lrs[k]);
    const M wd = static_cast<M>(wds[k]);
    // Two loops so that each vectorizes (no branch on `centered` per element).
    parallel_for(n, [=](int64_t lo, int64_t hi) {
      if (centered) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          M gv = static_cast<M>(g[i]) + wd * pv;
          M msv = r * ms[i] + (M(1) - r) * gv * gv;
          M mgv = r * mg[i] + (M(1) - r) * gv;
          ms[i] = msv;
          mg[i] = mgv;
          M mv = m * mom[i] + lr * gv / std::sqrt(msv + eps - mgv * mgv);
          mom[i] = mv;
          p[i] = static_cast<T>(pv - mv);
        }
      } else {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          M gv = static_cast<M>(g[i]) + wd * pv;
          M msv = r * ms[i] + (M(1) - r) * gv * gv;
          ms[i] = msv;
          M mv = m * mom[i] + lr * gv / std::sqrt(msv + eps);
          mom[i] = mv;
          p[i] = static_cast<T>(pv - mv);
        }
      }
    });
  });
}

void lamb_update(const ParamList& params, const GradList& grads, const ParamList& moment1,
                 const ParamList& moment2, const std::vector<double>& lrs,
                 const std::vector<double>& wds, double beta1, double beta2, double epsilon,
                 int64_t step) {
  check_lists(params.size(), lrs, wds, "lamb");
  // Reciprocals of the bias corrections: multiplies instead of two divisions per element.
  const double inv_bc1 = 1.0 / (1.0 - std::pow(beta1, static_cast<double>(step)));
  const double inv_bc2 = 1.0 / (1.0 - std::pow(beta2, static_cast<double>(step)));
  for_each_param(params, grads, "lamb", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    M* m1 = state<M>(params[k], moment1[k], "lamb", "moment1");
    M* m2 = state<M>(params[k], moment2[k], "lamb", "moment2");
    const M b1 = static_cast<M>(beta1), b2 = static_cast<M>(beta2);
    const M eps = static_cast<M>(epsilon), wd = static_cast<M>(wds[k]);
    // Pass 1 (parallel): moments and the squared norms of p and of the raw update r. Each
    // chunk sums blocks of kBlock elements in the math type (vectorized), and the blocks in double.
    // r is not stored: pass 2 recomputes it from the updated moments (no scratch buffer).
    constexpr int64_t kBlock = 2048;
    std::vector<double> part(2 * static_cast<size_t>(omp_get_max_threads()) + 2, 0.0);
    const int64_t part_chunk = parallel_chunk(n);  // one slot per chunk: the same split every run
    parallel_for(n, [&](int64_t lo, int64_t hi) {
      // Locals, not captures: with captured pointers the compiler cannot prove that the
      // moment stores leave them unchanged and falls back to gathers and scatters.
      const T* __restrict pp = p;
      const T* __restrict gp = g;
      M* __restrict m1p = m1;
      M* __restrict m2p = m2;
      const M c1 = b1, c2 = b2, ib1 = static_cast<M>(inv_bc1), ib2 = static_cast<M>(inv_bc2), e = eps, w = wd;
      double ps = 0.0, rs = 0.0;
      for (int64_t blo = lo; blo < hi; blo += kBlock) {
        const int64_t bhi = std::min(hi, blo + kBlock);
        M bps = 0, brs = 0;
#pragma omp simd reduction(+ : bps, brs)
        for (int64_t i = blo; i < bhi; ++i) {
          M pv = static_cast<M>(pp[i]);
          M gv = static_cast<M>(gp[i]);
          M a = c1 * m1p[i] + (M(1) - c1) * gv;
          M b = c2 * m2p[i] + (M(1) - c2) * gv * gv;
          m1p[i] = a;
          m2p[i] = b;
          M rv = (a * ib1) / (std::sqrt(b * ib2) + e) + w * pv;
          bps += pv * pv;
          brs += rv * rv;
        }
        ps += bps;
        rs += brs;
      }
      const size_t t = static_cast<size_t>(lo / part_chunk);
      part[2 * t] += ps;
      part[2 * t + 1] += rs;
    });
    double p_sq = 0.0, r_sq = 0.0;
    for (size_t t = 0; t + 1 < part.size(); t += 2) {
      p_sq += part[t];
      r_sq += part[t + 1];
    }
    const double pn = std::sqrt(p_sq), rn = std::sqrt(r_sq);
    const double trust = (pn > 0.0 && rn > 0.0) ? pn / rn : 1.0;
    const M step_size = static_cast<M>(lrs[k] * trust);
    // Pass 2: apply.
    parallel_for(n, [&](int64_t lo, int64_t hi) {
      T* __restrict pp = p;
      const M* __restrict m1p = m1;
      const M* __restrict m2p = m2;
      const M ib1 = static_cast<M>(inv_bc1), ib2 = static_cast<M>(inv_bc2), e = eps, w = wd;
      const M st = step_size;
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(pp[i]);
        M rv = (m1p[i] * ib1) / (std::sqrt(m2p[i] * ib2) + e) + w * pv;
        pp[i] = static_cast<T>(pv - st * rv);
      }
    });
  });
}

// ---- the CPU's update kernels (UpdateKernel), one per rule
const std::vector<UpdateRule>& update_rules() {
  static const std::vector<UpdateRule> r = {{"sgd", 0, 0},     {"momentum", 1, 1}, {"adam", 2, 3},    {"adamax", 2, 3},
                                            {"adagrad", 1, 1}, {"adadelta", 2, 2}, {"rmsprop", 3, 3}, {"lamb", 2, 3},
                                            {"nadam", 3, 4},   {"radam", 2, 3},    {"rprop", 2, 4},   {"asgd", 2, 1}};
  return r;
}

namespace {
void sgd_kernel(const DeviceContext&, const UpdateArgs& a) { sgd_update(a.params, a.grads, a.lrs, a.wds); }
void momentum_kernel(const DeviceContext&, const UpdateArgs& a) {
  momentum_update(a.params, a.grads, a.states[0], a.lrs, a.wds, a.scalars[0], a.flag);
}
void adam_kernel(const DeviceContext&, const UpdateArgs& a) {
  const AdamConfig cfg{0.0, a.scalars[0], a.scalars[1], a.scalars[2], 0.0, a.flag, a.step};
  adam_update(a.params, a.grads, a.states[0], a.states[1], a.lrs, a.wds, cfg);
}
void adamax_kernel(const DeviceContext&, const UpdateArgs& a) {
  adamax_update(a.params, a.grads, a.states[0], a.states[1], a.lrs, a.wds, a.scalars[0], a.scalars[1], a.scalars[2],
                a.step);
}
void adagrad_kernel(const DeviceContext&, const UpdateArgs& a) {
  adagrad_update(a.params, a.grads, a.states[0], a.lrs, a.wds, a.scalars[0]);
}
void adadelta_kernel(const DeviceContext&, const UpdateArgs& a) {
  adadelta_update(a.params, a.grads, a.states[0], a.states[1], a.lrs, a.wds, a.scalars[0], a.scalars[1]);
}
void rmsprop_kernel(const DeviceContext&, const UpdateArgs& a) {
  rmsprop_update(a.params, a.grads, a.states[0], a.states[1], a.states[2], a.lrs, a.wds, a.scalars[0], a.scalars[1],
                 a.scalars[2], a.flag);
}
void lamb_kernel(const DeviceContext&, const UpdateArgs& a) {
  lamb_update(a.params, a.grads, a.states[0], a.states[1], a.lrs, a.wds, a.scalars[0], a.scalars[1], a.scalars[2],
              a.step);
}

const bool registered = register_update_kernels({{"sgd_update", sgd_kernel},
                                                 {"momentum_update", momentum_kernel},
                                                 {"adam_update", adam_kernel},
                                                 {"adamax_update", adamax_kernel},
                                                 {"adagrad_update", adagrad_kernel},
                                                 {"adadelta_update", adadelta_kernel},
                                                 {"rmsprop_update", rmsprop_kernel},
                                                 {"lamb_update", lamb_kernel}});
}  // namespace

}  // namespace oar::phi
