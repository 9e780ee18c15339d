// The sample device's fused optimizer updates (Oar's "<rule>_update" kernels, Note
// [Plugin update kernels]): sgd and adam for float32 and float64 parameters, with
// states of the parameter's dtype (Oar's: float64 for float64 parameters). Arguments: params, grads, the rule's state
// lists (Tensor[]), then lrs, wds, scalars (float[]), flag (bool), step (int). Parameters and states are written in
// place; the math is the CPU kernels' (Paddle's Adam form: lr_t = lr sqrt(1 - b2^t) /
// (1 - b1^t), epsilon scaled by sqrt(1 - b2^t); flag: AdamW's decoupled decay).
#include <cmath>

#include "kernels.h"

namespace sample {
namespace {

// The i-th of a list of n tensors, each contiguous and of the first parameter's size.
void check_lists(Call& c, const std::vector<View>& params, const std::vector<std::vector<View>>& others,
                 const std::vector<double>& lrs, const std::vector<double>& wds) {
  if (lrs.size() != params.size() || wds.size() != params.size())
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "lrs/wds must hold one value per parameter");
  for (const auto& l : others) {
    if (l.size() != params.size()) c.fail(OAR_ERROR_INVALID_ARGUMENT, "every list must hold one tensor per parameter");
    for (size_t k = 0; k < l.size(); ++k) {
      if (l[k].numel() != params[k].numel() || !l[k].contiguous() || !params[k].contiguous())
        c.fail(OAR_ERROR_INVALID_ARGUMENT, "parameter " + std::to_string(k) +
                                               " and its gradient/state differ in size"
                                               " or are not contiguous");
    }
  }
}

template <typename T>
OAR_Status sgd(const OAR_KernelApi* api, OAR_KernelContext ctx) {
  return run_kernel(api, ctx, "sgd_update", [](Call& c) {
    const std::vector<View> p = c.input_list(0), g = c.input_list(1);
    const std::vector<double> lrs = c.attr_floats(0), wds = c.attr_floats(1);
    check_lists(c, p, {g}, lrs, wds);
    c.launch([p, g, lrs, wds] {
      for (size_t k = 0; k < p.size(); ++k) {
        T* pv = p[k].ptr<T>();
        const T* gv = g[k].ptr<T>();
        const T lr = static_cast<T>(lrs[k]), wd = static_cast<T>(wds[k]);
        for (int64_t i = 0, n = p[k].numel(); i < n; ++i) pv[i] = pv[i] - lr * (gv[i] + wd * pv[i]);
      }
    });
  });
}

template <typename T>
OAR_Status adam(const OAR_KernelApi* api, OAR_KernelContext ctx) {
  return run_kernel(api, ctx, "adam_update", [](Call& c) {
    const std::vector<View> p = c.input_list(0), g = c.input_list(1), m1 = c.input_list(2), m2 = c.input_list(3);
    const std::vector<double> lrs = c.attr_floats(0), wds = c.attr_floats(1), sc = c.attr_floats(2);
    const bool decoupled = c.attr_bool(3);
    const int64_t step = c.attr_int(4);
    check_lists(c, p, {g, m1, m2}, lrs, wds);
    if (sc.size() != 3) c.fail(OAR_ERROR_INVALID_ARGUMENT, "adam takes 3 scalars (beta1, beta2, epsilon)");
    for (size_t k = 0; k < p.size(); ++k)
      if (m1[k].dtype != p[k].dtype || m2[k].dtype != p[k].dtype)
        c.fail(OAR_ERROR_INVALID_ARGUMENT, "adam's states must have their parameter's dtype");
    c.launch([p, g, m1, m2, lrs, wds, sc, decoupled, step] {
      const double bc1 = 1.0 - std::pow(sc[0], static_cast<double>(step));
      const double bc2 = 1.0 - std::pow(sc[1], static_cast<double>(step));
      const T b1 = static_cast<T>(sc[0]), b2 = static_cast<T>(sc[1]);
      for (size_t k = 0; k < p.size(); ++k) {
        T* pv = p[k].ptr<T>();
        const T* gv = g[k].ptr<T>();
        T* a = m1[k].ptr<T>();
        T* b = m2[k].ptr<T>();
        const T lr_t = static_cast<T>(lrs[k] * std::sqrt(bc2) / bc1), eps = static_cast<T>(sc[2] * std::sqrt(bc2));
        const T wd = static_cast<T>(wds[k]), decay = static_cast<T>(1.0 - lrs[k] * wds[k]);
        for (int64_t i = 0, n = p[k].numel(); i < n; ++i) {
          T x = pv[i], gi = gv[i];
          if (decoupled) {
            x *= decay;
          } else {
            gi += wd * x;
          }
          a[i] = b1 * a[i] + (T(1) - b1) * gi;
          b[i] = b2 * b[i] + (T(1) - b2) * gi * gi;
          pv[i] = x - lr_t * a[i] / (std::sqrt(b[i]) + eps);
        }
      }
    });
  });
}

}  // namespace

void update_kernels(std::vector<KernelDef>* defs) {
  const char* sgd_sig =
      "(Tensor[] params, Tensor[] grads, float[] lrs, float[] wds, float[] scalars, bool flag, "
      "int step) -> ()";
  const char* adam_sig =
      "(Tensor[] params, Tensor[] grads, Tensor[] moment1, Tensor[] moment2, float[] lrs, "
      "float[] wds, float[] scalars, bool flag, int step) -> ()";
  defs->push_back({"sgd_update", OAR_DTYPE_FLOAT32, sgd_sig, sgd<float>});
  defs->push_back({"sgd_update", OAR_DTYPE_FLOAT64, sgd_sig, sgd<double>});
  defs->push_back({"adam_update", OAR_DTYPE_FLOAT32, adam_sig, adam<float>});
  defs->push_back({"adam_update", OAR_DTYPE_FLOAT64, adam_sig, adam<double>});
}

}  // namespace sample
