// The CPU code generator's memory tactics (Notes [Streaming stores], [Next-row
// prefetch] and [Vector width], "exp" in Note [Reduction sweeps], docs/notes/cinn.md):
// the LLVM IR of each kind of group (IR in, LLVM IR checked), and a program's kernels
// equal with and without streaming stores and to the unfused program.
#include <cmath>
#include <random>
#include <string>

#include "cinn/codegen/codegen.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"
#include "cinn/schedule/loop_ir.h"
#include "pir/executor/executor.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/cinn/cinn_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The LLVM IR (before optimization) of the program's only group.
std::string group_ir(const char* text) {
  auto p = test_util::fused(text);
  auto fs = test_util::fusions(*p);
  EXPECT_EQ(fs.size(), 1u) << p->str();
  if (fs.size() != 1) return "";
  return kernel_llvm_ir(lower_fusion(fs[0]), "k");
}

constexpr const char* kRmsNorm = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x37xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<37xf32>)
  %sq = "pd_op.multiply"(%x, %x) : (tensor<?x37xf32>, tensor<?x37xf32>) -> (tensor<?x37xf32>)
  %s = "pd_op.mean"(%sq) {axis = #shape[-1], keepdim = true} : (tensor<?x37xf32>) -> (tensor<?x1xf32>)
  %r = "pd_op.rsqrt"(%s) : (tensor<?x1xf32>) -> (tensor<?x1xf32>)
  %y = "pd_op.multiply"(%x, %r) : (tensor<?x37xf32>, tensor<?x1xf32>) -> (tensor<?x37xf32>)
  %z = "pd_op.multiply"(%y, %w) : (tensor<?x37xf32>, tensor<37xf32>) -> (tensor<?x37xf32>)
  "builtin.output"(%z) {name = "z"} : (tensor<?x37xf32>) -> ()
}
)IR";

constexpr const char* kSoftmax = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x37xf32>)
  %m = "pd_op.max"(%x) {axis = #shape[-1], keepdim = true} : (tensor<?x37xf32>) -> (tensor<?x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<?x37xf32>, tensor<?x1xf32>) -> (tensor<?x37xf32>)
  %e = "pd_op.exp"(%d) : (tensor<?x37xf32>) -> (tensor<?x37xf32>)
  %s = "pd_op.sum"(%e) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<?x37xf32>) -> (tensor<?x1xf32>)
  %y = "pd_op.divide"(%e, %s) : (tensor<?x37xf32>, tensor<?x1xf32>) -> (tensor<?x37xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<?x37xf32>) -> ()
}
)IR";

constexpr const char* kElementwise = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x37xf32>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<37xf32>)
  %a = "pd_op.add"(%x, %w) : (tensor<?x37xf32>, tensor<37xf32>) -> (tensor<?x37xf32>)
  %b = "pd_op.multiply"(%a, %a) : (tensor<?x37xf32>, tensor<?x37xf32>) -> (tensor<?x37xf32>)
  "builtin.output"(%b) {name = "b"} : (tensor<?x37xf32>) -> ()
}
)IR";

// Appended to kRmsNorm: softmax of x and x * (w + w), two more groups over x.
constexpr const char* kSoftmaxAndProduct = R"IR(
  %m = "pd_op.max"(%x) {axis = #shape[-1], keepdim = true} : (tensor<?x37xf32>) -> (tensor<?x1xf32>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<?x37xf32>, tensor<?x1xf32>) -> (tensor<?x37xf32>)
  %e = "pd_op.exp"(%d) : (tensor<?x37xf32>) -> (tensor<?x37xf32>)
  %es = "pd_op.sum"(%e) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<?x37xf32>) -> (tensor<?x1xf32>)
  %sm = "pd_op.divide"(%e, %es) : (tensor<?x37xf32>, tensor<?x1xf32>) -> (tensor<?x37xf32>)
  %a = "pd_op.add"(%w, %w) : (tensor<37xf32>, tensor<37xf32>) -> (tensor<37xf32>)
  %b = "pd_op.multiply"(%x, %a) : (tensor<?x37xf32>, tensor<37xf32>) -> (tensor<?x37xf32>)
  "builtin.output"(%sm) {name = "sm"} : (tensor<?x37xf32>) -> ()
  "builtin.output"(%b) {name = "b"} : (tensor<?x37xf32>) -> ()
)IR";

class CinnTactics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!compiled_with_cinn()) GTEST_SKIP() << "built without LLVM 19";
    if (codegen_target().rfind("x86_64", 0) != 0) GTEST_SKIP() << "streaming stores are x86 only";
  }
};

// Note [Streaming stores]: a reduce-then-elementwise group has a second output loop with
// aligned non-temporal vector stores, chosen at run time from bit 0 of the flags word
// after the buffers, an sfence before returning, and (it sweeps the row first) a
// prefetcht1 of the next row.
TEST_F(CinnTactics, RmsNormStreamsItsOutputAndPrefetchesTheNextRow) {
  const std::string ir = group_ir(kRmsNorm);
  EXPECT_EQ(count(ir, "!nontemporal"), 1) << ir;  // the vector body; the head and tail store plainly
  EXPECT_EQ(count(ir, "call void @llvm.x86.sse.sfence()"), 1) << ir;
  EXPECT_EQ(count(ir, "getelementptr ptr, ptr %3, i64 3"), 1) << ir;  // x, w, z, then the flags word
  EXPECT_EQ(count(ir, ", i32 0, i32 2, i32 1)"), 1) << ir;            // llvm.prefetch, read, L2
  EXPECT_EQ(count(ir, ", i32 0, i32 3, i32 1)"), 0) << ir;
  EXPECT_EQ(count(ir, "label %stream"), 1) << ir;
}

