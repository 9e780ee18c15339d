// Column reductions (Note [Column reductions] in docs/notes/cinn.md): sums over every
// axis but the last join their producers' group as kCol outputs. The loop IR (IR in, IR
// out), the LLVM kernel against the unfused program across row counts (0, one block, a
// partial last block), and the CUDA C (atomicAdd into the zeroed output) through NVRTC.
#include <random>

#include "cinn/codegen/codegen.h"
#include "cinn/codegen/cuda_codegen.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"
#include "cinn/schedule/loop_ir.h"
#include "pir/executor/executor.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/cinn/cinn_test_util.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

// LayerNorm's parameter gradients: dx-like full output, the weight's and the bias's
// column sums (sum over [0, 1] without keepdim, sum_to [1, 1, C]), one pass over g.
std::string program_text(const char* t) {
  std::string s = R"IR(
module {
  %g = "builtin.input"() {name = "g"} : () -> (tensor<?x3x37xT>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<?x3x37xT>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<37xT>)
  %gx = "pd_op.multiply"(%g, %w) : (tensor<?x3x37xT>, tensor<37xT>) -> (tensor<?x3x37xT>)
  %gy = "pd_op.multiply"(%g, %y) : (tensor<?x3x37xT>, tensor<?x3x37xT>) -> (tensor<?x3x37xT>)
  %dw = "pd_op.sum"(%gy) {axis = #shape[0, 1], dtype = #dtype<undefined>, keepdim = false} : (tensor<?x3x37xT>) -> (tensor<37xT>)
  %db = "pd_op.sum_to"(%g) {shape = #shape[1, 1, 37]} : (tensor<?x3x37xT>) -> (tensor<1x1x37xT>)
  "builtin.output"(%gx) {name = "gx"} : (tensor<?x3x37xT>) -> ()
  "builtin.output"(%dw) {name = "dw"} : (tensor<37xT>) -> ()
  "builtin.output"(%db) {name = "db"} : (tensor<1x1x37xT>) -> ()
}
)IR";
  for (size_t p; (p = s.find("xT>")) != std::string::npos;) s.replace(p, 3, std::string("x") + t + ">");
  for (size_t p; (p = s.find("<37T>")) != std::string::npos;) s.replace(p, 5, std::string("<37x") + t + ">");
  return s;
}

Tensor random(const std::vector<int64_t>& dims, DataType dt, uint32_t seed) {
  DenseTensor d(Dims(dims), dt);
  std::mt19937 g(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  if (dt == DataType::FLOAT32) {
    float* p = d.alloc<float>();
    for (int64_t i = 0; i < d.numel(); ++i) p[i] = static_cast<float>(n(g));
  } else {
    double* p = d.alloc<double>();
    for (int64_t i = 0; i < d.numel(); ++i) p[i] = n(g);
  }
  return Tensor(std::move(d));
}

double at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::FLOAT32 ? t.dense().data<float>()[i] : t.dense().data<double>()[i];
}

const Operation* the_fusion(const Program& p) {
  const Operation* f = nullptr;
  for (const Operation* op : *p.block())
    if (op->name() == "cinn.fusion") f = op;
  return f;
}

// The program of `text` after the fusion pass (its cinn.fusion: the_fusion).
std::unique_ptr<Program> fused_program(const std::string& text) {
  auto p = parse_program(IrContext::global(), text);
  PassManager pm;
  pm.add_pass("cinn_fuse");
  pm.run(*p);
  return p;
}

// The program of `text` lowered without the compiler (jit-infer) and with it (cinn); the
// parsed programs are kept alive with their lowered copies.
struct BothWays {
  std::unique_ptr<Program> ref_src, cinn_src, ref, cinn;
};
BothWays lower_both_ways(const std::string& text) {
  BothWays w;
  w.ref_src = parse_program(IrContext::global(), text);
  w.cinn_src = parse_program(IrContext::global(), text);
  w.ref = run_pipeline_lowering_copy(*w.ref_src, "jit-infer");
  reset_cache_stats();
  w.cinn = run_pipeline_lowering_copy(*w.cinn_src, "cinn");
  return w;
}

// Every output of the compiled program within tol (relative, plus 1) of the reference's.
void expect_outputs_near(const std::vector<Tensor>& want, const std::vector<Tensor>& got, double tol, int64_t batch) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].dims(), got[o].dims()) << "output " << o;
    for (int64_t i = 0; i < want[o].numel(); ++i)
      ASSERT_NEAR(at(got[o], i), at(want[o], i), tol * (1 + std::abs(at(want[o], i))))
          << "batch " << batch << " output " << o << " at " << i;
  }
}

