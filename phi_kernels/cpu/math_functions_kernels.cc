// Kernels of math_functions.yaml: SLEEF-vectorized transcendental functions, built per ISA.
// Rounding, classification, nan_to_num, fmax/fmin, atan2, lerp and increment are in
// math_pointwise_kernels.cc; erfinv/digamma/polygamma in special_kernels.cc.
#include <cmath>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/vec_math.h"

namespace oar::phi {
namespace {

OAR_SLEEF_FUNCTOR(Expm1F, expm1, u10, std::expm1(v))
OAR_SLEEF_FUNCTOR(Log2F, log2, u10, std::log2(v))
OAR_SLEEF_FUNCTOR(Log10F, log10, u10, std::log10(v))
OAR_SLEEF_FUNCTOR(Log1pF, log1p, u10, std::log1p(v))
OAR_SLEEF_FUNCTOR(TanF, tan, u10, std::tan(v))
OAR_SLEEF_FUNCTOR(AsinF, asin, u10, std::asin(v))
OAR_SLEEF_FUNCTOR(AcosF, acos, u10, std::acos(v))
OAR_SLEEF_FUNCTOR(AtanF, atan, u10, std::atan(v))
OAR_SLEEF_FUNCTOR(SinhF, sinh, u10, std::sinh(v))
OAR_SLEEF_FUNCTOR(CoshF, cosh, u10, std::cosh(v))
OAR_SLEEF_FUNCTOR(AsinhF, asinh, u10, std::asinh(v))
OAR_SLEEF_FUNCTOR(AcoshF, acosh, u10, std::acosh(v))
OAR_SLEEF_FUNCTOR(AtanhF, atanh, u10, std::atanh(v))
OAR_SLEEF_FUNCTOR(ErfF, erf, u10, std::erf(v))
OAR_SLEEF_FUNCTOR(LgammaF, lgamma, u10, std::lgamma(v))

#define OAR_SLEEF_KERNEL(Name, Functor)                                       \
  template <typename T>                                                       \
  void Name(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {   \
    sleef_unary<Functor, T>(x, out);                                          \
  }

OAR_SLEEF_KERNEL(Expm1Kernel, Expm1F)
OAR_SLEEF_KERNEL(Log2Kernel, Log2F)
OAR_SLEEF_KERNEL(Log10Kernel, Log10F)
OAR_SLEEF_KERNEL(Log1pKernel, Log1pF)
OAR_SLEEF_KERNEL(TanKernel, TanF)
OAR_SLEEF_KERNEL(AsinKernel, AsinF)
OAR_SLEEF_KERNEL(AcosKernel, AcosF)
OAR_SLEEF_KERNEL(AtanKernel, AtanF)
OAR_SLEEF_KERNEL(SinhKernel, SinhF)
OAR_SLEEF_KERNEL(CoshKernel, CoshF)
OAR_SLEEF_KERNEL(AsinhKernel, AsinhF)
OAR_SLEEF_KERNEL(AcoshKernel, AcoshF)
OAR_SLEEF_KERNEL(AtanhKernel, AtanhF)
OAR_SLEEF_KERNEL(ErfKernel, ErfF)
OAR_SLEEF_KERNEL(LgammaKernel, LgammaF)

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(expm1, CPU, Expm1Kernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(log2, CPU, Log2Kernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(log10, CPU, Log10Kernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(log1p, CPU, Log1pKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(tan, CPU, TanKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(asin, CPU, AsinKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(acos, CPU, AcosKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(atan, CPU, AtanKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(sinh, CPU, SinhKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(cosh, CPU, CoshKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(asinh, CPU, AsinhKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(acosh, CPU, AcoshKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(atanh, CPU, AtanhKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(erf, CPU, ErfKernel, float, double, ::oar::float16, ::oar::bfloat16)
OAR_REGISTER_KERNEL(lgamma, CPU, LgammaKernel, float, double, ::oar::float16, ::oar::bfloat16)
