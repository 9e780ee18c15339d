// Bindings of the fused multi-tensor optimizer updates (oar._C._sgd_update, ...).
// Each takes lists of parameters, gradients and state tensors plus per-parameter
// learning rates and L2 coefficients; it bumps the version of every tensor it writes.
#include <deque>
#include <utility>

#include "phi_kernels/funcs/optimizer_update.h"
#include "python/csrc/py_convert.h"

namespace oar::python {

namespace {
using TL = std::vector<std::shared_ptr<TensorImpl>>;
using DL = std::vector<double>;

// The updates are CPU code. Tensors on a device go through host copies (the device
// fallback, Note [Devices]): staged in before the update, the written ones copied back
// after it (commit). CPU tensors are passed through untouched, at no cost.
class Staging {
 public:
  DenseTensor* in(DenseTensor* d, bool written) {
    if (d->place().is_cpu()) return d;
    DenseTensor& h = host_.emplace_back(d->dims(), d->dtype(), CPUPlace());
    h.alloc();
    copy_into(*d, &h);
    if (written) back_.emplace_back(&h, d);
    return &h;
  }
  void commit() {
    for (auto& [h, d] : back_) copy_into(*h, d);
  }

 private:
  std::deque<DenseTensor> host_;  // stable addresses
  std::vector<std::pair<DenseTensor*, DenseTensor*>> back_;
};

std::vector<DenseTensor*> mut(Staging& st, const TL& ts, size_t n, const char* op, const char* what) {
  OAR_ENFORCE(ts.size() == n, InvalidArgument, op, ": got ", n, " parameters but ", ts.size(),
              " ", what);
  std::vector<DenseTensor*> out;
  for (const auto& t : ts) {
    out.push_back(st.in(&t->dense, true));
    Tensor(t).bump_version();
  }
  return out;
}
std::vector<const DenseTensor*> cst(Staging& st, const TL& ts, size_t n, const char* op) {
  OAR_ENFORCE(ts.size() == n, InvalidArgument, op, ": got ", n, " parameters but ", ts.size(),
              " gradients");
  std::vector<const DenseTensor*> out;
  for (const auto& t : ts) out.push_back(st.in(&t->dense, false));
  return out;
}
}  // namespace

void bind_optimizer(py::module_& m) {
  m.def("_sgd_update", [](const TL& params, const TL& grads, const DL& lrs, const DL& wds) {
    const size_t n = params.size();
    Staging st;
    phi::sgd_update(mut(st, params, n, "sgd", "parameters"), cst(st, grads, n, "sgd"), lrs, wds);
    st.commit();
  });
  m.def("_momentum_update", [](const TL& params, const TL& grads, const TL& vel, const DL& lrs,
                               const DL& wds, double mu, bool nesterov) {
    const size_t n = params.size();
    Staging st;
    phi::momentum_update(mut(st, params, n, "momentum", "parameters"), cst(st, grads, n, "momentum"),
                         mut(st, vel, n, "momentum", "velocities"), lrs, wds, mu, nesterov);
    st.commit();
  });
  m.def("_adam_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2,
                           const DL& lrs, const DL& wds, double beta1, double beta2, double eps,
                           bool decoupled, int64_t step) {
    const size_t n = params.size();
    Staging st;
    phi::AdamConfig cfg{0.0, beta1, beta2, eps, 0.0, decoupled, step};
    phi::adam_update(mut(st, params, n, "adam", "parameters"), cst(st, grads, n, "adam"),
                     mut(st, m1, n, "adam", "moment1"), mut(st, m2, n, "adam", "moment2"), lrs, wds, cfg);
    st.commit();
  });
  m.def("_adamax_update", [](const TL& params, const TL& grads, const TL& mom, const TL& inf,
                             const DL& lrs, const DL& wds, double beta1, double beta2, double eps,
                             int64_t step) {
    const size_t n = params.size();
    Staging st;
    phi::adamax_update(mut(st, params, n, "adamax", "parameters"), cst(st, grads, n, "adamax"),
                       mut(st, mom, n, "adamax", "moments"), mut(st, inf, n, "adamax", "inf norms"), lrs, wds, beta1,
                       beta2, eps, step);
    st.commit();
  });
  m.def("_adagrad_update", [](const TL& params, const TL& grads, const TL& mom, const DL& lrs,
                              const DL& wds, double eps) {
    const size_t n = params.size();
    Staging st;
    phi::adagrad_update(mut(st, params, n, "adagrad", "parameters"), cst(st, grads, n, "adagrad"),
                        mut(st, mom, n, "adagrad", "moments"), lrs, wds, eps);
    st.commit();
  });
  m.def("_adadelta_update", [](const TL& params, const TL& grads, const TL& eg, const TL& ex,
                               const DL& lrs, const DL& wds, double rho, double eps) {
    const size_t n = params.size();
    Staging st;
    phi::adadelta_update(mut(st, params, n, "adadelta", "parameters"), cst(st, grads, n, "adadelta"),
                         mut(st, eg, n, "adadelta", "avg_squared_grad"),
                         mut(st, ex, n, "adadelta", "avg_squared_update"), lrs, wds, rho, eps);
    st.commit();
  });
  m.def("_rmsprop_update", [](const TL& params, const TL& grads, const TL& ms, const TL& mg,
                              const TL& mom, const DL& lrs, const DL& wds, double rho, double eps,
                              double mu, bool centered) {
    const size_t n = params.size();
    Staging st;
    phi::rmsprop_update(mut(st, params, n, "rmsprop", "parameters"), cst(st, grads, n, "rmsprop"),
                        mut(st, ms, n, "rmsprop", "mean_square"),
                        centered ? mut(st, mg, n, "rmsprop", "mean_grad") : std::vector<DenseTensor*>{},
                        mut(st, mom, n, "rmsprop", "momentum"), lrs, wds, rho, eps, mu, centered);
    st.commit();
  });
  m.def("_lamb_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2,
                           const DL& lrs, const DL& wds, double beta1, double beta2, double eps,
                           int64_t step) {
    const size_t n = params.size();
    Staging st;
    phi::lamb_update(mut(st, params, n, "lamb", "parameters"), cst(st, grads, n, "lamb"),
                     mut(st, m1, n, "lamb", "moment1"), mut(st, m2, n, "lamb", "moment2"), lrs, wds, beta1, beta2, eps,
                     step);
    st.commit();
  });
}

}  // namespace oar::python
