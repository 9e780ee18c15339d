// The CPU code generator's vector math (Note [Vector width] and the notes cited below,
// docs/notes/cinn.md): the LLVM IR of one node's arithmetic on `w` lanes (w = 1: a scalar)
// in the kernel's compute type. exp and erf are inlined polynomials for float32; log, tanh
// and every float64 transcendental call SLEEF's Sleef_<f><type><lanes>_u10 (1-ulp, the
// library Oar's eager kernels use); sqrt, fabs and copysign are LLVM intrinsics; max/min
// follow Oar's NaN rules. The loop emitter (llvm_codegen.cc) derives from it. Included only
// by the code generator's files (LLVM's headers take ~12 s to compile).
#pragma once

#include <string>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

namespace oar::cinn {

class VecMath {
 protected:
  /// f64: float64 values, else float32 (bfloat16 kernels compute in float32).
  VecMath(llvm::LLVMContext& ctx, llvm::Module& m, bool f64)
      : ctx_(ctx), m_(m), b_(ctx), f64_(f64), et_(f64 ? b_.getDoubleTy() : b_.getFloatTy()) {}

  llvm::Type* vty(int w) { return w == 1 ? et_ : llvm::FixedVectorType::get(et_, w); }
  llvm::Value* splat(llvm::Value* s, int w) { return w == 1 ? s : b_.CreateVectorSplat(w, s); }
  llvm::Value* fconst(double v, int w) { return splat(llvm::ConstantFP::get(et_, v), w); }
  llvm::Value* splat_i32(int v, int w);

  /// The unary ops of loop_ir.h's Node (but divc, which needs the row) and the binary ones.
  llvm::Value* unary(const std::string& op, llvm::Value* x, int w);
  llvm::Value* binary(const std::string& op, llvm::Value* x, llvm::Value* y);
  /// float32 erf; `e`: exp(-z^2) when the kernel computes it anyway (Note [erf shares exp]).
  llvm::Value* erf_f32(llvm::Value* z, int w, llvm::Value* e = nullptr);
  /// max/min with Oar's NaN rules, and a vector's lanes combined by it.
  llvm::Value* extremum(const std::string& op, llvm::Value* a, llvm::Value* b);
  llvm::Value* extremum_lanes(const std::string& op, llvm::Value* v);

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  bool f64_ = false;
  llvm::Type* et_ = nullptr;
  llvm::Function* fn_ = nullptr;  // the kernel being emitted (exp's rare branch adds blocks to it)

 private:
  llvm::Value* math(const char* f, llvm::Value* x, int w);
  static constexpr double kRound = 12582912.0;   // 1.5 * 2^23
  static constexpr int kRoundBits = 0x4b400000;  // its bits
  llvm::Value* exp_f32(llvm::Value* x, int w);
  llvm::Value* finish_exp(llvm::Value* x, llvm::Value* yv, llvm::Value* lo, llvm::Value* hi, int w);
  llvm::Value* exp_of(llvm::Value* x, int w);
};

}  // namespace oar::cinn
