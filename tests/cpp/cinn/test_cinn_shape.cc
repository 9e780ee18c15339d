// Symbolic shapes (Note [Symbolic shapes] in docs/notes/cinn.md): the analysis's dump
// (program in, annotated program out), DimExpr simplification, the cinn_shape stage's
// group signatures, fusion legality by symbol, one kernel for groups whose dims are
// proven equal, and the run-time check of an assumed equality.
#include <cmath>
#include <random>

#include "cinn/codegen/codegen.h"
#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"
#include "cinn/shape/shape_analysis.h"
#include "pir/executor/executor.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT
using pir::testing::expect_error;

// Broadcast operands (x + y, then a bias), a reduction without keepdim, a reshape (its
// dynamic dim is the element count over the static ones), a transpose and a matmul (its
// contraction dims are assumed equal).
const char* kProgram = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x?x64xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<?x1x64xf32>)
  %b = "builtin.input"() {name = "b"} : () -> (tensor<64xf32>)
  %q = "builtin.input"() {name = "q"} : () -> (tensor<?x?xf32>)
  %k = "builtin.input"() {name = "k"} : () -> (tensor<16x?xf32>)
  %a = "pd_op.add"(%x, %y) : (tensor<?x?x64xf32>, tensor<?x1x64xf32>) -> (tensor<?x?x64xf32>)
  %c = "pd_op.add"(%a, %b) : (tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>)
  %s = "pd_op.mean"(%c) {axis = #shape[-1], keepdim = false} : (tensor<?x?x64xf32>) -> (tensor<?x?xf32>)
  %r = "pd_op.reshape"(%c) {shape = #shape[-1, 32]} : (tensor<?x?x64xf32>) -> (tensor<?x32xf32>)
  %t = "pd_op.transpose"(%k) {perm = #shape[1, 0]} : (tensor<16x?xf32>) -> (tensor<?x16xf32>)
  %m = "pd_op.matmul"(%q, %t) {transpose_x = false, transpose_y = false} : (tensor<?x?xf32>, tensor<?x16xf32>) -> (tensor<?x16xf32>)
  %e = "pd_op.exp"(%m) : (tensor<?x16xf32>) -> (tensor<?x16xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<?x?xf32>) -> ()
  "builtin.output"(%r) {name = "r"} : (tensor<?x32xf32>) -> ()
  "builtin.output"(%e) {name = "e"} : (tensor<?x16xf32>) -> ()
}
)IR";

TEST(CinnShape, TheDumpAnnotatesEveryValueWithItsDimExprs) {
  auto p = parse_program(IrContext::global(), kProgram + 1);
  const char* expected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<?x?x64xf32>)  // [S0, S1, 64]
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<?x1x64xf32>)  // [S0, 1, 64]
  %2 = "builtin.input"() {name = "b"} : () -> (tensor<64xf32>)  // [64]
  %3 = "builtin.input"() {name = "q"} : () -> (tensor<?x?xf32>)  // [S3, S4]
  %4 = "builtin.input"() {name = "k"} : () -> (tensor<16x?xf32>)  // [16, S4]
  %5 = "pd_op.add"(%0, %1) : (tensor<?x?x64xf32>, tensor<?x1x64xf32>) -> (tensor<?x?x64xf32>)  // [S0, S1, 64]
  %6 = "pd_op.add"(%5, %2) : (tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>)  // [S0, S1, 64]
  %7 = "pd_op.mean"(%6) {axis = #shape[-1], keepdim = false} : (tensor<?x?x64xf32>) -> (tensor<?x?xf32>)  // [S0, S1]
  %8 = "pd_op.reshape"(%6) {shape = #shape[-1, 32]} : (tensor<?x?x64xf32>) -> (tensor<?x32xf32>)  // [2*S0*S1, 32]
  %9 = "pd_op.transpose"(%4) {perm = #shape[1, 0]} : (tensor<16x?xf32>) -> (tensor<?x16xf32>)  // [S4, 16]
  %10 = "pd_op.matmul"(%3, %9) {transpose_x = false, transpose_y = false} : (tensor<?x?xf32>, tensor<?x16xf32>) -> (tensor<?x16xf32>)  // [S3, 16]
  %11 = "pd_op.exp"(%10) : (tensor<?x16xf32>) -> (tensor<?x16xf32>)  // [S3, 16]
  "builtin.output"(%7) {name = "s"} : (tensor<?x?xf32>) -> ()
  "builtin.output"(%8) {name = "r"} : (tensor<?x32xf32>) -> ()
  "builtin.output"(%11) {name = "e"} : (tensor<?x16xf32>) -> ()
}
// assumed: S2 == S0 (pd_op.add)
// assumed: S5 == S4 (pd_op.matmul)
)IR";
  EXPECT_EQ(annotate_shapes(*p), expected + 1);
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(CinnShape, DimExprsSimplify) {
  auto p = parse_program(IrContext::global(), "module {\n}\n");
  ShapeAnalysis a(p->block());
  const DimExpr s0 = DimExpr::symbol(0), c64 = DimExpr::constant(64);
  EXPECT_TRUE(DimExpr::mul(DimExpr::constant(2), DimExpr::constant(3)).is_const(6));
  EXPECT_TRUE(DimExpr::add(DimExpr::constant(2), DimExpr::constant(3)).is_const(5));
  const DimExpr prod = DimExpr::mul(s0, c64);
  EXPECT_EQ(prod.kind(), DimExpr::kMul);
  const DimExpr back = DimExpr::div(prod, c64);  // [S0, 64] -> [?, 64]: S0
  ASSERT_EQ(back.kind(), DimExpr::kSym);
  EXPECT_EQ(back.sym(), 0);
  const DimExpr half = DimExpr::div(prod, DimExpr::constant(32));
  EXPECT_EQ(half.kind(), DimExpr::kMul);
  EXPECT_TRUE(half.lhs().is_const(2));
  EXPECT_EQ(DimExpr::broadcast(s0, DimExpr::constant(1)).kind(), DimExpr::kSym);
  EXPECT_EQ(DimExpr::broadcast(s0, s0).kind(), DimExpr::kSym);
  EXPECT_EQ(DimExpr::broadcast(s0, DimExpr::symbol(1)).kind(), DimExpr::kBroadcast);
  EXPECT_EQ(DimExpr::div(s0, DimExpr::constant(3)).kind(), DimExpr::kDiv);  // not exact: kept
  EXPECT_TRUE(DimExpr::mul(DimExpr::constant(0), s0).is_const(0));
  EXPECT_TRUE(DimExpr::add(s0, DimExpr::constant(0)).kind() == DimExpr::kSym);
}

std::string run(const std::string& pipeline, const std::string& input) {
  auto p = parse_program(IrContext::global(), input);
  PassManager pm;
  pm.add_pipeline(pipeline);
  pm.run(*p);
  return p->str();
}

// Two rows whose `?` are different symbols: x [S0, 64] and y = reshape(z) [2*S1, 64].
// Their product's dims are Broadcast(S0, 2*S1) (y may broadcast at run time), so the
// product is not in x's loop space: before the analysis both were "?" and fused, and a
// 1-row x (numpy broadcasting) raised at run time.
std::string two_rows(const char* y_op) {
  return std::string(R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x64xf32>)
  %z = "builtin.input"() {name = "z"} : () -> (tensor<?x)IR") +
         y_op + R"IR(
  %e = "pd_op.exp"(%x) : (tensor<?x64xf32>) -> (tensor<?x64xf32>)
  %m = "pd_op.multiply"(%e, %y) : (tensor<?x64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>)
  %t = "pd_op.tanh"(%m) : (tensor<?x64xf32>) -> (tensor<?x64xf32>)
  %u = "pd_op.sigmoid"(%t) : (tensor<?x64xf32>) -> (tensor<?x64xf32>)
  "builtin.output"(%u) {name = "u"} : (tensor<?x64xf32>) -> ()
}
)IR";
}

