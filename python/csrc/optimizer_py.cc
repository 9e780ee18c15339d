// Bindings of the fused multi-tensor optimizer updates (oar._C._sgd_update, ...).
// Each takes lists of parameters, gradients and state tensors plus per-parameter
// learning rates and L2 coefficients; it bumps the version of every tensor it writes.
// The update runs where the parameters are (api::fused_update: the device's update
// kernel, else the CPU's on host copies with the fallback's warning).
#include <utility>

#include "paddle_core/api/fused_update.h"
#include "paddle_core/dispatch/trace.h"
#include "python/csrc/py_convert.h"
#include "python/csrc/update_recorder.h"

namespace oar::python {

namespace {
UpdateRecorder g_update_recorder = nullptr;
}  // namespace

void set_update_recorder(UpdateRecorder r) { g_update_recorder = r; }

namespace {
using TL = TensorList;
using DL = std::vector<double>;

phi::ParamList mut(const TL& ts, size_t n, const char* op, const char* what) {
  OAR_ENFORCE(ts.size() == n, InvalidArgument, op, ": got ", n, " parameters but ", ts.size(), " ", what);
  phi::ParamList out;
  for (const auto& t : ts) {
    out.push_back(&t->dense);
    Tensor(t).bump_version();
  }
  return out;
}
phi::GradList cst(const TL& ts, size_t n, const char* op) {
  OAR_ENFORCE(ts.size() == n, InvalidArgument, op, ": got ", n, " parameters but ", ts.size(), " gradients");
  phi::GradList out;
  for (const auto& t : ts) out.push_back(&t->dense);
  return out;
}

// One update through api::fused_update (dispatched by the parameters' place).
void update(const char* rule, const TL& params, const TL& grads, std::vector<std::pair<const TL*, const char*>> states,
            const DL& lrs, const DL& wds, std::vector<double> scalars, bool flag = false, int64_t step = 0) {
  // DistModel tracing its step (update_recorder.h); an eager step pays one null check
  if (g_update_recorder != nullptr && trace::active() != nullptr) {
    std::vector<const TL*> lists;
    for (const auto& st : states) lists.push_back(st.first);
    if (g_update_recorder(rule, params, grads, lists, lrs, wds, scalars, flag, step)) return;
  }
  const size_t n = params.size();
  phi::UpdateArgs a;
  a.params = mut(params, n, rule, "parameters");
  a.grads = cst(grads, n, rule);
  for (const auto& [s, what] : states) a.states.push_back(s ? mut(*s, n, rule, what) : phi::ParamList{});
  a.lrs = lrs;
  a.wds = wds;
  a.scalars = std::move(scalars);
  a.flag = flag;
  a.step = step;
  api::fused_update(rule, a);
}
}  // namespace

void bind_optimizer(py::module_& m) {
  m.def("_sgd_update", [](const TL& params, const TL& grads, const DL& lrs, const DL& wds) {
    update("sgd", params, grads, {}, lrs, wds, {});
  });
  m.def("_momentum_update",
        [](const TL& params, const TL& grads, const TL& vel, const DL& lrs, const DL& wds, double mu, bool nesterov) {
    update("momentum", params, grads, {{&vel, "velocities"}}, lrs, wds, {mu}, nesterov);
  });
  m.def("_adam_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2, const DL& lrs, const DL& wds,
                           double beta1, double beta2, double eps, bool decoupled, int64_t step) {
    update("adam", params, grads, {{&m1, "moment1"}, {&m2, "moment2"}}, lrs, wds, {beta1, beta2, eps}, decoupled, step);
  });
  m.def("_adamax_update", [](const TL& params, const TL& grads, const TL& mom, const TL& inf, const DL& lrs,
                             const DL& wds, double beta1, double beta2, double eps, int64_t step) {
    update("adamax", params, grads, {{&mom, "moments"}, {&inf, "inf norms"}}, lrs, wds, {beta1, beta2, eps}, false,
           step);
  });
  m.def("_adagrad_update",
        [](const TL& params, const TL& grads, const TL& mom, const DL& lrs, const DL& wds, double eps) {
    update("adagrad", params, grads, {{&mom, "moments"}}, lrs, wds, {eps});
  });
  m.def("_adadelta_update", [](const TL& params, const TL& grads, const TL& eg, const TL& ex, const DL& lrs,
                               const DL& wds, double rho, double eps) {
    update("adadelta", params, grads, {{&eg, "avg_squared_grad"}, {&ex, "avg_squared_update"}}, lrs, wds, {rho, eps});
  });
  m.def("_rmsprop_update", [](const TL& params, const TL& grads, const TL& ms, const TL& mg, const TL& mom,
                              const DL& lrs, const DL& wds, double rho, double eps, double mu, bool centered) {
    update("rmsprop", params, grads,
           {{&ms, "mean_square"}, {centered ? &mg : nullptr, "mean_grad"}, {&mom, "momentum"}}, lrs, wds,
           {rho, eps, mu}, centered);
  });
  m.def("_nadam_update",
        [](const TL& params, const TL& grads, const TL& m1, const TL& m2, const TL& prod, const DL& lrs, const DL& wds,
           double beta1, double beta2, double eps, double momentum_decay, int64_t step) {
    update("nadam", params, grads, {{&m1, "moment1"}, {&m2, "moment2"}, {&prod, "mu_product"}}, lrs, wds,
           {beta1, beta2, eps, momentum_decay}, false, step);
  });
  m.def("_radam_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2, const DL& lrs, const DL& wds,
                            double beta1, double beta2, double eps, int64_t step) {
    update("radam", params, grads, {{&m1, "moment1"}, {&m2, "moment2"}}, lrs, wds, {beta1, beta2, eps}, false, step);
  });
  m.def("_rprop_update", [](const TL& params, const TL& grads, const TL& prev, const TL& size, const DL& lrs,
                            const DL& wds, double eta_negative, double eta_positive, double lr_min, double lr_max) {
    update("rprop", params, grads, {{&prev, "prev_grad"}, {&size, "step_size"}}, lrs, wds,
           {eta_negative, eta_positive, lr_min, lr_max});
  });
  m.def("_asgd_update", [](const TL& params, const TL& grads, const TL& d, const TL& y, const DL& lrs, const DL& wds,
                           int64_t batch_num, int64_t step) {
    update("asgd", params, grads, {{&d, "d"}, {&y, "y"}}, lrs, wds, {static_cast<double>(batch_num)}, false, step);
  });
  m.def("_lamb_update", [](const TL& params, const TL& grads, const TL& m1, const TL& m2, const DL& lrs, const DL& wds,
                           double beta1, double beta2, double eps, int64_t step) {
    update("lamb", params, grads, {{&m1, "moment1"}, {&m2, "moment2"}}, lrs, wds, {beta1, beta2, eps}, false, step);
  });
}

}  // namespace oar::python