TEST(CinnLoopIr, ColumnReductions) {
  auto p = fused_program(program_text("f32"));
  const Operation* f = the_fusion(*p);
  ASSERT_NE(f, nullptr) << p->str();
  // g * w joins horizontally (it reads g); both sums are kCol reductions and outputs
  // only; dw drops both leading axes (/drop2), db keeps them as ones.
  EXPECT_EQ(lower_fusion(f).text(), R"(float32 space=[-1,3,37] ref=0
n0:full = in0
n1:col = in1
n2:full = in2
n3:full = mul(n0, n1)
n4:full = mul(n0, n2)
n5:col = reduce_sum(n4)
n6:col = reduce_sum(n0)
out n3 n5/drop2 n6)");
}

TEST(CinnLoopIr, ColumnReductionsStayOutsideWhereTheyCannotLower) {
  // A sum over a middle axis (other kept axes than the column max's), a column sum read by
  // a member (max over the rows joins).
  auto p = parse_program(IrContext::global(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x5x6xf32>)
  %a = "pd_op.exp"(%x) : (tensor<4x5x6xf32>) -> (tensor<4x5x6xf32>)
  %m = "pd_op.max"(%a) {axis = #shape[0, 1], keepdim = false} : (tensor<4x5x6xf32>) -> (tensor<6xf32>)
  %s = "pd_op.sum"(%a) {axis = #shape[1], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x5x6xf32>) -> (tensor<4x6xf32>)
  %c = "pd_op.sum"(%a) {axis = #shape[0, 1], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x5x6xf32>) -> (tensor<6xf32>)
  %r = "pd_op.multiply"(%a, %c) : (tensor<4x5x6xf32>, tensor<6xf32>) -> (tensor<4x5x6xf32>)
  "builtin.output"(%m) {name = "m"} : (tensor<6xf32>) -> ()
  "builtin.output"(%s) {name = "s"} : (tensor<4x6xf32>) -> ()
  "builtin.output"(%r) {name = "r"} : (tensor<4x5x6xf32>) -> ()
}
)IR");
  PassManager pm;
  pm.add_pass("cinn_fuse");
  pm.run(*p);
  const std::string s = p->str();
  const size_t body = s.find("cinn.fusion");
  ASSERT_NE(body, std::string::npos) << s;
  // The group is exp, the column max and the column sum; the product stays outside, and
  // the middle sum (col_outer 1) too: one group's column reductions keep the same axes.
  const size_t end = s.find("cinn.yield", body);
  const std::string group = s.substr(body, end - body);
  EXPECT_NE(group.find("pd_op.exp"), std::string::npos) << s;
  EXPECT_NE(group.find("pd_op.sum\"(%"), std::string::npos) << s;
  EXPECT_NE(group.find("pd_op.max"), std::string::npos) << s;
  EXPECT_EQ(group.find("pd_op.multiply"), std::string::npos) << s;
  EXPECT_EQ(group.find("axis = #shape[1]"), std::string::npos) << s;
}

// max, min and mean over the rows of a dynamic batch: `col` reductions of their own op,
// outputs only (the mean divides by the row count at run time: no divc node).
std::string extrema_text(const char* t) {
  std::string s = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x3x37xT>)
  %a = "pd_op.exp"(%x) : (tensor<?x3x37xT>) -> (tensor<?x3x37xT>)
  %mx = "pd_op.max"(%a) {axis = #shape[0, 1], keepdim = false} : (tensor<?x3x37xT>) -> (tensor<37xT>)
  %mn = "pd_op.min"(%x) {axis = #shape[0, 1], keepdim = true} : (tensor<?x3x37xT>) -> (tensor<1x1x37xT>)
  %me = "pd_op.mean"(%a) {axis = #shape[0, 1], keepdim = false} : (tensor<?x3x37xT>) -> (tensor<37xT>)
  "builtin.output"(%mx) {name = "mx"} : (tensor<37xT>) -> ()
  "builtin.output"(%mn) {name = "mn"} : (tensor<1x1x37xT>) -> ()
  "builtin.output"(%me) {name = "me"} : (tensor<37xT>) -> ()
}
)IR";
  for (size_t p; (p = s.find("xT>")) != std::string::npos;) s.replace(p, 3, std::string("x") + t + ">");
  for (size_t p; (p = s.find("<37T>")) != std::string::npos;) s.replace(p, 5, std::string("<37x") + t + ">");
  return s;
}

// Reductions over the middle axes keep the leading ones (col_outer, part of the key):
// sum over axis 1 of [?, 5, 37] and mean over axes 1, 2 of [?, 4, 5, 37] would not share
// a group; here sum and max over axis 1 with keepdim either way.
// A bias's momentum update reads the bias gradient, a column sum: not in the sum's group
// (the sum is complete only after every row), but in a group of its own over [C] with the
// elementwise ops around it. (It used to stay unfused: an op reading a column sum was kept
// out of every group, not only the sum's.)
TEST(CinnPasses, ConsumersOfAColumnSumFuseInTheirOwnGroup) {
  auto p = test_util::fused(R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<16x8xf32>)
  %v = "builtin.input"() {name = "v"} : () -> (tensor<8xf32>)
  %p = "builtin.input"() {name = "p"} : () -> (tensor<8xf32>)
  %mu = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 0.9, place = #place<cpu>, shape = #shape[]} : () -> (tensor<f32>)
  %g = "pd_op.sum"(%x) {axis = #shape[0], dtype = #dtype<undefined>, keepdim = false} : (tensor<16x8xf32>) -> (tensor<8xf32>)
  %vm = "pd_op.multiply"(%v, %mu) : (tensor<8xf32>, tensor<f32>) -> (tensor<8xf32>)
  %vn = "pd_op.add"(%vm, %g) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>)
  %pn = "pd_op.subtract"(%p, %vn) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>)
  "builtin.output"(%vn) {name = "vn"} : (tensor<8xf32>) -> ()
  "builtin.output"(%pn) {name = "pn"} : (tensor<8xf32>) -> ()
}
)IR");
  EXPECT_EQ(p->str(), R"IR(module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<16x8xf32>)
  %1 = "builtin.input"() {name = "v"} : () -> (tensor<8xf32>)
  %2 = "builtin.input"() {name = "p"} : () -> (tensor<8xf32>)
  %3 = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 0.9, place = #place<cpu>, shape = #shape[]} : () -> (tensor<f32>)
  %4 = "cinn.fusion"(%0) ({
    ^bb0(%5: tensor<16x8xf32>):
      %6 = "pd_op.sum"(%5) {axis = #shape[0], dtype = #dtype<undefined>, keepdim = false} : (tensor<16x8xf32>) -> (tensor<8xf32>)
      "cinn.yield"(%6) : (tensor<8xf32>) -> ()
  }) : (tensor<16x8xf32>) -> (tensor<8xf32>)
  %7, %8 = "cinn.fusion"(%1, %3, %4, %2) ({
    ^bb0(%9: tensor<8xf32>, %10: tensor<f32>, %11: tensor<8xf32>, %12: tensor<8xf32>):
      %13 = "pd_op.multiply"(%9, %10) : (tensor<8xf32>, tensor<f32>) -> (tensor<8xf32>)
      %14 = "pd_op.add"(%13, %11) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>)
      %15 = "pd_op.subtract"(%12, %14) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>)
      "cinn.yield"(%14, %15) : (tensor<8xf32>, tensor<8xf32>) -> ()
  }) : (tensor<8xf32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  "builtin.output"(%7) {name = "vn"} : (tensor<8xf32>) -> ()
  "builtin.output"(%8) {name = "pn"} : (tensor<8xf32>) -> ()
}
)IR");
}

