// Lowering, code generation and the runtime: groups compiled by LLVM equal the unfused
// program on random inputs (float32, float64, several batch sizes through one kernel),
// run-time dims that break an assumed equality raise, a failed compile falls back.
#include <limits>
#include <random>

#include "cinn/codegen/codegen.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"
#include "cinn/schedule/loop_ir.h"
#include "pir/executor/executor.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT
using pir::testing::expect_error;

// RMSNorm, softmax and GELU of (x + b) over [?, 37] (37: a vector body and a scalar tail).
std::string program_text(const char* t) {
  std::string s = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x37xT>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<37xT>)
  %sq = "pd_op.multiply"(%x, %x) : (tensor<?x37xT>, tensor<?x37xT>) -> (tensor<?x37xT>)
  %s = "pd_op.mean"(%sq) {axis = #shape[-1], keepdim = true} : (tensor<?x37xT>) -> (tensor<?x1xT>)
  %e = "pd_op.scale"(%s) {bias = 1e-06, bias_after_scale = true, scale = 1.0} : (tensor<?x1xT>) -> (tensor<?x1xT>)
  %r = "pd_op.rsqrt"(%e) : (tensor<?x1xT>) -> (tensor<?x1xT>)
  %y = "pd_op.multiply"(%x, %r) : (tensor<?x37xT>, tensor<?x1xT>) -> (tensor<?x37xT>)
  %z = "pd_op.multiply"(%y, %w) : (tensor<?x37xT>, tensor<37xT>) -> (tensor<?x37xT>)
  %sm = "pd_op.softmax"(%x) {axis = -1} : (tensor<?x37xT>) -> (tensor<?x37xT>)
  %xb = "pd_op.add"(%x, %w) : (tensor<?x37xT>, tensor<37xT>) -> (tensor<?x37xT>)
  %g = "pd_op.gelu"(%xb) {approximate = false} : (tensor<?x37xT>) -> (tensor<?x37xT>)
  %n = "pd_op.max"(%g) {axis = #shape[-1], keepdim = false} : (tensor<?x37xT>) -> (tensor<?xT>)
  "builtin.output"(%z) {name = "z"} : (tensor<?x37xT>) -> ()
  "builtin.output"(%sm) {name = "sm"} : (tensor<?x37xT>) -> ()
  "builtin.output"(%g) {name = "g"} : (tensor<?x37xT>) -> ()
  "builtin.output"(%n) {name = "n"} : (tensor<?xT>) -> ()
}
)IR";
  for (size_t p; (p = s.find("xT>")) != std::string::npos;) s.replace(p, 3, std::string("x") + t + ">");
  for (size_t p; (p = s.find("<37T>")) != std::string::npos;) s.replace(p, 5, std::string("<37x") + t + ">");
  for (size_t p; (p = s.find("<?T>")) != std::string::npos;) s.replace(p, 4, std::string("<?x") + t + ">");
  return s;
}

Tensor random(const std::vector<int64_t>& dims, DataType dt, uint32_t seed) {
  DenseTensor d(Dims(dims), dt);
  std::mt19937 g(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  for (int64_t i = 0; i < d.numel(); ++i) {
    if (dt == DataType::FLOAT32)
      (i == 0 ? d.alloc<float>() : d.data<float>())[i] = static_cast<float>(n(g));
    else
      (i == 0 ? d.alloc<double>() : d.data<double>())[i] = n(g);
  }
  return Tensor(std::move(d));
}

double at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::FLOAT32 ? t.dense().data<float>()[i] : t.dense().data<double>()[i];
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

class CinnRuntime : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override {
    if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
    FLAGS_enable_cinn_compile_cache = false;  // these tests exercise compiling
  }
  void TearDown() override { FLAGS_enable_cinn_compile_cache = true; }
};