TEST(CinnShape, FusionNeedsTheSameSymbolNotJustTwoDynamicDims) {
  const std::string out = run("cinn_fuse", two_rows(R"IR(128xf32>)
  %y = "pd_op.reshape"(%z) {shape = #shape[-1, 64]} : (tensor<?x128xf32>) -> (tensor<?x64xf32>))IR"));
  // tanh + sigmoid fuse (dims [Broadcast(S0, 2*S1), 64]); exp(x) and the multiply stay out.
  EXPECT_EQ(count(out, "\"cinn.fusion\""), 1) << out;
  const size_t f = out.find("\"cinn.fusion\"");
  EXPECT_LT(out.find("\"pd_op.exp\""), f) << out;
  EXPECT_LT(out.find("\"pd_op.multiply\""), f) << out;
  EXPECT_GT(out.find("\"pd_op.tanh\""), f) << out;
  // y's rows the same symbol as x's (relu keeps z's dims; the multiply assumes S1 == S0):
  // one group of all four ops.
  const std::string same = run("cinn_fuse", two_rows(R"IR(64xf32>)
  %y = "pd_op.relu"(%z) : (tensor<?x64xf32>) -> (tensor<?x64xf32>))IR"));
  EXPECT_EQ(count(same, "\"cinn.fusion\""), 1) << same;
  EXPECT_GT(same.find("\"pd_op.exp\""), same.find("\"cinn.fusion\"")) << same;
  EXPECT_GT(same.find("\"pd_op.multiply\""), same.find("\"cinn.fusion\"")) << same;
}

// Horizontal fusion (cinn branch) compares loop spaces the same way: two groups that
// share the weight w merge only when their rows are the same symbol. x [S0, 8] and
// y [S1, 8] are both "[?, 8]" to the types, but nothing says S0 == S1: two kernels
// (merged, one kernel would need equal rows at run time).
TEST(CinnShape, HorizontalFusionNeedsTheSameSymbol) {
  auto program = [](const char* second) {
    return std::string(R"IR(module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<?x8xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<8xf32>)
  %a = "pd_op.multiply"(%x, %w) : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>)
  %sa = "pd_op.sum"(%a) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %b = "pd_op.multiply"()IR") +
           second + R"IR(, %w) : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>)
  %sb = "pd_op.max"(%b) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%sa) {name = "sa"} : (tensor<?x1xf32>) -> ()
  "builtin.output"(%sb) {name = "sb"} : (tensor<?x1xf32>) -> ()
}
)IR";
  };
  const std::string apart = run("cinn_fuse", program("%y"));
  EXPECT_EQ(count(apart, "\"cinn.fusion\""), 2) << apart;
  const std::string merged = run("cinn_fuse", program("%x"));  // both over x's [S0, 8]
  EXPECT_EQ(count(merged, "\"cinn.fusion\""), 1) << merged;
}

TEST(CinnShape, TheShapeStageWritesEachGroupsSignature) {
  const std::string out = run("cinn_fuse,cinn_shape", R"IR(
module {
  %w = "builtin.input"() {name = "w"} : () -> (tensor<?x3xf32>)
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x64xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<?x64xf32>)
  %b = "builtin.input"() {name = "b"} : () -> (tensor<64xf32>)
  %a = "pd_op.add"(%x, %y) : (tensor<?x64xf32>, tensor<?x64xf32>) -> (tensor<?x64xf32>)
  %c = "pd_op.multiply"(%a, %b) : (tensor<?x64xf32>, tensor<64xf32>) -> (tensor<?x64xf32>)
  %s = "pd_op.sum"(%c) {axis = #shape[-1], keepdim = true} : (tensor<?x64xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<?x1xf32>) -> ()
  "builtin.output"(%w) {name = "w"} : (tensor<?x3xf32>) -> ()
}
)IR");
  // w's rows are S0, x's S1, y's S2 (assumed equal to S1 by the add); the signature
  // renames the group's symbols from S0.
  EXPECT_NE(out.find("sym_assumed = \"S2 == S1 (pd_op.add)\""), std::string::npos) << out;
  EXPECT_NE(out.find("sym_shapes = \"S0x64, S0x64, 64 -> S0x1\""), std::string::npos) << out;
}

Tensor random(const std::vector<int64_t>& dims, uint32_t seed) {
  DenseTensor d(Dims(dims), DataType::FLOAT32);
  std::mt19937 g(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  float* p = d.alloc<float>();
  for (int64_t i = 0; i < d.numel(); ++i) p[i] = n(g);
  return Tensor(std::move(d));
}

// The same group in two programs whose symbols are numbered differently: one kernel.
TEST(CinnShape, GroupsWithEqualSymbolicSignaturesShareOneKernel) {
  if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
  FLAGS_enable_cinn_compile_cache = false;
  const char* a = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x?xf32>)
  %e = "pd_op.exp"(%x) : (tensor<?x?xf32>) -> (tensor<?x?xf32>)
  %s = "pd_op.sum"(%e) {axis = #shape[-1], keepdim = true} : (tensor<?x?xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<?x1xf32>) -> ()
}
)IR";
  const char* b = R"IR(
module {
  %u = "builtin.input"() {name = "u"} : () -> (tensor<?x?x?xf32>)
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x?xf32>)
  %e = "pd_op.exp"(%x) : (tensor<?x?xf32>) -> (tensor<?x?xf32>)
  %s = "pd_op.sum"(%e) {axis = #shape[-1], keepdim = true} : (tensor<?x?xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<?x1xf32>) -> ()
  "builtin.output"(%u) {name = "u"} : (tensor<?x?x?xf32>) -> ()
}
)IR";
  forget_memory_cache();
  reset_cache_stats();
  auto pa = parse_program(IrContext::global(), a + 1);
  auto pb = parse_program(IrContext::global(), b + 1);
  auto la = run_pipeline_lowering_copy(*pa, "cinn");
  auto lb = run_pipeline_lowering_copy(*pb, "cinn");
  EXPECT_EQ(cache_stats().compiles, 1);
  EXPECT_EQ(cache_stats().memory_hits, 1);
  // ... and it serves every size.
  Executor ex(*la);
  for (int64_t r : {1, 3, 17})
    for (int64_t c : {1, 5, 40}) {
      Tensor x = random({r, c}, static_cast<uint32_t>(r * 100 + c));
      std::vector<Tensor> out = ex.run({x});
      ASSERT_EQ(out[0].dims(), Dims({r, 1}));
      for (int64_t i = 0; i < r; ++i) {
        double want = 0;
        for (int64_t j = 0; j < c; ++j) want += std::exp(static_cast<double>(x.dense().data<float>()[i * c + j]));
        EXPECT_NEAR(out[0].dense().data<float>()[i], want, 1e-5 * std::abs(want) + 1e-6);
      }
    }
  FLAGS_enable_cinn_compile_cache = true;
}

