// Fused optimizer updates over many parameters at once (one call per step, one
// pass over each parameter's memory), used by oar.optimizer. Every rule takes a
// learning rate and an L2 coefficient per parameter (parameter groups, ParamAttr
// learning rates and regularizers); optimizer state has the parameter's shape, in its math type (float32 for
// float32 and 16-bit parameters, float64 for float64 ones: Paddle's accumulator dtypes).
#pragma once

#include <vector>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/dense_tensor.h"

namespace oar::phi {

using ParamList = std::vector<DenseTensor*>;
using GradList = std::vector<const DenseTensor*>;

struct AdamConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weight_decay = 0.0;
  bool decoupled = false;  // AdamW: decay the weights directly instead of adding to the grad
  int64_t step = 1;        // 1-based step, for bias correction
};

/// p -= lr * (g + wd * p) for each parameter (float32/float64/16-bit floats).
void sgd_update(const ParamList& params, const GradList& grads, const std::vector<double>& lrs,
                const std::vector<double>& wds);
/// Momentum SGD (Paddle's rule: v = mu * v + g; p -= lr * (nesterov ? g + mu * v : v)).
void momentum_update(const ParamList& params, const GradList& grads, const ParamList& velocities,
                     const std::vector<double>& lrs, const std::vector<double>& wds, double mu,
                     bool nesterov);
/// Adam / AdamW; cfg.weight_decay is unused (wds holds the per-parameter coefficient).
void adam_update(const ParamList& params, const GradList& grads, const ParamList& moment1,
                 const ParamList& moment2, const std::vector<double>& lrs,
                 const std::vector<double>& wds, const AdamConfig& cfg);
/// Adamax: m = b1 m + (1-b1) g; u = max(b2 u + eps, |g|); p -= lr / (1 - b1^t) * m / u.
void adamax_update(const ParamList& params, const GradList& grads, const ParamList& moment,
                   const ParamList& inf_norm, const std::vector<double>& lrs,
                   const std::vector<double>& wds, double beta1, double beta2, double epsilon,
                   int64_t step);
/// Adagrad: a += g^2; p -= lr * g / (sqrt(a) + eps).
void adagrad_update(const ParamList& params, const GradList& grads, const ParamList& moment,
                    const std::vector<double>& lrs, const std::vector<double>& wds, double epsilon);
/// Adadelta: Eg = rho Eg + (1-rho) g^2; d = -sqrt((Edx + eps) / (Eg + eps)) g;
/// Edx = rho Edx + (1-rho) d^2; p += lr * d.
void adadelta_update(const ParamList& params, const GradList& grads, const ParamList& avg_sq_grad,
                     const ParamList& avg_sq_update, const std::vector<double>& lrs,
                     const std::vector<double>& wds, double rho, double epsilon);
/// RMSProp: ms = rho ms + (1-rho) g^2; [mg = rho mg + (1-rho) g];
/// mom = mu mom + lr g / sqrt(ms [- mg^2] + eps); p -= mom. mean_grad may be empty.
void rmsprop_update(const ParamList& params, const GradList& grads, const ParamList& mean_square,
                    const ParamList& mean_grad, const ParamList& momentum,
                    const std::vector<double>& lrs, const std::vector<double>& wds, double rho,
                    double epsilon, double mu, bool centered);
/// Lamb: Adam moments with bias correction, r = m_hat / (sqrt(v_hat) + eps) + wd p,
/// p -= lr * (||p|| / ||r||) * r (trust ratio 1 when either norm is 0). wds is Lamb's decay.
void lamb_update(const ParamList& params, const GradList& grads, const ParamList& moment1,
                 const ParamList& moment2, const std::vector<double>& lrs,
                 const std::vector<double>& wds, double beta1, double beta2, double epsilon,
                 int64_t step);

/// The arguments of every fused update, so one kernel signature serves all rules: the
/// rule's state lists in its order (adam: moment1, moment2; rmsprop: mean_square,
/// mean_grad (empty unless centered), momentum), its scalars in its order (adam: beta1,
/// beta2, epsilon), its bool (momentum: nesterov; adam: decoupled; rmsprop: centered)
/// and its step. Written tensors: params and states.
struct UpdateArgs {
  ParamList params;
  GradList grads;
  std::vector<ParamList> states;
  std::vector<double> lrs, wds, scalars;
  bool flag = false;
  int64_t step = 0;
};

/// NAdam, RAdam, Rprop, ASGD (optimizer_kernels_more.cc, where their formulas are); each
/// computes what depends on the step from args.step. Scalars: nadam beta1, beta2, epsilon,
/// momentum_decay (states moment1, moment2, mu_product); radam beta1, beta2, epsilon
/// (moment1, moment2); rprop eta_negative, eta_positive, the step size's low and high bounds
/// (prev_grad, step_size); asgd batch_num (d, and y: batch_num values per element).
void nadam_update(const UpdateArgs& args);
void radam_update(const UpdateArgs& args);
void rprop_update(const UpdateArgs& args);
void asgd_update(const UpdateArgs& args);

/// A fused update kernel, registered in the KernelRegistry as "<rule>_update" per
/// (device type, dtype of the first parameter): the CPU's run the functions above; a
/// device registers its own (api::fused_update dispatches, Note [Devices]).
using UpdateKernel = void (*)(const DeviceContext& ctx, const UpdateArgs& args);

/// The rules with an update kernel: "sgd", "momentum", "adam", "adamax", "adagrad",
/// "adadelta", "rmsprop", "lamb", "nadam", "radam", "rprop", "asgd"; with the number of state lists and scalars each
/// takes.
struct UpdateRule {
  const char* name;
  size_t num_states;
  size_t num_scalars;
};
const std::vector<UpdateRule>& update_rules();

}  // namespace oar::phi