TEST_P(CinnRuntime, FusedGroupsEqualTheUnfusedProgram) {
  const DataType dt = GetParam();
  const std::string text = program_text(dt == DataType::FLOAT32 ? "f32" : "f64");
  auto ref = parse_program(IrContext::global(), text);
  auto fused = parse_program(IrContext::global(), text);
  auto ref_low = run_pipeline_lowering_copy(*ref, "jit-infer");
  reset_cache_stats();
  auto low = run_pipeline_lowering_copy(*fused, "cinn");
  const std::string s = low->str();
  // rms_norm, softmax and gelu+bias+max all read x over [?, 37]: horizontal fusion makes
  // them one kernel (one pass over x; max and both sums in the first sweep).
  EXPECT_EQ(count(s, "kernel.compiled_kernel"), 1) << s;
  EXPECT_EQ(count(s, "kernel.phi_kernel"), 0) << s;
  EXPECT_EQ(cache_stats().fallbacks, 0);
  Executor want(*ref_low), got(*low);
  const double tol = dt == DataType::FLOAT32 ? 3e-6 : 1e-13;
  for (int64_t rows : {1, 5, 64}) {
    std::vector<Tensor> in = {random({rows, 37}, dt, static_cast<uint32_t>(rows)), random({37}, dt, 99)};
    std::vector<Tensor> a = want.run(in), b = got.run(in);
    ASSERT_EQ(a.size(), b.size());
    for (size_t o = 0; o < a.size(); ++o) {
      ASSERT_EQ(a[o].dims(), b[o].dims()) << "output " << o;
      for (int64_t i = 0; i < a[o].numel(); ++i)
        ASSERT_NEAR(at(b[o], i), at(a[o], i), tol * (1 + std::abs(at(a[o], i)))) << "output " << o << " at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CinnRuntime, ::testing::Values(DataType::FLOAT32, DataType::FLOAT64));

TEST(CinnRuntimeErrors, DynamicDimsThatDifferAtRunTimeRaise) {
  if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
  FLAGS_enable_cinn_compile_cache = false;  // no files in the user's cache from tests
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
  expect_error(
      [&] {
    ex.run({random({3, 8}, DataType::FLOAT32, 1), random({4, 8}, DataType::FLOAT32, 2)});
      },
      "multiply: shapes [3, 8] and [4, 8] cannot be broadcast together");  // the unfused ops' error
  FLAGS_enable_cinn_compile_cache = true;
}

TEST(CinnRuntimeErrors, AGroupThatFailsToCompileRunsUnfused) {
  FLAGS_cinn_test_fail_compile = true;
  auto p = parse_program(IrContext::global(), program_text("f32"));
  reset_cache_stats();
  auto low = run_pipeline_lowering_copy(*p, "cinn");
  FLAGS_cinn_test_fail_compile = false;
  EXPECT_EQ(low->str().find("compiled_kernel"), std::string::npos);
  EXPECT_EQ(cache_stats().fallbacks, 1);  // the one (horizontally fused) group
  Executor ex(*low);
  std::vector<Tensor> out = ex.run({random({2, 37}, DataType::FLOAT32, 1), random({37}, DataType::FLOAT32, 2)});
  EXPECT_EQ(out.size(), 4u);
}

// FLAGS_enable_cinn_accuracy_check's comparison: NaN only against NaN, an infinity only
// against the same infinity (the relative test alone accepted 1 vs inf and inf vs -inf).
TEST(CinnRuntimeErrors, AccuracyCheckComparesNanAndInfinities) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double rt = 1e-4, at = 1e-5;
  EXPECT_FALSE(accuracy_differs(1.0, 1.0 + 1e-6, rt, at));
  EXPECT_TRUE(accuracy_differs(1.0, 1.01, rt, at));
  EXPECT_FALSE(accuracy_differs(nan, nan, rt, at));
  EXPECT_TRUE(accuracy_differs(nan, 1.0, rt, at));
  EXPECT_TRUE(accuracy_differs(1.0, nan, rt, at));
  EXPECT_TRUE(accuracy_differs(inf, nan, rt, at));
  EXPECT_FALSE(accuracy_differs(inf, inf, rt, at));
  EXPECT_FALSE(accuracy_differs(-inf, -inf, rt, at));
  EXPECT_TRUE(accuracy_differs(inf, -inf, rt, at));
  EXPECT_TRUE(accuracy_differs(1.0, inf, rt, at));
  EXPECT_TRUE(accuracy_differs(inf, 3e38, rt, at));
  EXPECT_TRUE(accuracy_differs(-1e300, -inf, rt, at));
}

TEST(CinnLoopIr, CanonicalText) {
  auto p = parse_program(IrContext::global(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<8xf32>)
  %m = "pd_op.max"(%x) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>)
  %e = "pd_op.exp"(%d) : (tensor<?x8xf32>) -> (tensor<?x8xf32>)
  %s = "pd_op.mean"(%e) {axis = #shape[-1], keepdim = false} : (tensor<?x8xf32>) -> (tensor<?xf32>)
  %y = "pd_op.scale"(%e) {bias = 1.0, bias_after_scale = true, scale = 2.0} : (tensor<?x8xf32>) -> (tensor<?x8xf32>)
  %z = "pd_op.multiply"(%y, %w) : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<?xf32>) -> ()
  "builtin.output"(%z) {name = "z"} : (tensor<?x8xf32>) -> ()
}
)IR");
  PassManager pm;
  pm.add_pass("cinn_fuse");
  pm.run(*p);
  const Operation* f = nullptr;
  for (Operation* op : *p->block())
    if (op->name() == "cinn.fusion") f = op;
  ASSERT_NE(f, nullptr) << p->str();
  // x (full), w (col); max and the mean (sum / C) per row, the mean's result without
  // keepdim (/drop); scale's constants in hex (exact in the key).
  EXPECT_EQ(lower_fusion(f).text(), R"(float32 space=[-1,8] ref=0
n0:full = in0
n1:col = in1
n2:row = reduce_max(n0)
n3:full = sub(n0, n2)
n4:full = exp(n3)
n5:row = reduce_sum(n4)
n6:row = divc(n5)
n7:scalar = const 0x1p+1
n8:full = mul(n4, n7)
n9:scalar = const 0x1p+0
n10:full = add(n8, n9)
n11:full = mul(n10, n1)
out n6/drop n11)");
}