// x [S0, 8] * y [S1, 8]: the multiply assumed S1 == S0. A 1-row x broadcasts in numpy
// (and in the unfused ops); the kernel raises naming the symbol and the assumption.
// x [1, 8] against y [4, 8]: sum(x * y, -1) as numpy broadcasts it (x's one row for all).
void expect_broadcast_sum(const Tensor& x, const Tensor& y, const Tensor& got) {
  ASSERT_EQ(got.dims(), Dims({4, 1}));
  const float* a = x.dense().data<float>();
  const float* b = y.dense().data<float>();
  for (int r = 0; r < 4; ++r) {
    double want = 0;
    for (int j = 0; j < 8; ++j) want += static_cast<double>(a[j]) * b[r * 8 + j];
    EXPECT_NEAR(got.dense().data<float>()[r], want, 1e-5 * (1 + std::abs(want))) << "row " << r;
  }
}

// Note [Recompilation]: inputs that break the assumption (x with one row) get a kernel
// of their own shape class ([1, 8] x [?, 8]), compiled once and reused, with numpy's
// broadcasting and no warning; shapes the unfused multiply rejects still raise.
TEST(CinnShape, AnAssumedEqualityThatFailsAtRunTimeRecompilesForTheNewShapeClass) {
  if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
  FLAGS_enable_cinn_compile_cache = false;
  auto p = parse_program(IrContext::global(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<?x8xf32>)
  %a = "pd_op.multiply"(%x, %y) : (tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>)
  %b = "pd_op.sum"(%a) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%b) {name = "b"} : (tensor<?x1xf32>) -> ()
}
)IR");
  auto low = run_pipeline_lowering_copy(*p, "cinn");
  ASSERT_NE(low->str().find("kernel.compiled_kernel"), std::string::npos) << low->str();
  Executor ex(*low);
  EXPECT_EQ(ex.run({random({4, 8}, 1), random({4, 8}, 2)})[0].dims(), Dims({4, 1}));
  reset_cache_stats();
  const Tensor x = random({1, 8}, 1), y = random({4, 8}, 2);
  ::testing::internal::CaptureStderr();
  const Tensor got = ex.run({x, y})[0];
  expect_broadcast_sum(x, y, ex.run({x, y})[0]);
  const std::string err = ::testing::internal::GetCapturedStderr();
  expect_broadcast_sum(x, y, got);
  const CacheStats s = cache_stats();
  EXPECT_EQ(s.recompiles, 1);
  EXPECT_EQ(s.class_hits, 1);
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.shape_fallbacks, 0);
  EXPECT_EQ(err.find("warning"), std::string::npos) << err;
  // Shapes the unfused multiply cannot broadcast: its own error, naming it and the shapes.
  expect_error(
      [&] {
    ex.run({random({3, 8}, 1), random({4, 8}, 2)});
      },
      "multiply: shapes [3, 8] and [4, 8] cannot be broadcast together");
  FLAGS_enable_cinn_compile_cache = true;
}