// No sweep before the output loop: streaming stores, nothing to prefetch.
TEST_F(CinnTactics, AnElementwiseGroupStreamsWithoutPrefetch) {
  const std::string ir = group_ir(kElementwise);
  EXPECT_EQ(count(ir, "!nontemporal"), 1) << ir;
  EXPECT_EQ(count(ir, "@llvm.prefetch"), 0) << ir;
}

// Note [Next-row prefetch]: softmax's exp(x - max) is cached in its output and its
// stores stay ordinary (streaming measured slower); its exp sweep prefetches the next
// row into L1 for the next row's max sweep. The exp rounds with 1.5 * 2^23
// (0x4168000000000000 as LLVM prints it), with no clamp, round or float-to-int.
TEST_F(CinnTactics, SoftmaxPrefetchesInItsExpSweepAndKeepsOrdinaryStores) {
  const std::string ir = group_ir(kSoftmax);
  EXPECT_EQ(count(ir, "!nontemporal"), 0) << ir;
  EXPECT_EQ(count(ir, "sfence"), 0) << ir;
  EXPECT_GE(count(ir, ", i32 0, i32 3, i32 1)"), 2) << ir;  // the U-vector loop and the one-vector loop
  EXPECT_EQ(count(ir, ", i32 0, i32 2, i32 1)"), 0) << ir;
  EXPECT_GE(count(ir, "0x4168000000000000"), 2) << ir;
  EXPECT_EQ(count(ir, "roundeven"), 0) << ir;
  EXPECT_EQ(count(ir, "fptosi"), 0) << ir;
}

// Note [Vector width]: on an AVX-512 host at its full width (the target's " w512 "; not
// with OAR_CINN_VECTOR_BITS set), a group without exp & co computes in 256-bit vectors,
// and without a sweep its streaming loop stores whole lines (512-bit); softmax's exp keeps
// 512-bit vectors throughout.
TEST_F(CinnTactics, VectorWidthFollowsTheKernel) {
  if (codegen_target().find(" w512 ") == std::string::npos) GTEST_SKIP() << "not an AVX-512 host at its full width";
  const std::string rms = group_ir(kRmsNorm), ew = group_ir(kElementwise), sm = group_ir(kSoftmax);
  EXPECT_EQ(count(rms, "<16 x float>"), 0) << rms;
  EXPECT_GT(count(rms, "<8 x float>"), 0) << rms;
  const size_t nt = ew.find("!nontemporal");
  ASSERT_NE(nt, std::string::npos) << ew;
  const std::string line = ew.substr(ew.rfind('\n', nt) + 1, nt - ew.rfind('\n', nt));
  EXPECT_NE(line.find("store <16 x float>"), std::string::npos) << line;
  EXPECT_GT(count(ew, "store <8 x float>"), 0) << ew;  // the plain loop
  EXPECT_EQ(count(sm, "load <8 x float>"), 0) << sm;   // (its horizontal sums halve to 8 lanes)
  EXPECT_GT(count(sm, "load <16 x float>"), 0) << sm;
}

Tensor random(const std::vector<int64_t>& dims, uint32_t seed) {
  DenseTensor d(Dims(dims), DataType::FLOAT32);
  std::mt19937 g(seed);
  std::normal_distribution<float> n(0.0f, 2.0f);
  float* p = d.alloc<float>();
  for (int64_t i = 0; i < d.numel(); ++i) p[i] = n(g);
  return Tensor(std::move(d));
}

// The three groups in one program: every kernel equals itself with streaming stores
// (bit for bit) and the unfused program, over row lengths around the vector width and
// the alignment head (1, 3, 15, 17, 37, 1000: rows start at every offset from it).
TEST_F(CinnTactics, StreamedKernelsEqualOrdinaryOnesAndTheUnfusedProgram) {
  const int saved = FLAGS_cinn_nontemporal_store_mb;
  for (int64_t cols : {1, 3, 15, 17, 37, 1000}) {
    std::string text = kRmsNorm;
    text.insert(text.rfind('}'), kSoftmaxAndProduct);
    for (size_t p; (p = text.find("37xf32")) != std::string::npos;) text.replace(p, 6, std::to_string(cols) + "Xf32");
    for (size_t p; (p = text.find("Xf32")) != std::string::npos;) text.replace(p, 4, "xf32");
    auto ref = parse_program(IrContext::global(), text);
    auto fused = parse_program(IrContext::global(), text);
    auto ref_low = run_pipeline_lowering_copy(*ref, "jit-infer");
    auto low = run_pipeline_lowering_copy(*fused, "cinn");
    Executor want(*ref_low), got(*low);
    const std::vector<Tensor> in = {random({23, cols}, static_cast<uint32_t>(cols)), random({cols}, 7)};
    FLAGS_cinn_nontemporal_store_mb = 0;
    const std::vector<Tensor> plain = got.run(in);
    FLAGS_cinn_nontemporal_store_mb = -1;
    const std::vector<Tensor> streamed = got.run(in);
    FLAGS_cinn_nontemporal_store_mb = saved;
    const std::vector<Tensor> unfused = want.run(in);
    ASSERT_EQ(plain.size(), 3u);
    for (size_t o = 0; o < plain.size(); ++o)
      for (int64_t i = 0; i < plain[o].numel(); ++i) {
        const float a = plain[o].dense().data<float>()[i], b = streamed[o].dense().data<float>()[i];
        const float u = unfused[o].dense().data<float>()[i];
        ASSERT_EQ(a, b) << "cols " << cols << " output " << o << " at " << i;
        ASSERT_NEAR(a, u, 3e-6 * (1 + std::abs(u))) << "cols " << cols << " output " << o << " at " << i;
      }
  }
}

}  // namespace
}  // namespace oar::cinn