// Note [Reduction sweeps]: LayerNorm's variance (a sum over x - mean(x)) becomes sums
// the code generator takes in one sweep with the mean (IR in, IR out): the shifted
// one-pass form around the row's first element, renumbered into dependency order; the
// old mean's sum (n1) and d*d (n8) stay, dead (the code generator skips them).
TEST(CinnLoopIr, OnePassVariance) {
  auto p = parse_program(IrContext::global(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %m = "pd_op.mean"(%x) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>)
  %q = "pd_op.multiply"(%d, %d) : (tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>)
  %v = "pd_op.mean"(%q) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %r = "pd_op.rsqrt"(%v) : (tensor<?x1xf32>) -> (tensor<?x1xf32>)
  %y = "pd_op.multiply"(%d, %r) : (tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<?x8xf32>) -> ()
}
)IR");
  PassManager pm;
  pm.add_pass("cinn_fuse");
  pm.run(*p);
  const Operation* f = nullptr;
  for (Operation* op : *p->block())
    if (op->name() == "cinn.fusion") f = op;
  ASSERT_NE(f, nullptr) << p->str();
  EXPECT_EQ(lower_fusion(f).text(), R"(float32 space=[-1,8] ref=0
n0:full = in0
n1:row = reduce_sum(n0)
n2:row = first(n0)
n3:full = sub(n0, n2)
n4:row = reduce_sum(n3)
n5:row = divc(n4)
n6:row = add(n5, n2)
n7:full = sub(n0, n6)
n8:full = mul(n7, n7)
n9:full = mul(n3, n3)
n10:row = reduce_sum(n9)
n11:row = mul(n4, n4)
n12:row = divc(n11)
n13:row = sub(n10, n12)
n14:scalar = const 0x0p+0
n15:row = max(n13, n14)
n16:row = divc(n15)
n17:row = rsqrt(n16)
n18:full = mul(n7, n17)
out n18)");
  // No other shape matches: a variance around a mean of another value stays two sweeps.
  auto q = parse_program(IrContext::global(), R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x8xf32>)
  %z = "builtin.input"() {name = "z"} : () -> (tensor<?x8xf32>)
  %m = "pd_op.mean"(%z) {axis = #shape[-1], keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>)
  %q = "pd_op.multiply"(%d, %d) : (tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>)
  %v = "pd_op.sum"(%q) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<?x8xf32>) -> (tensor<?x1xf32>)
  "builtin.output"(%v) {name = "v"} : (tensor<?x1xf32>) -> ()
}
)IR");
  pm.run(*q);
  f = nullptr;
  for (Operation* op : *q->block())
    if (op->name() == "cinn.fusion") f = op;
  ASSERT_NE(f, nullptr) << q->str();
  LoopKernel k = lower_fusion(f);
  EXPECT_EQ(k.text().find("first"), std::string::npos) << k.text();
}

