// The CPU code generator's vector math (llvm_math.h): LLVM IR for one node's arithmetic.
#include "cinn/codegen/llvm_math.h"

#include <cmath>

#include <llvm/IR/MDBuilder.h>

#include "paddle_core/base/errors.h"

namespace oar::cinn {

llvm::Value* VecMath::math(const char* f, llvm::Value* x, int w) {
  std::string name;
  if (w == 1) {
    name = std::string(f) + (f64_ ? "" : "f");
  } else {
    name = std::string("Sleef_") + f + (f64_ ? "d" : "f") + std::to_string(w) + "_u10";
  }
  llvm::FunctionCallee callee =
      m_.getOrInsertFunction(name, llvm::FunctionType::get(x->getType(), {x->getType()}, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->setMemoryEffects(llvm::MemoryEffects::none());
  }
  return b_.CreateCall(callee, {x});
}

// float32 exp: x = n ln2 + r with |r| <= ln2/2, Cephes' degree-7 polynomial (vec::exp's
// until its one-FMA-shorter fit, vec::kExpQ in phi_kernels/cpu/vec_math.h), times 2^n built in the exponent bits (as
// 2^a * 2^(n-a), a = floor(n/2), on a rarely taken branch when n is out of [-126, 127],
// so that results past 2^127 stay finite and those below 2^-126 come out subnormal;
// vec::exp flushes them); relative error below 2 ulp for
// normal results, inf past ln(FLT_MAX), 0 below -103.98, NaN kept. Inlined, it is
// about twice as fast as a call to SLEEF's 1-ulp exp.
llvm::Value* VecMath::exp_f32(llvm::Value* x, int w) {
  auto fma = [&](llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
  };
  llvm::Type* it = w == 1 ? static_cast<llvm::Type*>(b_.getInt32Ty()) : llvm::FixedVectorType::get(b_.getInt32Ty(), w);
  auto pow2 = [&](llvm::Value* e) {  // e integral in [-126, 127]
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, splat_i32(127, w)), splat_i32(23, w)), vty(w));
  };
  llvm::Value* hi = fconst(88.72283935546875, w);     // ln(FLT_MAX), rounded down
  llvm::Value* lo = fconst(-103.972076416015625, w);  // ln of the smallest subnormal
  // n = x log2(e) rounded to nearest even by adding 1.5 * 2^23 (Note [Reduction sweeps],
  // "exp"): t's low mantissa bits hold n, so n as an integer is t's bits minus the
  // constant's, with no clamp, round or conversion. Only for |x log2(e)| < 2^22 is that
  // n exact; every other x (|x| > 2.9e6, inf, NaN) gives an integer outside [-126, 127]
  // (t's bits are monotonic in t, NaN's far off) and takes the rare branch, whose
  // selects on x give 0, inf or NaN.
  llvm::Value* t = fma(x, fconst(1.44269504088896341, w), fconst(kRound, w));
  llvm::Value* n = b_.CreateFSub(t, fconst(kRound, w));
  llvm::Value* ni = b_.CreateSub(b_.CreateBitCast(t, it), splat_i32(kRoundBits, w));
  llvm::Value* r = fma(n, fconst(-0.693359375, w), x);
  r = fma(n, fconst(2.12194440e-4, w), r);
  llvm::Value* p = fconst(1.9875691500e-4, w);
  for (double c : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
    p = fma(p, r, fconst(c, w));
  p = fma(b_.CreateFMul(p, r), r, b_.CreateFAdd(r, fconst(1.0, w)));
  // 2^n in one step while every lane has n in [-126, 127] (always, for softmax's
  // exp(x - max) > 1e-38); else a branch to the two-step form. Only that branch can
  // see x < lo, x > hi or NaN (their n is outside the range), so only it applies finish_exp's
  // selects: the common path saves three compares and three blends per vector.
  llvm::Value* fast = b_.CreateFMul(p, pow2(ni));
  llvm::Value* off = b_.CreateOr(b_.CreateICmpSLT(ni, splat_i32(-126, w)), b_.CreateICmpSGT(ni, splat_i32(127, w)));
  if (w > 1) off = b_.CreateOrReduce(off);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* slow = llvm::BasicBlock::Create(ctx_, "exp_wide", fn_);
  auto* join = llvm::BasicBlock::Create(ctx_, "exp_join", fn_);
  b_.CreateCondBr(off, slow, join, llvm::MDBuilder(ctx_).createBranchWeights(1, 1000));
  b_.SetInsertPoint(slow);
  llvm::Value* a = b_.CreateAShr(ni, splat_i32(1, w));
  llvm::Value* wide = finish_exp(x, b_.CreateFMul(b_.CreateFMul(p, pow2(a)), pow2(b_.CreateSub(ni, a))), lo, hi, w);
  llvm::BasicBlock* slow_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  llvm::PHINode* y = b_.CreatePHI(vty(w), 2);
  y->addIncoming(fast, pre);
  y->addIncoming(wide, slow_end);
  return y;
}
llvm::Value* VecMath::finish_exp(llvm::Value* x, llvm::Value* yv, llvm::Value* lo, llvm::Value* hi, int w) {
  llvm::Value* y = yv;
  y = b_.CreateSelect(b_.CreateFCmpOLT(x, lo), fconst(0.0, w), y);
  y = b_.CreateSelect(b_.CreateFCmpOLT(hi, x), fconst(INFINITY, w), y);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, y);
}
llvm::Value* VecMath::splat_i32(int v, int w) {
  llvm::Value* c = llvm::ConstantInt::get(b_.getInt32Ty(), v);
  return w == 1 ? c : b_.CreateVectorSplat(w, c);
}
llvm::Value* VecMath::exp_of(llvm::Value* x, int w) { return f64_ ? math("exp", x, w) : exp_f32(x, w); }

