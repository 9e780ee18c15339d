// The CPU code generator's emitter: one loop kernel to LLVM IR, its loops, loads and
// stores (the JIT that compiles and loads it is llvm_jit.cc, the vector math of each node
// llvm_math.cc; these three files are the only ones that include LLVM: each takes ~12 s to
// compile). The vector width and the CPU come from the running machine (llvm_host.h),
// never from the build's -march.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include "cinn/codegen/codegen.h"
#include "cinn/codegen/llvm_host.h"
#include "cinn/codegen/llvm_math.h"
#include "cinn/pipeline.h"
#include "paddle_core/base/errors.h"

namespace oar::cinn {
namespace {

// exp & co: a call to SLEEF or an inlined polynomial per vector.
bool transcendental(const Node& n) {
  return n.kind == Node::kUnary && (n.op == "exp" || n.op == "log" || n.op == "tanh" || n.op == "erf" ||
                                    n.op == "sigmoid" || n.op == "log1p" || n.op == "expm1");
}

}  // namespace

// Note [Vector width] (docs/notes/cinn.md): the host's widest vectors only for a kernel
// that calls exp & co (compute-bound: softmax, GELU); 256-bit ones for the others on an
// AVX-512 host, whose loops wait for memory and ran faster with them (the Adam update in
// place, RMSNorm, LayerNorm, softmax's backward).
int kernel_vector_bits(const LoopKernel& k, const Host& h) {
  const bool calls = std::any_of(k.nodes.begin(), k.nodes.end(), transcendental);
  return !h.width_set && h.vec_bits > 256 && !calls ? 256 : h.vec_bits;
}

namespace {

// Emits one loop kernel (the loop IR's schedule in loop_ir.h).
class Emitter : VecMath {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& m, const LoopKernel& k, const Host& h)
      : VecMath(ctx, m, k.dtype == DataType::FLOAT64), k_(k) {
    bf16_ = k.dtype == DataType::BFLOAT16;  // stored as bf16, computed in float32
    st_ = bf16_ ? b_.getInt16Ty() : et_;
    lanes_ = kernel_vector_bits(k, h) / (f64_ ? 64 : 32);
    stream_lanes_ = h.vec_bits / (f64_ ? 64 : 32);
    i64_ = b_.getInt64Ty();
  }

