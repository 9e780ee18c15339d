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
using namespace optimizer_loop;  // NOLINT(build/namespaces): check, for_each_param, MathOf

void check_state(const DenseTensor* p, const DenseTensor* s, const char* op) {
  OAR_ENFORCE(s->dtype() == DataType::FLOAT32 && s->is_contiguous() && s->numel() == p->numel(),
              InvalidArgument, op, ": optimizer state must be contiguous float32 with ",
              p->numel(), " elements, got ", dtype_name(s->dtype()), " with ", s->numel());
}

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
    parallel_for(n, [&](int64_t b, int64_t e) {
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
    check_state(params[k], velocities[k], "momentum");
    float* v = velocities[k]->data<float>();
    const M lr = static_cast<M>(lrs[k]), m = static_cast<M>(mu), wd = static_cast<M>(wds[k]);
    parallel_for(n, [&](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) {
        M pv = static_cast<M>(p[i]);
        M gv = static_cast<M>(g[i]) + wd * pv;
        M vv = m * static_cast<M>(v[i]) + gv;
        v[i] = static_cast<float>(vv);
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
    check_state(params[k], moment1[k], "adam");
    check_state(params[k], moment2[k], "adam");
    float* m1 = moment1[k]->data<float>();
    float* m2 = moment2[k]->data<float>();
    const float b1 = static_cast<float>(cfg.beta1), b2 = static_cast<float>(cfg.beta2);
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
        float a = b1 * m1[i] + (1.0f - b1) * static_cast<float>(gv);
        float b = b2 * m2[i] + (1.0f - b2) * static_cast<float>(gv) * static_cast<float>(gv);
        m1[i] = a;
        m2[i] = b;
        p[i] = static_cast<T>(pv - lr_t * static_cast<M>(a) / (std::sqrt(static_cast<M>(b)) + eps));
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
    check_state(params[k], moment[k], "adamax");
    check_state(params[k], inf_norm[k], "adamax");
    float* m = moment[k]->data<float>();
    float* u = inf_norm[k]->data<float>();
    const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
    const float eps = static_cast<float>(epsilon);
    const M lr_t = static_cast<M>(lrs[k] / bc1), wd = static_cast<M>(wds[k]);
    parallel_for(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
        float a = b1 * m[i] + (1.0f - b1) * gv;
        const float decayed = b2 * u[i] + eps, ag = std::fabs(gv);
        float b = decayed > ag ? decayed : ag;  // not std::fmax: a libm call per element
        m[i] = a;
        u[i] = b;
        p[i] = static_cast<T>(pv - lr_t * static_cast<M>(a / b));
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
    check_state(params[k], moment[k], "adagrad");
    float* a = moment[k]->data<float>();
    const M lr = static_cast<M>(lrs[k]), wd = static_cast<M>(wds[k]);
    const float eps = static_cast<float>(epsilon);
    parallel_for(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
        float av = a[i] + gv * gv;
        a[i] = av;
        p[i] = static_cast<T>(pv - lr * static_cast<M>(gv / (std::sqrt(av) + eps)));
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
    check_state(params[k], avg_sq_grad[k], "adadelta");
    check_state(params[k], avg_sq_update[k], "adadelta");
    float* eg = avg_sq_grad[k]->data<float>();
    float* ex = avg_sq_update[k]->data<float>();
    const float r = static_cast<float>(rho), eps = static_cast<float>(epsilon);
    const M lr = static_cast<M>(lrs[k]), wd = static_cast<M>(wds[k]);
    parallel_for(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        M pv = static_cast<M>(p[i]);
        float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
        float egv = r * eg[i] + (1.0f - r) * gv * gv;
        float d = -std::sqrt((ex[i] + eps) / (egv + eps)) * gv;
        eg[i] = egv;
        ex[i] = r * ex[i] + (1.0f - r) * d * d;
        p[i] = static_cast<T>(pv + lr * static_cast<M>(d));
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
    check_state(params[k], mean_square[k], "rmsprop");
    check_state(params[k], momentum[k], "rmsprop");
    if (centered) check_state(params[k], mean_grad[k], "rmsprop");
    float* ms = mean_square[k]->data<float>();
    float* mg = centered ? mean_grad[k]->data<float>() : nullptr;
    float* mom = momentum[k]->data<float>();
    const float r = static_cast<float>(rho), eps = static_cast<float>(epsilon);
    const float m = static_cast<float>(mu), lr = static_cast<float>(lrs[k]);
    const M wd = static_cast<M>(wds[k]);
    // Two loops so that each vectorizes (no branch on `centered` per element).
    parallel_for(n, [&](int64_t lo, int64_t hi) {
      if (centered) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
          float msv = r * ms[i] + (1.0f - r) * gv * gv;
          float mgv = r * mg[i] + (1.0f - r) * gv;
          ms[i] = msv;
          mg[i] = mgv;
          float mv = m * mom[i] + lr * gv / std::sqrt(msv + eps - mgv * mgv);
          mom[i] = mv;
          p[i] = static_cast<T>(pv - static_cast<M>(mv));
        }
      } else {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) {
          M pv = static_cast<M>(p[i]);
          float gv = static_cast<float>(static_cast<M>(g[i]) + wd * pv);
          float msv = r * ms[i] + (1.0f - r) * gv * gv;
          ms[i] = msv;
          float mv = m * mom[i] + lr * gv / std::sqrt(msv + eps);
          mom[i] = mv;
          p[i] = static_cast<T>(pv - static_cast<M>(mv));
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
  const float inv_bc1 = static_cast<float>(1.0 / (1.0 - std::pow(beta1, static_cast<double>(step))));
  const float inv_bc2 = static_cast<float>(1.0 / (1.0 - std::pow(beta2, static_cast<double>(step))));
  for_each_param(params, grads, "lamb", [&](size_t k, auto* p, const auto* g, int64_t n) {
    using M = MathOf<decltype(p)>;
    using T = ElemOf<decltype(p)>;
    check_state(params[k], moment1[k], "lamb");
    check_state(params[k], moment2[k], "lamb");
    float* m1 = moment1[k]->data<float>();
    float* m2 = moment2[k]->data<float>();
    const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
    const float eps = static_cast<float>(epsilon), wd = static_cast<float>(wds[k]);
    // Pass 1 (parallel): moments and the squared norms of p and of the raw update r. Each
    // chunk sums blocks of kBlock elements in float (vectorized), and the blocks in double.
    // r is not stored: pass 2 recomputes it from the updated moments (no scratch buffer).
    constexpr int64_t kBlock = 2048;
    std::vector<double> part(2 * static_cast<size_t>(omp_get_max_threads()) + 2, 0.0);
    parallel_for(n, [&](int64_t lo, int64_t hi) {
      // Locals, not captures: with captured pointers the compiler cannot prove that the
      // moment stores leave them unchanged and falls back to gathers and scatters.
      const T* __restrict pp = p;
      const T* __restrict gp = g;
      float* __restrict m1p = m1;
      float* __restrict m2p = m2;
      const float c1 = b1, c2 = b2, ib1 = inv_bc1, ib2 = inv_bc2, e = eps, w = wd;
      double ps = 0.0, rs = 0.0;
      for (int64_t blo = lo; blo < hi; blo += kBlock) {
        const int64_t bhi = std::min(hi, blo + kBlock);
        float bps = 0.0f, brs = 0.0f;
#pragma omp simd reduction(+ : bps, brs)
        for (int64_t i = blo; i < bhi; ++i) {
          float pv = static_cast<float>(static_cast<M>(pp[i]));
          float gv = static_cast<float>(static_cast<M>(gp[i]));
          float a = c1 * m1p[i] + (1.0f - c1) * gv;
          float b = c2 * m2p[i] + (1.0f - c2) * gv * gv;
          m1p[i] = a;
          m2p[i] = b;
          float rv = (a * ib1) / (std::sqrt(b * ib2) + e) + w * pv;
          bps += pv * pv;
          brs += rv * rv;
        }
        ps += bps;
        rs += brs;
      }
      const size_t t = omp_in_parallel() ? static_cast<size_t>(omp_get_thread_num()) : 0;
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
      const float* __restrict m1p = m1;
      const float* __restrict m2p = m2;
      const float ib1 = inv_bc1, ib2 = inv_bc2, e = eps, w = wd;
      const M st = step_size;
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        float pv = static_cast<float>(static_cast<M>(pp[i]));
        float rv = (m1p[i] * ib1) / (std::sqrt(m2p[i] * ib2) + e) + w * pv;
        pp[i] = static_cast<T>(static_cast<M>(pp[i]) - st * static_cast<M>(rv));
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