// Note [erf shares exp]: a loop kernel built node by node (IR in, IR out).
struct KernelBuilder {
  LoopKernel k;
  explicit KernelBuilder(DataType t) {
    k.dtype = t;
    k.space = {-1, 8};
  }
  int add(Node::Kind kind, const char* op, int a, int b, double v = 0, VClass cls = VClass::kFull) {
    Node n;
    n.kind = kind;
    n.op = op;
    n.a = a;
    n.b = b;
    n.value = v;
    n.cls = cls;
    if (kind == Node::kInput) n.input = static_cast<int>(k.inputs.size()), k.inputs.push_back(cls);
    k.nodes.push_back(n);
    return static_cast<int>(k.nodes.size()) - 1;
  }
  int in() { return add(Node::kInput, "", -1, -1); }
  int c(double v) { return add(Node::kConst, "", -1, -1, v, VClass::kScalar); }
  int un(const char* op, int a) { return add(Node::kUnary, op, a, -1); }
  int bin(const char* op, int a, int b) { return add(Node::kBinary, op, a, b); }
  void out(int n) {
    k.outputs.push_back(n);
    k.out_rank_drop.push_back(0);
  }
};

TEST(CinnLoopIr, ErfSharesTheExpOfMinusItsSquare) {
  // GELU's backward as the decomposition writes it: erf(x * (1/sqrt2)) after the density's
  // exp(x * x * -0.5) (the constants rounded to float as the pass's scale gives them).
  KernelBuilder g(DataType::FLOAT32);
  const int x = g.in();
  // (one node per statement: the order of a call's arguments is unspecified)
  const int xx = g.bin("mul", x, x);
  const int half = g.c(-0.5);
  const int e = g.un("exp", g.bin("mul", xx, half));
  const int r2 = g.c(static_cast<float>(M_SQRT1_2));
  const int erf = g.un("erf", g.bin("mul", x, r2));
  g.out(g.bin("add", erf, e));
  EXPECT_EQ(share_erf_exp(g.k), 1);
  EXPECT_EQ(g.k.text(), R"(float32 space=[-1,8] ref=-1
n0:full = in0
n1:full = mul(n0, n0)
n2:scalar = const -0x1p-1
n3:full = mul(n1, n2)
n4:full = exp(n3)
n5:scalar = const 0x1.6a09e6p-1
n6:full = mul(n0, n5)
n7:full = erfe(n6, n4)
n8:full = add(n7, n4)
out n8)");

  // The exp after the erf, and -(z * z) with z = 2x against erf(2 * x): renumbered so the
  // exp comes first; bfloat16 computes in float32 and takes the rewrite too.
  KernelBuilder h(DataType::BFLOAT16);
  const int y = h.in();
  const int two = h.c(2.0);
  const int z = h.bin("mul", two, y);
  const int erf2 = h.un("erf", z);
  const int zz = h.bin("mul", z, z);
  const int e2 = h.un("exp", h.un("neg", zz));
  h.out(h.bin("mul", erf2, e2));
  EXPECT_EQ(share_erf_exp(h.k), 1);
  EXPECT_EQ(h.k.text(), R"(bfloat16 space=[-1,8] ref=-1
n0:full = in0
n1:scalar = const 0x1p+1
n2:full = mul(n1, n0)
n3:full = mul(n2, n2)
n4:full = neg(n3)
n5:full = exp(n4)
n6:full = erfe(n2, n5)
n7:full = mul(n6, n5)
out n7)");

  // Not rewritten: exp(-x^2) beside erf(x / sqrt2) (the wrong coefficient), exp(x^2) (the
  // sign), the square of another value, and float64 (its erf is SLEEF's, no exp inside).
  for (int variant = 0; variant < 4; ++variant) {
    KernelBuilder n(variant == 3 ? DataType::FLOAT64 : DataType::FLOAT32);
    const int a = n.in(), b = n.in();
    const int sq = n.bin("mul", variant == 2 ? b : a, a);
    const int q = n.c(variant == 0 ? -1.0 : variant == 1 ? 0.5 : -0.5);
    const int ex = n.un("exp", n.bin("mul", sq, q));
    const int r = n.c(M_SQRT1_2);
    const int er = n.un("erf", n.bin("mul", a, r));
    n.out(n.bin("add", er, ex));
    const std::string before = n.k.text();
    EXPECT_EQ(share_erf_exp(n.k), 0) << variant;
    EXPECT_EQ(n.k.text(), before) << variant;
  }
}

}  // namespace
}  // namespace oar::cinn
