// Force-included (-include) into every per-ISA kernel source (cmake/cpu_dispatch.cmake):
// OAR_REGISTER_KERNEL registers a kernel only when this copy's ISA is the active one, and
// OAR_ISA_NS names the namespace that keeps this copy's inline functions apart from the
// other copies' (Note [CPU dispatch]).
#pragma once

#include "paddle_core/dispatch/kernel_registry.h"
#include "phi_kernels/cpu/dispatch/cpu_capability.h"
#include "phi_kernels/cpu/dispatch/isa_namespace.h"

#define OAR_ISA_ENUM_avx2 kAvx2
#define OAR_ISA_ENUM_avx512 kAvx512

#undef OAR_REGISTER_KERNEL_ONE
#define OAR_REGISTER_KERNEL_ONE(op, backend, fn, T)                                          \
  static ::oar::phi::cpu::IsaKernelRegistrar OAR_KCAT(oar_kreg_##op##_, __COUNTER__)(        \
      ::oar::phi::cpu::Capability::OAR_KCAT(OAR_ISA_ENUM_, OAR_CPU_ISA), #op,                \
      static_cast<int>(::oar::DeviceType::k##backend), static_cast<int>(::oar::dtype_of<T>), \
      reinterpret_cast<void*>(static_cast<::oar::kernel_sig::op>(&fn<T>)));
