// Kernels of the fused ops the IR's fusion rules produce (paddle_core/ops/fused.yaml):
// out = act(matmul(x, w) + bias). The product runs on the registered matmul kernel
// (oneDNN/BLAS); the bias and activation are one extra pass over the output, in
// place, while it is still hot in cache (gelu through its own vectorized kernel).
#include <string>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "phi_kernels/cpu/parallel.h"

namespace oar::phi {
namespace {

enum class Act { kNone, kRelu, kGelu, kGeluTanh };

Act parse_act(const std::string& a) {
  if (a == "relu") return Act::kRelu;
  if (a == "gelu") return Act::kGelu;
  if (a == "gelu_tanh") return Act::kGeluTanh;
  OAR_THROW(InvalidArgument, "fused_linear_activation: activation must be relu, gelu or gelu_tanh, got '", a, "'");
}

template <typename T>
void linear(const DeviceContext& ctx, const DenseTensor& x, const DenseTensor& w, const DenseTensor& bias_in,
            bool tx, bool ty, Act act, DenseTensor* out, const char* op) {
  static KernelSlot matmul("matmul");
  auto mm = reinterpret_cast<kernel_sig::matmul>(matmul.get(ctx.place, dtype_of<T>));
  mm(ctx, x, w, tx, ty, out);
  const int64_t n = out->rank() ? out->dims()[out->rank() - 1] : 1;
  OAR_ENFORCE(bias_in.numel() == n, InvalidArgument, op, ": bias must have ", n,
              " elements (the output's last dim), got shape ", bias_in.dims());
  OAR_ENFORCE(bias_in.dtype() == out->dtype(), InvalidType, op, ": bias dtype ", dtype_name(bias_in.dtype()),
              " differs from the product's ", dtype_name(out->dtype()));
  DenseTensor bias = contiguous(bias_in);
  const T* b = bias.data<T>();
  T* o = out->data<T>();
  const int64_t rows = n ? out->numel() / n : 0;
  // One loop per activation (no branch in the inner loop), so the compiler vectorizes it.
  auto epilogue = [&](auto f) {
    parallel_for(rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        T* row = o + r * n;
        for (int64_t j = 0; j < n; ++j) row[j] = f(row[j] + b[j]);
      }
    }, out->numel());
  };
  switch (act) {
    case Act::kNone: epilogue([](T v) { return v; }); break;
    case Act::kRelu: epilogue([](T v) { return v > T(0) ? v : T(0); }); break;
    case Act::kGelu:
    case Act::kGeluTanh: {
      // The bias pass, then gelu's own vectorized kernel in place (elementwise, so
      // reading and writing the same buffer is safe).
      epilogue([](T v) { return v; });
      static KernelSlot gelu("gelu");
      auto g = reinterpret_cast<kernel_sig::gelu>(gelu.get(ctx.place, dtype_of<T>));
      const DenseTensor in = *out;
      g(ctx, in, act == Act::kGeluTanh, out);
      break;
    }
  }
}

template <typename T>
void FusedLinearKernel(const DeviceContext& ctx, const DenseTensor& x, const DenseTensor& w,
                       const DenseTensor& bias, bool tx, bool ty, DenseTensor* out) {
  linear<T>(ctx, x, w, bias, tx, ty, Act::kNone, out, "fused_linear");
}

template <typename T>
void FusedLinearActivationKernel(const DeviceContext& ctx, const DenseTensor& x, const DenseTensor& w,
                                 const DenseTensor& bias, bool tx, bool ty, const std::string& activation,
                                 DenseTensor* out) {
  linear<T>(ctx, x, w, bias, tx, ty, parse_act(activation), out, "fused_linear_activation");
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(fused_linear, CPU, FusedLinearKernel, float, double)
OAR_REGISTER_KERNEL(fused_linear_activation, CPU, FusedLinearActivationKernel, float, double)
