// The NVIDIA code generator: a loop kernel -> CUDA C -> NVRTC -> PTX or an sm_90 CUBIN
// ("The CUDA code generator" in docs/notes/cinn.md). It reads the same LoopKernel as
// the LLVM generator (codegen.h) and mirrors its emitter node by node (the same inlining,
// the same row-level values, the same reciprocal for a division by a row value, the same
// float32 erf), so the two compute the same thing; only the mapping onto threads differs
// (cinn/schedule/gpu_schedule.h). The emitter needs no CUDA; NVRTC is used when Oar was
// built with it (OAR_WITH_NVRTC: CMake's CUDA::nvrtc). Launching from Oar needs the CUDA
// backend, which does not exist yet; bench/cinn_gpu.py launches the CUBINs with CuPy on a
// lent GPU against the CPU kernels' recorded calls (Note [CUDA kernels on a GPU]).
//
// The generated kernel (C linkage, one per source):
//   extern "C" __global__ void <name>(long long rows, long long cols[, long long inner],
//                                     const T* __restrict__ in0, ..., T* __restrict__ out0, ...)
// inputs then outputs, contiguous, as the CPU kernel's buffers (`inner` for reductions over
// middle axes); launched with gpu_launch_dims(gpu_schedule(k), rows, cols) on outputs
// prepared as gpu_output_init(k) says.
#pragma once

#include <string>

#include "cinn/schedule/gpu_schedule.h"
#include "cinn/schedule/loop_ir.h"

namespace oar::cinn {

/// The CUDA C of `k` as a kernel named `name` (kernel_llvm_ir's counterpart).
std::string cuda_source(const LoopKernel& k, const std::string& name);
inline std::string kernel_cuda_source(const LoopKernel& k, const std::string& name) { return cuda_source(k, name); }

/// True when Oar was built with NVRTC (OAR_WITH_NVRTC).
bool compiled_with_nvrtc();
/// "nvrtc-13.0 sm_90": the CUDA generator's target (its compile-cache key part); empty
/// without NVRTC.
std::string cuda_codegen_target(int sm = 90);

struct NvrtcResult {
  std::string binary;  // the PTX text or the CUBIN
  std::string log;     // NVRTC's log (warnings)
  double seconds = 0;  // nvrtcCompileProgram's wall time
};
/// Compiles `source` (defining `name`) for sm_<sm>: a CUBIN when `cubin`, else PTX for
/// compute_<sm>. Throws InvalidArgument with NVRTC's log when it does not compile, and
/// Unimplemented without NVRTC.
NvrtcResult nvrtc_compile(const std::string& source, const std::string& name, bool cubin, int sm = 90);
/// compile_object's counterpart: `k` as an sm_<sm> CUBIN defining `name`.
inline std::string compile_cuda(const LoopKernel& k, const std::string& name, int sm = 90) {
  return nvrtc_compile(cuda_source(k, name), name, /*cubin=*/true, sm).binary;
}

}  // namespace oar::cinn