  void emit(const std::string& name, const Host& h) {
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {i64_, i64_, i64_, b_.getPtrTy()}, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    fn_->addFnAttr("target-cpu", h.cpu);
    fn_->addFnAttr("target-features", h.features);
    fn_->addFnAttr("prefer-vector-width", std::to_string(h.vec_bits));
    fn_->addFnAttr("min-legal-vector-width", std::to_string(h.vec_bits));
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    auto args = fn_->arg_begin();
    llvm::Value* r0 = &*args++;
    llvm::Value* r1 = &*args++;
    cols_ = &*args++;
    llvm::Value* bufs = &*args;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
    const size_t nbuf = k_.inputs.size() + k_.outputs.size();
    for (size_t i = 0; i < nbuf; ++i)
      ptrs_.push_back(b_.CreateLoad(b_.getPtrTy(), b_.CreateConstGEP1_64(b_.getPtrTy(), bufs, i)));
    colsf_ = b_.CreateSIToFP(cols_, et_);
    mark_live();
    plan_output_caches();
    plan_streaming(b_.CreateLoad(b_.getPtrTy(), b_.CreateConstGEP1_64(b_.getPtrTy(), bufs, nbuf)));
    r1_ = r1;
    loop(r0, r1, 1, {}, [&](llvm::Value* r, const std::vector<llvm::Value*>&) {
      emit_row(r);
      return std::vector<llvm::Value*>{};
    });
    if (stream_) {  // the non-temporal stores visible to the thread that joins this one
      llvm::BasicBlock* fence = llvm::BasicBlock::Create(ctx_, "sfence", fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "done", fn_);
      b_.CreateCondBr(stream_, fence, done);
      b_.SetInsertPoint(fence);
      b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_sse_sfence));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    }
    b_.CreateRetVoid();
  }

 private:
  using Body = std::function<std::vector<llvm::Value*>(llvm::Value*, const std::vector<llvm::Value*>&)>;

  // for (i = begin; i + step <= end; i += step) carried = body(i, carried); returns the
  // carried values and i at the exit.
  std::vector<llvm::Value*> loop(llvm::Value* begin, llvm::Value* end, int64_t step,
                                 const std::vector<llvm::Value*>& init, const Body& body) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* hdr = llvm::BasicBlock::Create(ctx_, "hdr", fn_);
    auto* bod = llvm::BasicBlock::Create(ctx_, "body", fn_);
    auto* ex = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateBr(hdr);
    b_.SetInsertPoint(hdr);
    llvm::PHINode* i = b_.CreatePHI(i64_, 2);
    i->addIncoming(begin, pre);
    std::vector<llvm::PHINode*> phis;
    std::vector<llvm::Value*> carried;
    for (llvm::Value* v : init) {
      phis.push_back(b_.CreatePHI(v->getType(), 2));
      phis.back()->addIncoming(v, pre);
      carried.push_back(phis.back());
    }
    b_.CreateCondBr(b_.CreateICmpSLE(b_.CreateAdd(i, b_.getInt64(step)), end), bod, ex);
    b_.SetInsertPoint(bod);
    std::vector<llvm::Value*> next = body(i, carried);
    llvm::Value* inext = b_.CreateAdd(i, b_.getInt64(step));
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateBr(hdr);
    i->addIncoming(inext, latch);
    for (size_t j = 0; j < phis.size(); ++j) phis[j]->addIncoming(next[j], latch);
    b_.SetInsertPoint(ex);
    carried.push_back(i);
    return carried;
  }

  // The nodes the outputs read (a rewrite such as one_pass_variance leaves dead ones).
  void mark_live() {
    live_.assign(k_.nodes.size(), false);
    std::vector<int> stack(k_.outputs.begin(), k_.outputs.end());
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (live_[n]) continue;
      live_[n] = true;
      if (k_.nodes[n].a >= 0) stack.push_back(k_.nodes[n].a);
      if (k_.nodes[n].b >= 0) stack.push_back(k_.nodes[n].b);
      if (k_.nodes[n].c >= 0) stack.push_back(k_.nodes[n].c);
    }
  }

  bool row_level(const Node& n) const {
    return n.cls == VClass::kRow || n.cls == VClass::kScalar || n.cls == VClass::kBrow;
  }

  // Whether node `n` (not crossing reductions) calls a transcendental function, and
  // whether `n` is `of` or one of its operands' ancestors.
  bool costly(int n) const {
    const Node& x = k_.nodes[n];
    if (x.kind == Node::kReduce || x.kind == Node::kInput || x.kind == Node::kConst) return false;
    if (transcendental(x)) return true;
    return (x.a >= 0 && costly(x.a)) || (x.b >= 0 && costly(x.b)) || (x.c >= 0 && costly(x.c));
  }
  bool reaches(int of, int n) const {
    if (of == n) return true;
    const Node& x = k_.nodes[of];
    if (x.kind == Node::kReduce || x.kind == Node::kInput) return false;
    return (x.a >= 0 && reaches(x.a, n)) || (x.b >= 0 && reaches(x.b, n)) || (x.c >= 0 && reaches(x.c, n));
  }

  // Softmax's exp(x - max) is the sum's operand and the output's numerator: computed in
  // the sum's loop, it is stored in the output's buffer and read back by the output loop
  // instead of computed again (only for operands with a transcendental: recomputing
  // x * x is cheaper than the extra store and load).
  void plan_output_caches() {
    if (bf16_) return;  // a bf16 buffer would round the cached value: recompute in float32
    std::unordered_set<int> used;
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const Node& n = k_.nodes[i];
      if (!live_[i] || n.kind != Node::kReduce || n.cls != VClass::kRow || k_.nodes[n.a].cls != VClass::kFull ||
          !costly(n.a) || cache_out_.count(n.a))
        continue;
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        if (used.count(static_cast<int>(o)) || k_.nodes[k_.outputs[o]].cls != VClass::kFull || is_bool_out(o) ||
            !reaches(k_.outputs[o], n.a))
          continue;
        cache_out_[n.a] = static_cast<int>(o);
        used.insert(static_cast<int>(o));
        break;
      }
    }
  }
  llvm::Value* cache_ptr(int n, llvm::Value* c) {
    return b_.CreateGEP(st_, ptrs_[k_.inputs.size() + cache_out_.at(n)], b_.CreateAdd(rowoff_, c));
  }

  // Note [Streaming stores] (docs/notes/cinn.md): with bit 0 of the flags word after the
  // buffers set (the run time sets it for calls whose full-size outputs exceed
  // FLAGS_cinn_nontemporal_store_mb), the output loop writes the full outputs with aligned
  // non-temporal stores: no read of the destination lines before writing them (a third of
  // the traffic of a reduce-then-elementwise group), and, when the group sweeps the row
  // first, prefetches the next row of each full input into L2 meanwhile. Not for a group
  // with a cached reduction operand (softmax's exp): its sweep is compute-bound, and
  // ordinary stores drain behind it where streaming ones made the output loop wait for
  // memory (softmax 1.17x slower, streamed from a scratch row or from the output). Only
  // on x86, and when every full output's base has the same offset from the vector's
  // alignment (one masked head aligns them all). Decided once per call; the other path
  // is the ordinary loop.
  void plan_streaming(llvm::Value* flags) {
    std::vector<int> full;
    for (size_t o = 0; o < k_.outputs.size(); ++o)
      if (k_.nodes[k_.outputs[o]].cls == VClass::kFull) full.push_back(static_cast<int>(o));
    if (full.empty() || !cache_out_.empty() || !llvm::Triple(m_.getTargetTriple()).isX86()) return;
    for (int o : full)
      if (is_bool_out(o)) return;  // byte outputs: other alignments and vector sizes
    for (size_t i = 0; i < k_.nodes.size(); ++i)
      sweeps_ |= live_[i] && k_.nodes[i].kind == Node::kReduce && k_.nodes[i].cls == VClass::kRow;
    // Without a sweep, whole-line vectors for the non-temporal stores (Note [Vector width]).
    if (!sweeps_) stream_wide_ = stream_lanes_;
    vbytes_ = (stream_wide_ ? stream_wide_ : lanes_) * (f64_ ? 8 : bf16_ ? 2 : 4);
    llvm::Value* on = b_.CreateICmpNE(b_.CreateAnd(b_.CreatePtrToInt(flags, i64_), b_.getInt64(1)), b_.getInt64(0));
    auto mis = [&](int o) {
      return b_.CreateAnd(b_.CreatePtrToInt(ptrs_[k_.inputs.size() + o], i64_), b_.getInt64(vbytes_ - 1));
    };
    for (int o : full) on = b_.CreateAnd(on, b_.CreateICmpEQ(mis(o), mis(full[0])));
    stream_ = on;
    stream_out_ = full[0];
  }

  // Memory in the kernel's dtype; values in et_ (bf16: float32, widened on load and
  // rounded to nearest even on store, NaN kept, as oar::bfloat16 does).
  llvm::Type* ity(unsigned bits, int w) {
    llvm::Type* t = b_.getIntNTy(bits);
    return w == 1 ? t : static_cast<llvm::Type*>(llvm::FixedVectorType::get(t, w));
  }
  llvm::Align align() const { return llvm::Align(f64_ ? 8 : bf16_ ? 2 : 4); }
  // While mask_ is set (the output loop's tail and alignment head), vector loads and
  // stores are masked: lanes past the range read 0 and write nothing.
  llvm::Value* raw_load(llvm::Type* t, llvm::Value* p, int w) {
    if (mask_ && w > 1) return b_.CreateMaskedLoad(t, p, align(), mask_, llvm::Constant::getNullValue(t));
    return b_.CreateAlignedLoad(t, p, align());
  }
  llvm::Value* mem_load(llvm::Value* p, int w) {
    if (!bf16_) return raw_load(vty(w), p, w);
    llvm::Type* i16 = ity(16, w);
    llvm::Type* i32 = ity(32, w);
    llvm::Value* u = b_.CreateZExt(raw_load(i16, p, w), i32);
    return b_.CreateBitCast(b_.CreateShl(u, splat(b_.getInt32(16), w)), vty(w));
  }
  // nt: an aligned non-temporal vector store (Note [Streaming stores]).
  void mem_store(llvm::Value* v, llvm::Value* p, bool nt = false) {
    auto store = [&](llvm::Value* x) {
      if (mask_ && x->getType()->isVectorTy()) {
        b_.CreateMaskedStore(x, p, align(), mask_);
        return;
      }
      llvm::StoreInst* st = b_.CreateAlignedStore(x, p, nt ? llvm::Align(vbytes_) : align());
      if (nt)
        st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                        llvm::MDNode::get(ctx_, llvm::ConstantAsMetadata::get(b_.getInt32(1))));
    };
    if (!bf16_) {
      store(v);
      return;
    }
    const int w = v->getType()->isVectorTy()
                      ? static_cast<int>(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements())
                      : 1;
    llvm::Type* i16 = ity(16, w);
    llvm::Type* i32 = ity(32, w);
    auto k32 = [&](uint32_t x) { return splat(b_.getInt32(x), w); };
    llvm::Value* u = b_.CreateBitCast(v, i32);
    llvm::Value* hi = b_.CreateLShr(u, k32(16));
    llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(u, b_.CreateAdd(k32(0x7fff), b_.CreateAnd(hi, k32(1)))), k32(16));
    llvm::Value* nan = b_.CreateFCmpUNO(v, v);
    llvm::Value* bits = b_.CreateSelect(nan, b_.CreateOr(hi, k32(0x40)), rounded);
    store(b_.CreateTrunc(bits, i16));
  }

  void emit_row(llvm::Value* r) {
    row_.assign(k_.nodes.size(), nullptr);
    cache_ready_.clear();
    rowoff_ = b_.CreateMul(r, cols_);
    r_ = r;
    // Broadcast inputs (Note [Broadcast inputs]): this row's offset in each, from the
    // loop row's index along the axes the input does not broadcast (constant divisors).
    boff_.assign(k_.inputs.size(), nullptr);
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      if (k_.inputs[i] != VClass::kBcast && k_.inputs[i] != VClass::kBrow) continue;
      llvm::Value* row = b_.getInt64(0);
      for (const BcastTerm& t : bcast_terms(k_, static_cast<int>(i))) {
        llvm::Value* q = t.div == 1 ? r : b_.CreateUDiv(r, b_.getInt64(t.div));
        row = b_.CreateAdd(row, b_.CreateMul(b_.CreateURem(q, b_.getInt64(t.mod)), b_.getInt64(t.stride)));
      }
      boff_[i] = k_.inputs[i] == VClass::kBrow ? row : b_.CreateMul(row, cols_);  // kBrow: one value a row
    }
    sweep_row_values();
    // Reduce trees: every reduction whose operand is computable now (its row-level
    // inputs known) joins one sweep over the row; the next sweep takes the reductions
    // that read the previous ones' results (LayerNorm's variance after its mean).
    for (;;) {
      std::vector<int> batch;
      for (size_t n = 0; n < k_.nodes.size(); ++n)
        if (k_.nodes[n].kind == Node::kReduce && k_.nodes[n].cls == VClass::kRow && live_[n] && !row_[n] &&
            ready(k_.nodes[n].a))
          batch.push_back(static_cast<int>(n));
      if (batch.empty()) break;
      emit_reduces(batch);
      sweep_row_values();
    }
    for (size_t n = 0; n < k_.nodes.size(); ++n)
      OAR_ENFORCE(k_.nodes[n].kind != Node::kReduce || k_.nodes[n].cls == VClass::kCol || !live_[n] || row_[n],
                  Internal, "cinn codegen: reduction n", n, " never became computable");
    bool full_out = false;
    for (size_t o = 0; o < k_.outputs.size(); ++o) {
      const Node& n = k_.nodes[k_.outputs[o]];
      llvm::Value* base = ptrs_[k_.inputs.size() + o];
      if (n.cls == VClass::kFull || n.cls == VClass::kCol) {
        full_out = true;
        continue;
      }
      std::unordered_map<int, llvm::Value*> memo;
      if (is_bool_out(o)) {
        mask_store(eval(k_.outputs[o], nullptr, 1, memo), b_.CreateGEP(b_.getInt8Ty(), base, r));
        continue;
      }
      mem_store(eval(k_.outputs[o], nullptr, 1, memo), b_.CreateGEP(st_, base, r));
    }
    if (!full_out) return;
    auto store_all = [&](llvm::Value* c, int w, bool nt = false) {
      std::unordered_map<int, llvm::Value*> memo;
      for (size_t o = 0; o < k_.outputs.size(); ++o) {
        const Node& n = k_.nodes[k_.outputs[o]];
        if (n.cls == VClass::kCol) {
          // A column reduction (Note [Column reductions]): the run time gives each block
          // of rows its own partial row of C values (0 for sum and mean, -inf for max,
          // inf for min), at this buffer. max/min propagate NaN, as Oar's kernels do.
          llvm::Value* p = b_.CreateGEP(st_, ptrs_[k_.inputs.size() + o], c);
          llvm::Value* acc = mem_load(p, w);
          llvm::Value* v = eval(n.a, c, w, memo);
          mem_store(n.op == "max" || n.op == "min" ? extremum(n.op, acc, v) : b_.CreateFAdd(acc, v), p);
          continue;
        }
        if (n.cls != VClass::kFull) continue;
        llvm::Value* v = eval(k_.outputs[o], c, w, memo);
        if (is_bool_out(o)) {
          mask_store(v, b_.CreateGEP(b_.getInt8Ty(), ptrs_[k_.inputs.size() + o], b_.CreateAdd(rowoff_, c)));
          continue;
        }
        mem_store(v, b_.CreateGEP(st_, ptrs_[k_.inputs.size() + o], b_.CreateAdd(rowoff_, c)), nt);
      }
    };
    // Columns [begin, end), fewer than a vector: one masked vector, so that every element
    // of a full output comes from the vector code (SLEEF's functions and libm's differ in
    // the last bit) wherever the row starts, streamed or not.
    auto masked_from = [&](llvm::Value* begin, llvm::Value* end) {
      llvm::Value* n = b_.CreateSub(end, begin);
      auto* some = llvm::BasicBlock::Create(ctx_, "masked", fn_);
      auto* after = llvm::BasicBlock::Create(ctx_, "masked_done", fn_);
      b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), some, after);
      b_.SetInsertPoint(some);
      std::vector<llvm::Constant*> ids;
      for (int j = 0; j < lanes_; ++j) ids.push_back(b_.getInt64(j));
      mask_ = b_.CreateICmpSLT(llvm::ConstantVector::get(ids), splat_i64(n));
      store_all(begin, lanes_);
      mask_ = nullptr;
      b_.CreateBr(after);
      b_.SetInsertPoint(after);
    };
    llvm::BasicBlock* join = nullptr;
    if (stream_) {  // Note [Streaming stores]: a masked head to the vector alignment, aligned
                    // non-temporal vectors, a masked tail
      auto* streaming = llvm::BasicBlock::Create(ctx_, "stream", fn_);
      auto* plain = llvm::BasicBlock::Create(ctx_, "plain", fn_);
      join = llvm::BasicBlock::Create(ctx_, "stored", fn_);
      b_.CreateCondBr(stream_, streaming, plain);
      b_.SetInsertPoint(streaming);
      const int narrow = stream_wide_ ? std::exchange(lanes_, stream_wide_) : lanes_;
      const int64_t es = f64_ ? 8 : bf16_ ? 2 : 4;
      llvm::Value* addr = b_.CreatePtrToInt(b_.CreateGEP(st_, ptrs_[k_.inputs.size() + stream_out_], rowoff_), i64_);
      llvm::Value* head =
          b_.CreateUDiv(b_.CreateAnd(b_.CreateSub(b_.getInt64(0), addr), b_.getInt64(vbytes_ - 1)), b_.getInt64(es));
      head = b_.CreateSelect(b_.CreateICmpSLT(head, cols_), head, cols_);
      masked_from(b_.getInt64(0), head);
      std::vector<llvm::Value*> body = loop(head, cols_, lanes_, {}, [&](llvm::Value* c, const auto&) {
        if (sweeps_) prefetch_next_row(c, 2);
        store_all(c, lanes_, true);
        return std::vector<llvm::Value*>{};
      });
      masked_from(body.back(), cols_);
      lanes_ = narrow;
      b_.CreateBr(join);
      b_.SetInsertPoint(plain);
    }
    std::vector<llvm::Value*> done = loop(b_.getInt64(0), cols_, lanes_, {}, [&](llvm::Value* c, const auto&) {
      store_all(c, lanes_);
      return std::vector<llvm::Value*>{};
    });
    masked_from(done.back(), cols_);
    if (join) {
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
    }
  }

  // The next row's full inputs at column c into the cache while this row is busy with
  // something else than reading them (Note [Next-row prefetch]): locality 2 (x86's
  // prefetcht1, into L2) in a streaming output loop, 3 (prefetcht0) in a sweep that calls
  // exp & co. The address stays in the thread's rows.
  void prefetch_next_row(llvm::Value* c, int locality) {
    llvm::Value* more = b_.CreateICmpSLT(b_.CreateAdd(r_, b_.getInt64(1)), r1_);
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      if (k_.inputs[i] != VClass::kFull || (i < k_.bool_in.size() && k_.bool_in[i])) continue;
      llvm::Value* next = b_.CreateGEP(st_, ptrs_[i], b_.CreateAdd(b_.CreateAdd(rowoff_, cols_), c));
      // A prefetch cannot fault, but the address stays inside the buffer on the last row.
      llvm::Value* p = b_.CreateSelect(more, next, b_.CreateGEP(st_, ptrs_[i], b_.CreateAdd(rowoff_, c)));
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {p->getType()},
                         {p, b_.getInt32(0), b_.getInt32(locality), b_.getInt32(1)});
    }
  }

  // Whether node `n` can be evaluated now: every reduction it reads (not crossing
  // into another reduction's operand) has been computed for this row.
  bool ready(int n) const {
    if (row_[n]) return true;
    const Node& x = k_.nodes[n];
    if (x.kind == Node::kReduce) return false;
    if (x.kind == Node::kInput || x.kind == Node::kConst) return true;
    return (x.a < 0 || ready(x.a)) && (x.b < 0 || ready(x.b)) && (x.c < 0 || ready(x.c));
  }

  // Row-level values (one per row) whose operands are known: computed once, before the
  // column loops that splat them.
  void sweep_row_values() {
    for (size_t n = 0; n < k_.nodes.size(); ++n) {
      const Node& x = k_.nodes[n];
      if (row_[n] || !live_[n] || !row_level(x) || x.kind == Node::kReduce || !ready(static_cast<int>(n))) continue;
      std::unordered_map<int, llvm::Value*> memo;
      row_[n] = eval_node(static_cast<int>(n), nullptr, 1, memo);
    }
  }

  // One sweep over the row for the reductions `ids`: a main loop of U vectors per step
  // with U independent accumulators per reduction (a single chain is bound by the add's
  // latency: Oar's eager norms keep four), a loop of single vectors, the horizontal
  // reductions, then a scalar tail.
  void emit_reduces(const std::vector<int>& ids) {
    const int nr = static_cast<int>(ids.size());
    // At most 8 chains (16 vector registers on AVX2); one when an operand calls exp & co:
    // its ~12 constants fill the registers, and its length alone hides the add's latency
    // (4 unrolled exps spilled and ran 40% slower than Oar's softmax kernel).
    bool heavy = false;
    for (int id : ids) heavy |= costly(k_.nodes[id].a);
    const int U = heavy ? 1 : std::clamp(8 / nr, 1, 4);
    auto ident = [&](int id) {
      const std::string& op = k_.nodes[id].op;
      return op == "sum" ? 0.0 : op == "max" ? -INFINITY : INFINITY;
    };
    auto combine = [&](int id, llvm::Value* acc, llvm::Value* v) -> llvm::Value* {
      const std::string& op = k_.nodes[id].op;
      if (op == "sum") return b_.CreateFAdd(acc, v);
      return extremum(op, acc, v);  // NaN propagates, as in Oar's max/min kernels
    };
    std::unordered_set<int> stores;  // cached operands this sweep writes
    for (int id : ids) {
      const int a = k_.nodes[id].a;
      if (cache_out_.count(a) && !cache_ready_.count(a)) stores.insert(a);
    }
    // The operands of every reduction at columns c .. c + w - 1 (one memo: a shared
    // operand is computed and stored once).
    auto operands = [&](llvm::Value* c, int w) {
      std::unordered_map<int, llvm::Value*> memo;
      std::vector<llvm::Value*> v;
      std::unordered_set<int> stored;
      for (int id : ids) {
        const int a = k_.nodes[id].a;
        v.push_back(eval(a, c, w, memo));
        if (stores.count(a) && stored.insert(a).second) mem_store(v.back(), cache_ptr(a, c));
      }
      return v;
    };
    // The vector loops keep max/min NaN-free with x86's max (`v > acc ? v : acc`, one
    // vmaxps on the chain) and note NaN in a mask per reduction (vcmpunordps + vorps,
    // off the chain); a NaN anywhere makes the row's result NaN (Oar's row_minmax does the
    // same). The scalar tail combines with `extremum`.
    auto fast = [&](int id, llvm::Value* acc, llvm::Value* v) -> llvm::Value* {
      const std::string& op = k_.nodes[id].op;
      if (op == "sum") return b_.CreateFAdd(acc, v);
      return b_.CreateSelect(op == "max" ? b_.CreateFCmpOGT(v, acc) : b_.CreateFCmpOLT(v, acc), v, acc);
    };
    std::vector<int> ext;  // the max/min reductions (positions in ids): a NaN mask each
    for (int j = 0; j < nr; ++j)
      if (k_.nodes[ids[j]].op != "sum") ext.push_back(j);
    const int ne = static_cast<int>(ext.size());
    std::vector<llvm::Value*> init;
    for (int id : ids)
      for (int u = 0; u < U; ++u) init.push_back(fconst(ident(id), lanes_));
    for (int e = 0; e < ne; ++e)
      init.push_back(llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes_)));
    std::vector<llvm::Value*> big = loop(b_.getInt64(0), cols_, int64_t{U} * lanes_, init,
                                         [&](llvm::Value* c, const std::vector<llvm::Value*>& acc) {
      std::vector<llvm::Value*> next(acc.begin(), acc.end());
      for (int u = 0; u < U; ++u) {
        if (heavy) prefetch_next_row(b_.CreateAdd(c, b_.getInt64(int64_t{u} * lanes_)), 3);
        std::vector<llvm::Value*> v = operands(b_.CreateAdd(c, b_.getInt64(int64_t{u} * lanes_)), lanes_);
        for (int j = 0; j < nr; ++j) next[j * U + u] = fast(ids[j], acc[j * U + u], v[j]);
        for (int e = 0; e < ne; ++e)
          next[nr * U + e] = b_.CreateOr(next[nr * U + e], b_.CreateFCmpUNO(v[ext[e]], v[ext[e]]));
      }
      return next;
    });
    std::vector<llvm::Value*> acc1;
    for (int j = 0; j < nr; ++j) {
      llvm::Value* a = big[j * U];
      for (int u = 1; u < U; ++u) a = fast(ids[j], a, big[j * U + u]);
      acc1.push_back(a);
    }
    for (int e = 0; e < ne; ++e) acc1.push_back(big[nr * U + e]);
    std::vector<llvm::Value*> one = loop(big.back(), cols_, lanes_, acc1, [&](llvm::Value* c, const auto& acc) {
      if (heavy) prefetch_next_row(c, 3);
      std::vector<llvm::Value*> v = operands(c, lanes_), next;
      for (int j = 0; j < nr; ++j) next.push_back(fast(ids[j], acc[j], v[j]));
      for (int e = 0; e < ne; ++e) next.push_back(b_.CreateOr(acc[nr + e], b_.CreateFCmpUNO(v[ext[e]], v[ext[e]])));
      return next;
    });
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();  // a tree over the lanes, like the eager kernels' vector sums
    std::vector<llvm::Value*> hs;
    for (int j = 0; j < nr; ++j) {
      const std::string& op = k_.nodes[ids[j]].op;
      if (op != "sum") {
        const int e = static_cast<int>(std::find(ext.begin(), ext.end(), j) - ext.begin());
        hs.push_back(b_.CreateSelect(b_.CreateOrReduce(one[nr + e]), fconst(NAN, 1), extremum_lanes(op, one[j])));
        continue;
      }
      b_.setFastMathFlags(fmf);
      hs.push_back(b_.CreateFAddReduce(fconst(-0.0, 1), one[j]));
      b_.clearFastMathFlags();
    }
    std::vector<llvm::Value*> tail = loop(one.back(), cols_, 1, hs, [&](llvm::Value* c, const auto& acc) {
      std::vector<llvm::Value*> v = operands(c, 1), next;
      for (int j = 0; j < nr; ++j) next.push_back(combine(ids[j], acc[j], v[j]));
      return next;
    });
    for (int a : stores) cache_ready_.insert(a);
    for (int j = 0; j < nr; ++j) row_[ids[j]] = tail[j];
  }

  // Node `n` at column `c` with `w` lanes (c is null at row level).
  llvm::Value* eval(int n, llvm::Value* c, int w, std::unordered_map<int, llvm::Value*>& memo) {
    if (row_[n]) return splat(row_[n], w);
    auto it = memo.find(n);
    if (it != memo.end()) return it->second;
    if (c && cache_ready_.count(n)) {
      llvm::Value* v = mem_load(cache_ptr(n, c), w);
      memo[n] = v;
      return v;
    }
    llvm::Value* v = eval_node(n, c, w, memo);
    memo[n] = v;
    return v;
  }

  llvm::Value* eval_node(int id, llvm::Value* c, int w, std::unordered_map<int, llvm::Value*>& memo) {
    const Node& n = k_.nodes[id];
    switch (n.kind) {
      case Node::kConst:
        return fconst(n.value, w);
      case Node::kInput:
        return load(n, c, w);
      case Node::kReduce:
        OAR_THROW(Internal, "cinn codegen: reduction used before it is computed");
      case Node::kUnary:
        if (n.op == "first") return first_of(n.a, w);
        return unary(n.op, n.a < 0 ? nullptr : eval(n.a, c, w, memo), w);
      case Node::kBinary:
        if (n.op == "div" && c && row_[n.b]) {
          // Dividing a row by a row-level value (softmax's sum): one reciprocal per row
          // and a multiply per element, as Oar's softmax kernel does (within 1 ulp).
          llvm::Value* inv = b_.CreateFDiv(llvm::ConstantFP::get(et_, 1.0), row_[n.b]);
          return b_.CreateFMul(eval(n.a, c, w, memo), splat(inv, w));
        }
        if (n.op == "erfe") return erf_f32(eval(n.a, c, w, memo), w, eval(n.b, c, w, memo));
        return binary(n.op, eval(n.a, c, w, memo), eval(n.b, c, w, memo));
      case Node::kSelect: {  // the mask is 1 or 0 (Note [Select and masks])
        llvm::Value* m = b_.CreateFCmpUNE(eval(n.a, c, w, memo), fconst(0.0, w));
        return b_.CreateSelect(m, eval(n.b, c, w, memo), eval(n.c, c, w, memo));
      }
    }
    return nullptr;
  }

  // The value of full node `a` at the row's column 0 (0 when the row is empty): the
  // shift of the one-pass variance (loop_ir.h, one_pass_variance).
  llvm::Value* first_of(int a, int w) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* some = llvm::BasicBlock::Create(ctx_, "first", fn_);
    auto* join = llvm::BasicBlock::Create(ctx_, "first_join", fn_);
    b_.CreateCondBr(b_.CreateICmpSGT(cols_, b_.getInt64(0)), some, join);
    b_.SetInsertPoint(some);
    std::unordered_map<int, llvm::Value*> memo;
    llvm::Value* v = eval(a, b_.getInt64(0), 1, memo);
    llvm::BasicBlock* end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* phi = b_.CreatePHI(et_, 2);
    phi->addIncoming(fconst(0.0, 1), pre);
    phi->addIncoming(v, end);
    return splat(phi, w);
  }

  bool is_bool_out(size_t o) const { return o < k_.bool_out.size() && k_.bool_out[o]; }
  // A bool mask in memory (one byte, 0 or 1): loaded as 1.0 or 0.0, stored as v != 0.
  llvm::Value* mask_load(llvm::Value* p, int w) {
    llvm::Type* t = ity(8, w);
    llvm::Value* v = mask_ && w > 1 ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(t, p, llvm::Align(1), mask_,
                                                                                    llvm::Constant::getNullValue(t)))
                                    : b_.CreateAlignedLoad(t, p, llvm::Align(1));
    return b_.CreateUIToFP(b_.CreateICmpNE(v, llvm::Constant::getNullValue(t)), vty(w));
  }
  void mask_store(llvm::Value* v, llvm::Value* p) {
    const int w = v->getType()->isVectorTy()
                      ? static_cast<int>(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements())
                      : 1;
    llvm::Value* bytes = b_.CreateZExt(b_.CreateFCmpUNE(v, fconst(0.0, w)), ity(8, w));
    if (mask_ && w > 1) {
      b_.CreateMaskedStore(bytes, p, llvm::Align(1), mask_);
      return;
    }
    b_.CreateAlignedStore(bytes, p, llvm::Align(1));
  }

  llvm::Value* load(const Node& n, llvm::Value* c, int w) {
    llvm::Value* base = ptrs_[n.input];
    if (n.input < static_cast<int>(k_.bool_in.size()) && k_.bool_in[n.input]) {
      llvm::Type* i8 = b_.getInt8Ty();
      switch (n.cls) {
        case VClass::kFull:
          return mask_load(b_.CreateGEP(i8, base, b_.CreateAdd(rowoff_, c)), w);
        case VClass::kCol:
          return mask_load(b_.CreateGEP(i8, base, c), w);
        case VClass::kBcast:
          return mask_load(b_.CreateGEP(i8, base, b_.CreateAdd(boff_[n.input], c)), w);
        case VClass::kRow:
          return splat(mask_load(b_.CreateGEP(i8, base, r_), 1), w);
        case VClass::kBrow:
          return splat(mask_load(b_.CreateGEP(i8, base, boff_[n.input]), 1), w);
        default:
          return splat(mask_load(base, 1), w);
      }
    }
    switch (n.cls) {
      case VClass::kFull:
        return mem_load(b_.CreateGEP(st_, base, b_.CreateAdd(rowoff_, c)), w);
      case VClass::kCol:
        return mem_load(b_.CreateGEP(st_, base, c), w);
      case VClass::kBcast:
        return mem_load(b_.CreateGEP(st_, base, b_.CreateAdd(boff_[n.input], c)), w);
      case VClass::kRow:
        return splat(mem_load(b_.CreateGEP(st_, base, r_), 1), w);
      case VClass::kBrow:  // Note [Channel reductions]: the row's value from its kept indices
        return splat(mem_load(b_.CreateGEP(st_, base, boff_[n.input]), 1), w);
      default:
        return splat(mem_load(base, 1), w);
    }
  }

  llvm::Value* splat_i64(llvm::Value* v) { return b_.CreateVectorSplat(lanes_, v); }
  // divc (x / the column count) needs the row's columns; the rest is VecMath's.
  llvm::Value* unary(const std::string& op, llvm::Value* x, int w) {
    if (op == "divc") return b_.CreateFDiv(x, splat(colsf_, w));
    return VecMath::unary(op, x, w);
  }

  const LoopKernel& k_;
  bool bf16_ = false;
  llvm::Type* st_ = nullptr;  // the memory's element type (i16 for bf16)
  llvm::Type* i64_ = nullptr;
  int lanes_ = 4;         // kernel_vector_bits
  int stream_lanes_ = 4;  // the host's widest
  int stream_wide_ = 0;   // the streaming output loop's lanes where not lanes_ (0: lanes_)
  llvm::Value* cols_ = nullptr;
  llvm::Value* colsf_ = nullptr;
  llvm::Value* rowoff_ = nullptr;
  llvm::Value* r_ = nullptr;
  std::vector<llvm::Value*> boff_;  // per kBcast input: its row's offset in this row
  std::vector<llvm::Value*> ptrs_;
  std::vector<llvm::Value*> row_;
  std::vector<bool> live_;
  std::unordered_map<int, int> cache_out_;  // node -> the output whose buffer holds it
  llvm::Value* stream_ = nullptr;           // i1: this call streams its full outputs (null: never)
  int stream_out_ = 0;                      // the full output whose row address sets the head
  int64_t vbytes_ = 0;                      // a vector's bytes in memory (the streaming stores' alignment)
  bool sweeps_ = false;                     // the group sweeps each row before its output loop
  llvm::Value* r1_ = nullptr;
  llvm::Value* mask_ = nullptr;             // <lanes x i1> while the output loop's head or tail is emitted
  std::unordered_set<int> cache_ready_;     // cached nodes already stored for this row
};

}  // namespace

std::unique_ptr<llvm::Module> build_module(llvm::LLVMContext& ctx, const LoopKernel& k, const std::string& name,
                                           const Host& h, const llvm::TargetMachine& tm) {
  auto m = std::make_unique<llvm::Module>(name, ctx);
  m->setDataLayout(tm.createDataLayout());
  m->setTargetTriple(tm.getTargetTriple().str());
  Emitter(ctx, *m, k, h).emit(name, h);
  std::string err;
  llvm::raw_string_ostream es(err);
  OAR_ENFORCE(!llvm::verifyModule(*m, &es), Internal, "cinn codegen: invalid LLVM IR for ", name, ": ", es.str());
  return m;
}

}  // namespace oar::cinn