// The same check on kernels compiled on compile threads (the cinn branch's parallel
// compilation): the signature and the assumptions travel with each prepared group.
TEST(CinnShape, KernelsCompiledOnThreadsKeepTheSymbolChecks) {
  if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
  FLAGS_enable_cinn_compile_cache = false;
  const int threads = FLAGS_cinn_compile_thread_num;
  FLAGS_cinn_compile_thread_num = 2;
  forget_memory_cache();  // both groups compiled here, not found from earlier tests
  reset_cache_stats();
  auto p = parse_program(IrContext::global(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<?x8xf32>)
  %z = "builtin.input"() {name = "z"} : () -> (tensor<?x5xf32>)
  %a = "pd_op.multiply"(%x, %y) : (tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>)
  %b = "pd_op.sum"(%a) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %e = "pd_op.exp"(%z) : (tensor<?x5xf32>) -> (tensor<?x5xf32>)
  %m = "pd_op.max"(%e) {axis = #shape[-1], keepdim = true} : (tensor<?x5xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%b) {name = "b"} : (tensor<?x1xf32>) -> ()
  "builtin.output"(%m) {name = "m"} : (tensor<?x1xf32>) -> ()
}
)IR");
  auto low = run_pipeline_lowering_copy(*p, "cinn");
  EXPECT_EQ(count(low->str(), "kernel.compiled_kernel"), 2) << low->str();
  EXPECT_EQ(cache_stats().compile_threads, 2);
  Executor ex(*low);
  EXPECT_EQ(ex.run({random({4, 8}, 1), random({4, 8}, 2), random({3, 5}, 3)})[1].dims(), Dims({3, 1}));
  const Tensor x = random({1, 8}, 1), y = random({4, 8}, 2);
  ::testing::internal::CaptureStderr();
  const std::vector<Tensor> out = ex.run({x, y, random({3, 5}, 3)});
  const std::string err = ::testing::internal::GetCapturedStderr();
  expect_broadcast_sum(x, y, out[0]);
  EXPECT_EQ(out[1].dims(), Dims({3, 1}));
  // the broken symbol was seen: the call got a kernel of its own class (Note [Recompilation])
  EXPECT_EQ(cache_stats().recompiles, 1);
  EXPECT_EQ(cache_stats().shape_fallbacks, 0);
  EXPECT_EQ(err.find("warning"), std::string::npos) << err;
  FLAGS_cinn_compile_thread_num = threads;
  FLAGS_enable_cinn_compile_cache = true;
}

}  // namespace
}  // namespace oar::cinn
