// Fused optimizer updates over many parameters at once (one call per step, one
// pass over each parameter's memory), used by oar.optimizer.
#pragma once

#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::phi {

struct AdamConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weight_decay = 0.0;
  bool decoupled = false;  // AdamW: decay the weights directly instead of adding to the grad
  int64_t step = 1;        // 1-based step, for bias correction
};

/// p -= lr * (g + wd * p) for each parameter (float32/float64/16-bit floats).
void sgd_update(const std::vector<DenseTensor*>& params, const std::vector<const DenseTensor*>& grads,
                const std::vector<double>& lrs, double weight_decay);
/// Momentum SGD (Paddle's rule: v = mu * v + g; p -= lr * (nesterov ? g + mu * v : v)).
void momentum_update(const std::vector<DenseTensor*>& params,
                     const std::vector<const DenseTensor*>& grads,
                     const std::vector<DenseTensor*>& velocities, const std::vector<double>& lrs,
                     double mu, bool nesterov, double weight_decay);
/// Adam / AdamW with float32 moments.
void adam_update(const std::vector<DenseTensor*>& params, const std::vector<const DenseTensor*>& grads,
                 const std::vector<DenseTensor*>& moment1, const std::vector<DenseTensor*>& moment2,
                 const std::vector<double>& lrs, const AdamConfig& cfg);

}  // namespace oar::phi
