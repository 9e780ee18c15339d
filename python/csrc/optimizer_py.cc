// Bindings of the fused multi-tensor optimizer updates (oar._C._sgd_update, ...).
#include "phi_kernels/funcs/optimizer_update.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

namespace {
std::vector<DenseTensor*> mut(const std::vector<std::shared_ptr<TensorImpl>>& ts) {
  std::vector<DenseTensor*> out;
  for (const auto& t : ts) {
    out.push_back(&t->dense);
    Tensor(t).bump_version();
  }
  return out;
}
std::vector<const DenseTensor*> cst(const std::vector<std::shared_ptr<TensorImpl>>& ts) {
  std::vector<const DenseTensor*> out;
  for (const auto& t : ts) out.push_back(&t->dense);
  return out;
}
void same_len(size_t a, size_t b, const char* op) {
  OAR_ENFORCE(a == b, InvalidArgument, op, ": got ", a, " parameters but ", b, " other tensors");
}
}  // namespace

void bind_optimizer(py::module_& m) {
  using TL = std::vector<std::shared_ptr<TensorImpl>>;
  m.def("_sgd_update", [](const TL& params, const TL& grads, const std::vector<double>& lrs,
                          double wd) {
    same_len(params.size(), grads.size(), "sgd");
    same_len(params.size(), lrs.size(), "sgd");
    phi::sgd_update(mut(params), cst(grads), lrs, wd);
  });
  m.def("_momentum_update", [](const TL& params, const TL& grads, const TL& vel,
                               const std::vector<double>& lrs, double mu, bool nesterov, double wd) {
    same_len(params.size(), grads.size(), "momentum");
    same_len(params.size(), vel.size(), "momentum");
    phi::momentum_update(mut(params), cst(grads), mut(vel), lrs, mu, nesterov, wd);
  });
  m.def("_adam_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2,
                           const std::vector<double>& lrs, double beta1, double beta2, double eps,
                           double wd, bool decoupled, int64_t step) {
    same_len(params.size(), grads.size(), "adam");
    same_len(params.size(), m1.size(), "adam");
    same_len(params.size(), m2.size(), "adam");
    phi::AdamConfig cfg{0.0, beta1, beta2, eps, wd, decoupled, step};
    phi::adam_update(mut(params), cst(grads), mut(m1), mut(m2), lrs, cfg);
  });
}

}  // namespace oar::python
