// Fused multi-tensor optimizer updates (see phi_kernels/funcs/optimizer_update.h).
#include <cmath>

#include "phi_kernels/funcs/optimizer_update.h"
#include "phi_kernels/include/elementwise.h"

namespace oar::phi {

namespace {
void check(const DenseTensor* p, const DenseTensor* g, const char* op) {
  OAR_ENFORCE(p->dims() == g->dims(), InvalidArgument, op, ": gradient shape ", g->dims(),
              " does not match parameter shape ", p->dims());
  OAR_ENFORCE(p->is_contiguous() && g->is_contiguous(), InvalidArgument, op,
              ": parameters and gradients must be contiguous");
  OAR_ENFORCE(is_floating(p->dtype()), InvalidType, op, ": parameter dtype ",
              dtype_name(p->dtype()), " is not a float type");
}

// Runs fn over [0, n) in parallel chunks when large enough.
template <typename Fn>
void parallel_range(int64_t n, Fn fn) {
  parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) fn(i);
  });
}
}  // namespace

void sgd_update(const std::vector<DenseTensor*>& params, const std::vector<const DenseTensor*>& grads,
                const std::vector<double>& lrs, double weight_decay) {
  for (size_t k = 0; k < params.size(); ++k) {
    check(params[k], grads[k], "sgd");
    OAR_ENFORCE(grads[k]->dtype() == params[k]->dtype(), InvalidType,
                "sgd: gradient dtype differs from parameter dtype");
    visit_dtype(params[k]->dtype(), "sgd", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<OpMath<T>> && !std::is_same_v<T, bool>) {
        using M = OpMath<T>;
        T* p = params[k]->data<T>();
        const T* g = grads[k]->data<T>();
        const M lr = static_cast<M>(lrs[k]), wd = static_cast<M>(weight_decay);
        const int64_t n = params[k]->numel();
        parallel_for(n, [&](int64_t b, int64_t e) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            M pv = static_cast<M>(p[i]);
            p[i] = static_cast<T>(pv - lr * (static_cast<M>(g[i]) + wd * pv));
          }
        });
      }
    });
  }
}

void momentum_update(const std::vector<DenseTensor*>& params,
                     const std::vector<const DenseTensor*>& grads,
                     const std::vector<DenseTensor*>& velocities, const std::vector<double>& lrs,
                     double mu, bool nesterov, double weight_decay) {
  for (size_t k = 0; k < params.size(); ++k) {
    check(params[k], grads[k], "momentum");
    visit_dtype(params[k]->dtype(), "momentum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<OpMath<T>> && !std::is_same_v<T, bool>) {
        using M = OpMath<T>;
        T* p = params[k]->data<T>();
        const T* g = grads[k]->data<T>();
        float* v = velocities[k]->data<float>();
        const M lr = static_cast<M>(lrs[k]), m = static_cast<M>(mu), wd = static_cast<M>(weight_decay);
        parallel_range(params[k]->numel(), [&](int64_t i) {
          M pv = static_cast<M>(p[i]);
          M gv = static_cast<M>(g[i]) + wd * pv;
          M vv = m * static_cast<M>(v[i]) + gv;
          v[i] = static_cast<float>(vv);
          p[i] = static_cast<T>(pv - lr * (nesterov ? gv + m * vv : vv));
        });
      }
    });
  }
}

void adam_update(const std::vector<DenseTensor*>& params, const std::vector<const DenseTensor*>& grads,
                 const std::vector<DenseTensor*>& moment1, const std::vector<DenseTensor*>& moment2,
                 const std::vector<double>& lrs, const AdamConfig& cfg) {
  const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(cfg.step));
  const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(cfg.step));
  for (size_t k = 0; k < params.size(); ++k) {
    check(params[k], grads[k], "adam");
    OAR_ENFORCE(moment1[k]->dtype() == DataType::FLOAT32 && moment2[k]->dtype() == DataType::FLOAT32,
                InvalidType, "adam: moments must be float32");
    visit_dtype(params[k]->dtype(), "adam", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<OpMath<T>> && !std::is_same_v<T, bool>) {
        using M = OpMath<T>;
        T* p = params[k]->data<T>();
        const T* g = grads[k]->data<T>();
        float* m1 = moment1[k]->data<float>();
        float* m2 = moment2[k]->data<float>();
        const float b1 = static_cast<float>(cfg.beta1), b2 = static_cast<float>(cfg.beta2);
        // Paddle's form: lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); eps scaled accordingly.
        const M lr_t = static_cast<M>(lrs[k] * std::sqrt(bc2) / bc1);
        const M eps = static_cast<M>(cfg.epsilon * std::sqrt(bc2));
        const M wd = static_cast<M>(cfg.weight_decay);
        const M decay = static_cast<M>(1.0 - lrs[k] * cfg.weight_decay);
        const bool decoupled = cfg.decoupled;
        const int64_t n = params[k]->numel();
        parallel_for(n, [&](int64_t lo, int64_t hi) {
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
      }
    });
  }
}

}  // namespace oar::phi
