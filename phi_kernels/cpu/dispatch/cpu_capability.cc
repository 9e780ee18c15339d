// Capability detection and the gated kernel registrar (Note [CPU dispatch]).
#include "phi_kernels/cpu/dispatch/cpu_capability.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "paddle_core/dispatch/kernel_registry.h"

namespace oar::phi::cpu {

bool cpu_supports(Capability c) {
  // __builtin_cpu_supports checks the OS-enabled state (XCR0) as well as cpuid.
  __builtin_cpu_init();
  switch (c) {
    case Capability::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Capability::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
}

const char* capability_name(Capability c) { return c == Capability::kAvx512 ? "avx512" : "avx2"; }

namespace {
Capability detect() {
  Capability best = cpu_supports(Capability::kAvx512) ? Capability::kAvx512 : Capability::kAvx2;
  const char* env = std::getenv("OAR_CPU_CAPABILITY");
  if (env == nullptr || *env == '\0') return best;
  // "default" is the baseline copy (avx2): the one a CPU without AVX-512 runs.
  if (std::strcmp(env, "default") == 0 || std::strcmp(env, "avx2") == 0) return Capability::kAvx2;
  if (std::strcmp(env, "avx512") == 0) {
    if (best == Capability::kAvx512) return best;
    std::fprintf(stderr, "oar: OAR_CPU_CAPABILITY=avx512 but this CPU lacks AVX-512; using avx2\n");
    return Capability::kAvx2;
  }
  // Start-up runs before Python can catch anything: warn and keep the detected copy.
  std::fprintf(stderr, "oar: OAR_CPU_CAPABILITY=%s is not one of avx2, avx512, default; using %s\n", env,
               capability_name(best));
  return best;
}
}  // namespace

Capability active_capability() {
  static const Capability c = detect();
  return c;
}

IsaKernelRegistrar::IsaKernelRegistrar(Capability isa, const char* op, int device_type, int dtype, void* fn) {
  if (isa != active_capability()) return;
  KernelRegistry::instance().register_kernel(op, static_cast<DeviceType>(device_type), static_cast<DataType>(dtype),
                                             fn);
}

}  // namespace oar::phi::cpu

extern "C" const char* oar_cpu_capability() {
  return oar::phi::cpu::capability_name(oar::phi::cpu::active_capability());
}
