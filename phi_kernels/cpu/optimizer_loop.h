// The loop every fused optimizer update runs (optimizer_kernels.cc, optimizer_kernels_more.cc):
// for_each_param checks each parameter against its gradient once and calls the rule's body
// with typed pointers; the body runs over the parameter's memory in parallel chunks.
#pragma once

#include <initializer_list>
#include <type_traits>
#include <utility>

#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/funcs/optimizer_update.h"

namespace oar::phi::optimizer_loop {

inline void check(const DenseTensor* p, const DenseTensor* g, const char* op) {
  OAR_ENFORCE(p->dims() == g->dims(), InvalidArgument, op, ": gradient shape ", g->dims(),
              " does not match parameter shape ", p->dims());
  OAR_ENFORCE(p->is_contiguous() && g->is_contiguous(), InvalidArgument, op,
              ": parameters and gradients must be contiguous");
  OAR_ENFORCE(is_floating(p->dtype()), InvalidType, op, ": parameter dtype ", dtype_name(p->dtype()),
              " is not a float type");
  OAR_ENFORCE(g->dtype() == p->dtype(), InvalidType, op, ": gradient dtype ", dtype_name(g->dtype()),
              " differs from parameter dtype ", dtype_name(p->dtype()));
}

template <typename T>
constexpr bool kFloatParam = std::is_floating_point_v<OpMath<T>> && !std::is_same_v<T, bool>;

/// Calls body(k, p, g, n) for parameter k with typed pointers (T* p, const T* g).
template <typename Body>
void for_each_param(const ParamList& params, const GradList& grads, const char* op, Body body) {
  for (size_t k = 0; k < params.size(); ++k) {
    check(params[k], grads[k], op);
    visit_dtype(params[k]->dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kFloatParam<T>) {
        body(k, params[k]->data<T>(), grads[k]->data<T>(), params[k]->numel());
      }
    });
  }
}

/// The math type and the element type of a body's parameter pointer.
template <typename P>
using MathOf = OpMath<std::remove_cv_t<std::remove_pointer_t<P>>>;
template <typename P>
using ElemOf = std::remove_cv_t<std::remove_pointer_t<P>>;

/// Optimizer state `s` of parameter `p` (`what`: its name in messages) as S*, checked:
/// contiguous, of dtype S, `per` values per parameter element (ASGD's gradient window).
/// S is the parameter's math type: float for float32/float16/bfloat16 parameters, double
/// for float64 ones, the dtypes of Paddle's accumulators.
template <typename S>
S* state(const DenseTensor* p, DenseTensor* s, const char* op, const char* what, int64_t per = 1) {
  OAR_ENFORCE(s->dtype() == dtype_of<S> && s->is_contiguous() && s->numel() == per * p->numel(), InvalidArgument, op,
              ": state '", what, "' must be contiguous ", dtype_name(dtype_of<S>), " with ", per * p->numel(),
              " elements for a ", dtype_name(p->dtype()), " parameter, got ", dtype_name(s->dtype()), " with ",
              s->numel());
  return s->data<S>();
}

/// Registers each (name, kernel) as the CPU's update kernel for every dtype: the kernels
/// check theirs and name what is wrong (a non-float parameter).
inline bool register_update_kernels(std::initializer_list<std::pair<const char*, UpdateKernel>> kernels) {
  for (const auto& [name, fn] : kernels)
    for (int t = 0; t < kNumDataTypes; ++t)
      KernelRegistry::instance().register_kernel(name, DeviceType::kCPU, static_cast<DataType>(t),
                                                 reinterpret_cast<void*>(fn));
  return true;
}

}  // namespace oar::phi::optimizer_loop
