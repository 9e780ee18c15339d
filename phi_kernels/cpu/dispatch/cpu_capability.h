// The CPU capability whose kernel copies run (Note [CPU dispatch], docs/notes/cpu_dispatch.md).
#pragma once

namespace oar::phi::cpu {

/// The ISA copies of the hot kernels, narrowest first. kAvx2 is the baseline (x86-64-v3).
enum class Capability : int { kAvx2 = 0, kAvx512 = 1 };

/// The copy that registers its kernels: the widest the CPU (and OS) supports, or the one
/// OAR_CPU_CAPABILITY names (avx2 | avx512 | default) when the CPU supports it. Decided once.
Capability active_capability();

/// "avx2" / "avx512".
const char* capability_name(Capability c);

/// Whether this CPU and OS can run the copy built for `c` (cpuid and xgetbv).
bool cpu_supports(Capability c);

/// Registers one kernel of the copy built for `isa` when that copy is the active one; the
/// per-ISA kernel sources register through it (isa_register.h).
struct IsaKernelRegistrar {
  IsaKernelRegistrar(Capability isa, const char* op, int device_type, int dtype, void* fn);
};

}  // namespace oar::phi::cpu

/// The active capability's name, for Python (ctypes) and tools; never null.
extern "C" const char* oar_cpu_capability();
