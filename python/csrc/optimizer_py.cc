// Bindings of the fused multi-tensor optimizer updates (oar._C._sgd_update, ...).
// Each takes lists of parameters, gradients and state tensors plus per-parameter
// learning rates and L2 coefficients; it bumps the version of every tensor it writes.
#include "phi_kernels/funcs/optimizer_update.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

namespace {
using TL = std::vector<std::shared_ptr<TensorImpl>>;
using DL = std::vector<double>;

std::vector<DenseTensor*> mut(const TL& ts, size_t n, const char* op, const char* what) {
  OAR_ENFORCE(ts.size() == n, InvalidArgument, op, ": got ", n, " parameters but ", ts.size(),
              " ", what);
  std::vector<DenseTensor*> out;
  for (const auto& t : ts) {
    out.push_back(&t->dense);
    Tensor(t).bump_version();
  }
  return out;
}
std::vector<const DenseTensor*> cst(const TL& ts, size_t n, const char* op) {
  OAR_ENFORCE(ts.size() == n, InvalidArgument, op, ": got ", n, " parameters but ", ts.size(),
              " gradients");
  std::vector<const DenseTensor*> out;
  for (const auto& t : ts) out.push_back(&t->dense);
  return out;
}
}  // namespace

void bind_optimizer(py::module_& m) {
  m.def("_sgd_update", [](const TL& params, const TL& grads, const DL& lrs, const DL& wds) {
    const size_t n = params.size();
    phi::sgd_update(mut(params, n, "sgd", "parameters"), cst(grads, n, "sgd"), lrs, wds);
  });
  m.def("_momentum_update", [](const TL& params, const TL& grads, const TL& vel, const DL& lrs,
                               const DL& wds, double mu, bool nesterov) {
    const size_t n = params.size();
    phi::momentum_update(mut(params, n, "momentum", "parameters"), cst(grads, n, "momentum"),
                         mut(vel, n, "momentum", "velocities"), lrs, wds, mu, nesterov);
  });
  m.def("_adam_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2,
                           const DL& lrs, const DL& wds, double beta1, double beta2, double eps,
                           bool decoupled, int64_t step) {
    const size_t n = params.size();
    phi::AdamConfig cfg{0.0, beta1, beta2, eps, 0.0, decoupled, step};
    phi::adam_update(mut(params, n, "adam", "parameters"), cst(grads, n, "adam"),
                     mut(m1, n, "adam", "moment1"), mut(m2, n, "adam", "moment2"), lrs, wds, cfg);
  });
  m.def("_adamax_update", [](const TL& params, const TL& grads, const TL& mom, const TL& inf,
                             const DL& lrs, const DL& wds, double beta1, double beta2, double eps,
                             int64_t step) {
    const size_t n = params.size();
    phi::adamax_update(mut(params, n, "adamax", "parameters"), cst(grads, n, "adamax"),
                       mut(mom, n, "adamax", "moments"), mut(inf, n, "adamax", "inf norms"), lrs,
                       wds, beta1, beta2, eps, step);
  });
  m.def("_adagrad_update", [](const TL& params, const TL& grads, const TL& mom, const DL& lrs,
                              const DL& wds, double eps) {
    const size_t n = params.size();
    phi::adagrad_update(mut(params, n, "adagrad", "parameters"), cst(grads, n, "adagrad"),
                        mut(mom, n, "adagrad", "moments"), lrs, wds, eps);
  });
  m.def("_adadelta_update", [](const TL& params, const TL& grads, const TL& eg, const TL& ex,
                               const DL& lrs, const DL& wds, double rho, double eps) {
    const size_t n = params.size();
    phi::adadelta_update(mut(params, n, "adadelta", "parameters"), cst(grads, n, "adadelta"),
                         mut(eg, n, "adadelta", "avg_squared_grad"),
                         mut(ex, n, "adadelta", "avg_squared_update"), lrs, wds, rho, eps);
  });
  m.def("_rmsprop_update", [](const TL& params, const TL& grads, const TL& ms, const TL& mg,
                              const TL& mom, const DL& lrs, const DL& wds, double rho, double eps,
                              double mu, bool centered) {
    const size_t n = params.size();
    phi::rmsprop_update(mut(params, n, "rmsprop", "parameters"), cst(grads, n, "rmsprop"),
                        mut(ms, n, "rmsprop", "mean_square"),
                        centered ? mut(mg, n, "rmsprop", "mean_grad") : std::vector<DenseTensor*>{},
                        mut(mom, n, "rmsprop", "momentum"), lrs, wds, rho, eps, mu, centered);
  });
  m.def("_lamb_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2,
                           const DL& lrs, const DL& wds, double beta1, double beta2, double eps,
                           int64_t step) {
    const size_t n = params.size();
    phi::lamb_update(mut(params, n, "lamb", "parameters"), cst(grads, n, "lamb"),
                     mut(m1, n, "lamb", "moment1"), mut(m2, n, "lamb", "moment2"), lrs, wds,
                     beta1, beta2, eps, step);
  });
}

}  // namespace oar::python