TEST(CinnLoopIr, MiddleAxisReductionsKeepTheLeadingAxes) {
  auto p = fused_program(R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x5x37xf32>)
  %a = "pd_op.exp"(%x) : (tensor<?x5x37xf32>) -> (tensor<?x5x37xf32>)
  %s = "pd_op.sum"(%a) {axis = #shape[1], dtype = #dtype<undefined>, keepdim = false} : (tensor<?x5x37xf32>) -> (tensor<?x37xf32>)
  %m = "pd_op.max"(%x) {axis = #shape[-2], keepdim = true} : (tensor<?x5x37xf32>) -> (tensor<?x1x37xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<?x37xf32>) -> ()
  "builtin.output"(%m) {name = "m"} : (tensor<?x1x37xf32>) -> ()
}
)IR");
  const Operation* f = the_fusion(*p);
  ASSERT_NE(f, nullptr) << p->str();
  EXPECT_EQ(lower_fusion(f).text(), R"(float32 space=[-1,5,37] ref=0 col_outer=1
n0:full = in0
n1:full = exp(n0)
n2:col = reduce_sum(n1)
n3:col = reduce_max(n0)
out n2/drop n3)");
}

TEST(CinnLoopIr, ColumnMaxMinMean) {
  auto p = fused_program(extrema_text("f32"));
  const Operation* f = the_fusion(*p);
  ASSERT_NE(f, nullptr) << p->str();
  EXPECT_EQ(lower_fusion(f).text(), R"(float32 space=[-1,3,37] ref=0
n0:full = in0
n1:full = exp(n0)
n2:col = reduce_max(n1)
n3:col = reduce_min(n0)
n4:col = reduce_mean(n1)
out n2/drop2 n3 n4/drop2)");
}

