// The LLVM host shared by the CPU code generator's files (docs/notes/cinn.md,
// "Lowering and code generation"): the JIT, the host's target machine and vector width
// (llvm_jit.cc), and the module builder of the loop-kernel emitter (llvm_codegen.cc).
// Includes LLVM: only they and llvm_math.cc include it (each includer takes ~12 s to compile).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "cinn/schedule/loop_ir.h"

namespace oar::cinn {

struct Host {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> jtmb;  // one more target machine per compile thread
  std::string cpu, features;
  int vec_bits = 128;
  bool width_set = false;  // OAR_CINN_VECTOR_BITS: vec_bits for every kernel
  std::mutex mu;  // the target machine and the JIT are used by one thread at a time
};

/// The process's host (created on first use; lives until exit: compiled kernels stay
/// callable). The vector width and the CPU come from the running machine.
Host& host();
std::string err_text(llvm::Error e);

/// The vector width of `k`'s loops on `h` (Note [Vector width] in docs/notes/cinn.md).
int kernel_vector_bits(const LoopKernel& k, const Host& h);

/// The verified LLVM module of one loop kernel, vectorized for `h`'s width.
std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const LoopKernel& k, const std::string& name,
                                           const Host& h, const llvm::TargetMachine& tm);

}  // namespace oar::cinn