// float32 erf as Oar's GELU kernel computes it (phi_kernels/cpu/unary_kernels.cc): erfc(|z|)
// from Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7) with one SLEEF exp, then
// the sign; SLEEF's 1-ulp erf costs twice as much. float64 keeps SLEEF's erf.
// `e`: exp(-z^2) when the kernel computes it anyway (binary `erfe`, Note [erf shares exp]).
llvm::Value* VecMath::erf_f32(llvm::Value* z, int w, llvm::Value* e) {
  llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, z);
  llvm::Value* t = b_.CreateFDiv(fconst(1.0, w), b_.CreateFAdd(b_.CreateFMul(fconst(0.3275911, w), a), fconst(1.0, w)));
  llvm::Value* p = fconst(1.061405429, w);
  for (double c : {-1.453152027, 1.421413741, -0.284496736, 0.254829592})
    p = b_.CreateFAdd(b_.CreateFMul(p, t), fconst(c, w));
  if (!e) e = exp_of(b_.CreateFNeg(b_.CreateFMul(a, a)), w);
  llvm::Value* q = b_.CreateFMul(b_.CreateFMul(p, t), e);
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b_.CreateFSub(fconst(1.0, w), q), z);
}

llvm::Value* VecMath::unary(const std::string& op, llvm::Value* x, int w) {
  if (op == "id") return x;
  if (op == "erf" && !f64_) return erf_f32(x, w);
  if (op == "neg") return b_.CreateFNeg(x);
  if (op == "exp") return exp_of(x, w);
  if (op == "exp" || op == "log" || op == "tanh" || op == "erf" || op == "log1p" || op == "expm1")
    return math(op.c_str(), x, w);
  if (op == "sqrt") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  if (op == "rsqrt") return b_.CreateFDiv(fconst(1.0, w), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  if (op == "reciprocal") return b_.CreateFDiv(fconst(1.0, w), x);
  if (op == "abs") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Oar's relu: v > 0 ? v : 0 (NaN gives 0, -0 gives +0).
  if (op == "relu") return b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(0.0, w)), x, fconst(0.0, w));
  if (op == "sigmoid") return b_.CreateFDiv(fconst(1.0, w), b_.CreateFAdd(fconst(1.0, w), exp_of(b_.CreateFNeg(x), w)));
  OAR_THROW(Unimplemented, "cinn codegen: unknown unary op ", op);
}

llvm::Value* VecMath::binary(const std::string& op, llvm::Value* x, llvm::Value* y) {
  if (op == "add") return b_.CreateFAdd(x, y);
  if (op == "sub") return b_.CreateFSub(x, y);
  if (op == "mul") return b_.CreateFMul(x, y);
  if (op == "div") return b_.CreateFDiv(x, y);
  if (op == "max" || op == "min") return extremum(op, x, y);
  // Compares give 1 or 0 (Note [Select and masks]); NaN compares false but for `ne`.
  llvm::Value* m = op == "lt"   ? b_.CreateFCmpOLT(x, y)
                   : op == "le" ? b_.CreateFCmpOLE(x, y)
                   : op == "gt" ? b_.CreateFCmpOGT(x, y)
                   : op == "ge" ? b_.CreateFCmpOGE(x, y)
                   : op == "eq" ? b_.CreateFCmpOEQ(x, y)
                   : op == "ne" ? b_.CreateFCmpUNE(x, y)
                                : nullptr;
  if (m) return b_.CreateUIToFP(m, x->getType());
  OAR_THROW(Unimplemented, "cinn codegen: unknown binary op ", op);
}

// max/min as Oar's kernels compute them (`maximum`: (a != a || a > b) ? a : b; the
// reductions: NaN if any element is NaN): a NaN in either operand gives NaN, and of two
// equal values (+0 and -0) the second. Reductions combine with it too, so a NaN
// accumulator stays NaN and a NaN element makes it NaN. LLVM's maxnum/minnum (x86's
// maxps) return the other operand for a NaN, and llvm.maximum orders -0 below +0.
llvm::Value* VecMath::extremum(const std::string& op, llvm::Value* a, llvm::Value* b) {
  llvm::Value* keep_a =
      b_.CreateOr(b_.CreateFCmpUNO(a, a), op == "max" ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b));
  return b_.CreateSelect(keep_a, a, b);
}
// The lanes of `v` combined by `extremum`, halving the vector each step.
llvm::Value* VecMath::extremum_lanes(const std::string& op, llvm::Value* v) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (!vt) return v;
  for (int w = static_cast<int>(vt->getNumElements()); w > 1; w /= 2) {
    llvm::SmallVector<int, 16> lo, hi;
    for (int i = 0; i < w / 2; ++i) {
      lo.push_back(i);
      hi.push_back(i + w / 2);
    }
    v = extremum(op, b_.CreateShuffleVector(v, lo), b_.CreateShuffleVector(v, hi));
  }
  return b_.CreateExtractElement(v, uint64_t{0});
}

}  // namespace oar::cinn