class CinnColumns : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override {
    if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
    FLAGS_enable_cinn_compile_cache = false;
  }
  void TearDown() override { FLAGS_enable_cinn_compile_cache = true; }
};

TEST_P(CinnColumns, KernelEqualsTheUnfusedProgram) {
  const DataType dt = GetParam();
  const std::string text = program_text(dt == DataType::FLOAT32 ? "f32" : "f64");
  const BothWays w = lower_both_ways(text);
  const std::string s = w.cinn->str();
  EXPECT_NE(s.find("kernel.compiled_kernel"), std::string::npos) << s;
  EXPECT_EQ(s.find("sum"), std::string::npos) << s;
  EXPECT_EQ(cache_stats().fallbacks, 0);
  Executor want(*w.ref), got(*w.cinn);
  const double tol = dt == DataType::FLOAT32 ? 2e-5 : 1e-12;
  // 3 rows per batch entry: 0 rows, one partial block, blocks of 64 and a partial one.
  for (int64_t batch : {0, 1, 7, 50}) {
    std::vector<Tensor> in = {random({batch, 3, 37}, dt, static_cast<uint32_t>(batch)), random({batch, 3, 37}, dt, 77),
                              random({37}, dt, 99)};
    ASSERT_NO_FATAL_FAILURE(expect_outputs_near(want.run(in), got.run(in), tol, batch));
  }
}

TEST_P(CinnColumns, MaxMinMeanKernelEqualsTheUnfusedProgram) {
  const DataType dt = GetParam();
  const std::string text = extrema_text(dt == DataType::FLOAT32 ? "f32" : "f64");
  const BothWays w = lower_both_ways(text);
  const std::string s = w.cinn->str();
  EXPECT_NE(s.find("kernel.compiled_kernel"), std::string::npos) << s;
  for (const char* op : {"pd_op.max", "pd_op.min", "pd_op.mean"}) EXPECT_EQ(s.find(op), std::string::npos) << s;
  Executor want(*w.ref), got(*w.cinn);
  const double tol = dt == DataType::FLOAT32 ? 2e-6 : 1e-13;
  // 3 rows per batch entry: one partial block, blocks of 64 and a partial one (0 rows:
  // max raises, test_cinn_column_extrema.py).
  for (int64_t batch : {1, 7, 50}) {
    const std::vector<Tensor> in = {random({batch, 3, 37}, dt, static_cast<uint32_t>(batch))};
    ASSERT_NO_FATAL_FAILURE(expect_outputs_near(want.run(in), got.run(in), tol, batch));
  }
  EXPECT_EQ(cache_stats().fallbacks, 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CinnColumns, ::testing::Values(DataType::FLOAT32, DataType::FLOAT64));

TEST(CinnColumnsCuda, ColumnSumsCompileWithNvrtc) {
  auto p = fused_program(program_text("f32"));
  const Operation* f = the_fusion(*p);
  ASSERT_NE(f, nullptr) << p->str();
  const LoopKernel k = lower_fusion(f);
  const std::string src = cuda_source(k, "cinn_columns");
  EXPECT_NE(src.find("atomicAdd(&out1["), std::string::npos) << src;
  EXPECT_NE(src.find("atomicAdd(&out2["), std::string::npos) << src;
  if (!compiled_with_nvrtc()) GTEST_SKIP() << "built without NVRTC";
  EXPECT_FALSE(nvrtc_compile(src, "cinn_columns", /*cubin=*/true).binary.empty());
}

}  // namespace
}  // namespace oar::cinn
