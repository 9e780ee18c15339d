// The CPU code generator: a loop kernel -> LLVM IR -> an object for the host, loaded
// into one ORC LLJIT (cinn/codegen/llvm_codegen.cc, llvm_math.cc and llvm_jit.cc, the only files that include LLVM;
// codegen_stub.cc stands in when Oar is built without LLVM 19). The GPU generator (CUDA C
// through NVRTC, cuda_codegen.h) has the same calls for the same LoopKernel:
// cuda_codegen_target, compile_cuda (a CUBIN), kernel_cuda_source; loading waits for the
// CUDA backend.
//
// The generated function (C ABI):
//   void <name>(int64_t row_begin, int64_t row_end, int64_t cols, void** buffers)
// buffers: the group's inputs then its outputs, contiguous, in the kernel's dtype, then a
// flags word (an integer in a pointer's slot; bit 0: write the full outputs with
// non-temporal stores, Note [Streaming stores]). The runtime splits the rows over Oar's
// threads.
#pragma once

#include <cstdint>
#include <string>

#include "cinn/schedule/loop_ir.h"

namespace oar::cinn {

using KernelFn = void (*)(int64_t row_begin, int64_t row_end, int64_t cols, void** buffers);

/// What the generated code targets ("x86_64 skylake-avx512 w512 llvm-19.1.7"): part of
/// the compile cache's key. Empty when there is no code generator.
std::string codegen_target();
/// Compiles `k` into an object file defining `name` (optimized, host vector width).
std::string compile_object(const LoopKernel& k, const std::string& name);
/// Loads an object made by compile_object into the JIT and returns `name`'s address;
/// throws on a malformed object.
KernelFn load_object(const std::string& object, const std::string& name);
/// The LLVM IR of `k` before optimization (debugging and tests).
std::string kernel_llvm_ir(const LoopKernel& k, const std::string& name);

}  // namespace oar::cinn
