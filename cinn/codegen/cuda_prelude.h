// The device helpers at the top of each generated CUDA source (cuda_codegen.cc): the
// reduction combiners, max/min with Oar's NaN rule, warp and block reductions, the column
// max/min atomics, bf16 conversions, and float32 exp and erf as the CPU kernel computes
// them ("The CUDA code generator" in docs/notes/cinn.md).
#pragma once

#include <string>

namespace oar::cinn {

/// A constant of a kernel's dtype as CUDA C, exactly: a hex float (rounded to float32 as
/// LLVM's ConstantFP does), infinities and NaN by their bits.
std::string cuda_literal(double v, bool f64);

/// Which helpers a kernel uses.
struct CudaPrelude {
  bool f64 = false;             // double, else float (bf16 computes in float)
  bool bf16 = false;            // oar_ld / oar_st
  bool column_extrema = false;  // oar_atomic_max / oar_atomic_min
  bool block_reduce = false;    // oar_block_reduce (Note [CUDA block reductions])
  bool exp = false;             // float32 oar_exp
  bool erf = false;             // float32 oar_erf_e / oar_erf (needs exp)
};
std::string cuda_prelude(const CudaPrelude& p);

}  // namespace oar::cinn
