// The CUDA C generator (cinn/codegen/cuda_codegen.h): the groups of small programs
// (RMSNorm, softmax, LayerNorm, GELU + bias, an Adam update, a no-keepdim reduction,
// a short-row reduction) lowered, emitted as CUDA C and compiled by NVRTC to PTX and an
// sm_90 CUBIN (float32, float64, bfloat16); the source's structure (signature, schedule,
// reduction strategy, sweeps, the one-pass variance) checked.
// No GPU: nothing is launched. Compile times go to the log (the issue's targets: PTX
// ~17 ms, CUBIN ~31 ms per kernel).
#include <algorithm>
#include <cstdio>

#include "cinn/codegen/cuda_codegen.h"
#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/schedule/gpu_schedule.h"
#include "cinn/schedule/loop_ir.h"
#include "pir/pass/pass.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::cinn {
namespace {
using namespace pir;  // NOLINT

const char* kPrograms = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x1000xT>)
  %w = "builtin.input"() {name = "w"} : () -> (tensor<1000xT>)
  %sq = "pd_op.multiply"(%x, %x) : (tensor<?x1000xT>, tensor<?x1000xT>) -> (tensor<?x1000xT>)
  %s = "pd_op.mean"(%sq) {axis = #shape[-1], keepdim = true} : (tensor<?x1000xT>) -> (tensor<?x1xT>)
  %e = "pd_op.scale"(%s) {bias = 1e-06, bias_after_scale = true, scale = 1.0} : (tensor<?x1xT>) -> (tensor<?x1xT>)
  %r = "pd_op.rsqrt"(%e) : (tensor<?x1xT>) -> (tensor<?x1xT>)
  %y = "pd_op.multiply"(%x, %r) : (tensor<?x1000xT>, tensor<?x1xT>) -> (tensor<?x1000xT>)
  %z = "pd_op.multiply"(%y, %w) : (tensor<?x1000xT>, tensor<1000xT>) -> (tensor<?x1000xT>)
  %sm = "pd_op.softmax"(%x) {axis = -1} : (tensor<?x1000xT>) -> (tensor<?x1000xT>)
  %ln, %lm, %lv = "pd_op.layer_norm"(%x, %w, %w) {begin_norm_axis = 1, epsilon = 1e-05} : (tensor<?x1000xT>, tensor<1000xT>, tensor<1000xT>) -> (tensor<?x1000xT>, tensor<?xT>, tensor<?xT>)
  %xb = "pd_op.add"(%x, %w) : (tensor<?x1000xT>, tensor<1000xT>) -> (tensor<?x1000xT>)
  %g = "pd_op.gelu"(%xb) {approximate = false} : (tensor<?x1000xT>) -> (tensor<?x1000xT>)
  %n = "pd_op.max"(%g) {axis = #shape[-1], keepdim = false} : (tensor<?x1000xT>) -> (tensor<?xT>)
  %v = "builtin.input"() {name = "v"} : () -> (tensor<7x64xT>)
  %v2 = "pd_op.exp"(%v) : (tensor<7x64xT>) -> (tensor<7x64xT>)
  %vs = "pd_op.sum"(%v2) {axis = #shape[-1], dtype = #dtype<undefined>, keepdim = true} : (tensor<7x64xT>) -> (tensor<7x1xT>)
  %vd = "pd_op.divide"(%v2, %vs) : (tensor<7x64xT>, tensor<7x1xT>) -> (tensor<7x64xT>)
  "builtin.output"(%z) {name = "z"} : (tensor<?x1000xT>) -> ()
  "builtin.output"(%sm) {name = "sm"} : (tensor<?x1000xT>) -> ()
  "builtin.output"(%ln) {name = "ln"} : (tensor<?x1000xT>) -> ()
  "builtin.output"(%g) {name = "g"} : (tensor<?x1000xT>) -> ()
  "builtin.output"(%n) {name = "n"} : (tensor<?xT>) -> ()
  "builtin.output"(%vd) {name = "vd"} : (tensor<7x64xT>) -> ()
}
)IR";

// An Adam update written as ops (all elementwise: one grid-stride kernel).
const char* kAdam = R"IR(
module {
  %p = "builtin.input"() {name = "p"} : () -> (tensor<64x33xT>)
  %g = "builtin.input"() {name = "g"} : () -> (tensor<64x33xT>)
  %m = "builtin.input"() {name = "m"} : () -> (tensor<64x33xT>)
  %v = "builtin.input"() {name = "v"} : () -> (tensor<64x33xT>)
  %m1 = "pd_op.scale"(%m) {bias = 0.0, bias_after_scale = true, scale = 0.9} : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %g1 = "pd_op.scale"(%g) {bias = 0.0, bias_after_scale = true, scale = 0.1} : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %mn = "pd_op.add"(%m1, %g1) : (tensor<64x33xT>, tensor<64x33xT>) -> (tensor<64x33xT>)
  %v1 = "pd_op.scale"(%v) {bias = 0.0, bias_after_scale = true, scale = 0.999} : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %gg = "pd_op.multiply"(%g, %g) : (tensor<64x33xT>, tensor<64x33xT>) -> (tensor<64x33xT>)
  %g2 = "pd_op.scale"(%gg) {bias = 0.0, bias_after_scale = true, scale = 0.001} : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %vn = "pd_op.add"(%v1, %g2) : (tensor<64x33xT>, tensor<64x33xT>) -> (tensor<64x33xT>)
  %sv = "pd_op.sqrt"(%vn) : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %de = "pd_op.scale"(%sv) {bias = 1e-08, bias_after_scale = true, scale = 1.0} : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %st = "pd_op.divide"(%mn, %de) : (tensor<64x33xT>, tensor<64x33xT>) -> (tensor<64x33xT>)
  %up = "pd_op.scale"(%st) {bias = 0.0, bias_after_scale = true, scale = 0.001} : (tensor<64x33xT>) -> (tensor<64x33xT>)
  %pn = "pd_op.subtract"(%p, %up) : (tensor<64x33xT>, tensor<64x33xT>) -> (tensor<64x33xT>)
  "builtin.output"(%pn) {name = "pn"} : (tensor<64x33xT>) -> ()
  "builtin.output"(%mn) {name = "mn"} : (tensor<64x33xT>) -> ()
  "builtin.output"(%vn) {name = "vn"} : (tensor<64x33xT>) -> ()
}
)IR";

std::string typed(std::string s, const char* t) {
  for (size_t p; (p = s.find("xT>")) != std::string::npos;) s.replace(p, 3, std::string("x") + t + ">");
  if (std::string(t) == "bf16")  // layer_norm has no bf16 kernel: its lines go
    for (size_t p; (p = s.find("%ln")) != std::string::npos;) {
      const size_t b = s.rfind('\n', p), e = s.find('\n', p);
      s.erase(b, e - b);
    }
  return s;
}

// The loop kernels of the program's groups (the cinn stages up to fusion).
std::vector<LoopKernel> groups(const std::string& text) {
  auto p = parse_program(IrContext::global(), text);
  FLAGS_prim_all = true;  // decompose softmax, layer_norm, gelu (the cinn pipeline does)
  PassManager pm;
  pm.add_pipeline("canonicalize,decompose,cse,dce,cinn_fuse");
  pm.run(*p);
  FLAGS_prim_all = false;
  std::vector<LoopKernel> out;
  for (Operation* op : *p->block())
    if (op->name() == kFusionOp) out.push_back(lower_fusion(op));
  return out;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

class CinnCuda : public ::testing::TestWithParam<const char*> {};

TEST_P(CinnCuda, EveryGroupCompilesWithNvrtcAndHasItsSchedulesShape) {
  std::vector<LoopKernel> ks = groups(typed(kPrograms, GetParam()));
  std::vector<LoopKernel> adam = groups(typed(kAdam, GetParam()));
  ASSERT_EQ(adam.size(), 1u);
  ks.push_back(adam[0]);
  // RMSNorm, softmax, LayerNorm and GELU+bias+max read the same x [?, 1000]: one kernel
  // (horizontal fusion, Note [Fusion legality]), its reductions in two sweeps; then the
  // short softmax and Adam.
  const std::string p = GetParam();
  ASSERT_EQ(ks.size(), 3u);
  const std::string t = p == "f32" ? "float" : p == "f64" ? "double" : "unsigned short";  // bf16: its bits
  std::vector<double> ptx_ms, cubin_ms;
  int warp = 0, block = 0, elementwise = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    const LoopKernel& k = ks[i];
    const std::string name = "cinn_test_" + std::to_string(i);
    const std::string src = cuda_source(k, name);
    SCOPED_TRACE(src);
    const GpuSchedule s = gpu_schedule(k);
    // The signature: rows, cols, the inputs (const) then the outputs, in the dtype.
    std::string sig = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s.block) + ") " + name +
                      "(long long rows, long long cols";
    for (size_t j = 0; j < k.inputs.size(); ++j) sig += ", const " + t + "* __restrict__ in" + std::to_string(j);
    for (size_t j = 0; j < k.outputs.size(); ++j) sig += ", " + t + "* __restrict__ out" + std::to_string(j);
    EXPECT_NE(src.find(sig + ") {"), std::string::npos) << sig;
    // Live reductions (the emitter skips and names the dead nodes a rewrite leaves).
    const int reductions = count(k.text(), "= reduce_") - count(src, "dead (reduce_");
    // Every body twice (Note [CUDA vector accesses]): V-wide accesses when cols and the
    // pointers allow, else element by element.
    const std::string V = p == "f64" ? "2" : "4";
    EXPECT_NE(src.find("if (cols % " + V + " == 0 && ((unsigned long long)in0 & "), std::string::npos);
    switch (s.strategy) {
      case GpuSchedule::kElementwise:
        ++elementwise;
        EXPECT_EQ(reductions, 0);
        // grid-stride, the row and column advanced by the stride (no division per element);
        // the vector body's indices in int, taken when n and the grid's overshoot fit (Note
        // [CUDA 32-bit indices]), the scalar body's in long long
        EXPECT_EQ(count(src, "const long long stride = (long long)gridDim.x * blockDim.x * 1;"), 1);
        EXPECT_EQ(count(src, "const int stride = (int)((long long)gridDim.x * blockDim.x * " + V + ");"), 1);
        EXPECT_EQ(count(src, " && n + (long long)gridDim.x * blockDim.x * " + V + " <= 2147483647LL) {"), 1);
        EXPECT_EQ(count(src, "i += stride) {"), 2);
        EXPECT_EQ(count(src, "oar_warp_reduce("), 1);  // the helper only
        break;
      case GpuSchedule::kColumns:
        ADD_FAILURE() << "no column reduction in these models";
        break;
      case GpuSchedule::kWarpPerRow:
        ++warp;
        EXPECT_LE(k.space.back(), 256);
        // the [7, 64] softmax: resident (one chunk of 4, or of 2 in f64, per lane), then
        // the vector and the scalar bodies (Note [CUDA resident rows])
        EXPECT_EQ(count(src, "// the row in registers: 1 chunks of " + V + " per thread"), 1);
        EXPECT_EQ(count(src, "= oar_warp_reduce("), 3 * reductions);
        EXPECT_EQ(count(src, "__syncthreads"), 0);
        break;
      case GpuSchedule::kBlockPerRow:
        ++block;
        // [?, 1000], block 128: resident in 2 chunks of 4 (4 of 2 in f64), the last partial
        EXPECT_NE(src.find("if (cols == 1000LL && blockDim.x == 128) {"), std::string::npos);
        EXPECT_EQ(count(src, "// the row in registers: " + std::string(p == "f64" ? "4" : "2") + " chunks of " + V), 1);
        EXPECT_EQ(count(src, "if (c < cols) {"), 3);  // two sweeps and the stores
        // Each reduction alone through oar_block_reduce or with the rest of its sweep, read
        // back from its 33 values of smem: one pair of barriers per sweep of several (Note
        // [CUDA block reductions]). Per body: sweep 1 merged, sweep 2's one reduction alone;
        // the helper's two barriers.
        EXPECT_EQ(count(src, "= oar_block_reduce(") + count(src, " = smem["), 3 * reductions);
        EXPECT_EQ(count(src, "= oar_block_reduce("), 3);
        EXPECT_EQ(count(src, "__syncthreads();"), 2 + 3 * 2);
        EXPECT_NE(src.find(std::string("__shared__ ") + (p == "f64" ? "double" : "float") + " smem[" +
                           std::to_string(33 * reductions) + "];"),
                  std::string::npos);
        EXPECT_NE(src.find("__shfl_xor_sync"), std::string::npos);
        EXPECT_NE(src.find("for (long long row = blockIdx.x; row < rows; row += gridDim.x)"), std::string::npos);
        // Sweep 1: the sums of x*x and x, the maxes of x and of GELU, and LayerNorm's one-pass
        // variance (bf16: no LayerNorm); sweep 2: the sum of exp(x - max); then the stores.
        EXPECT_EQ(reductions, p == "bf16" ? 4 : 6);
        EXPECT_EQ(count(src, "c < cols; c += group) {"), 3);
        EXPECT_EQ(count(src, "c < cols; c += (long long)group * " + V + ") {"), 3);
        break;
    }
    if (!compiled_with_nvrtc()) continue;
    NvrtcResult ptx = nvrtc_compile(src, name, /*cubin=*/false);
    EXPECT_NE(ptx.binary.find(".entry " + name), std::string::npos);
    EXPECT_NE(ptx.binary.find(".target sm_90"), std::string::npos);
    NvrtcResult cubin = nvrtc_compile(src, name, /*cubin=*/true);
    ASSERT_GE(cubin.binary.size(), 4u);
    EXPECT_EQ(cubin.binary.substr(0, 4), std::string(1, char(0x7f)) + "ELF");  // a CUBIN is an ELF file
    ptx_ms.push_back(ptx.seconds * 1e3);
    cubin_ms.push_back(cubin.seconds * 1e3);
  }
  EXPECT_EQ(block, 1);  // the [?, 1000] group (dynamic rows, 1000 columns)
  EXPECT_EQ(warp, 1);   // the [7, 64] softmax
  EXPECT_EQ(elementwise, 1);
  if (compiled_with_nvrtc()) EXPECT_EQ(compile_cuda(ks[0], "cinn_test_0").substr(1, 3), "ELF");
  if (!compiled_with_nvrtc()) GTEST_SKIP() << "built without NVRTC: the sources were checked, not compiled";
  std::sort(ptx_ms.begin(), ptx_ms.end());
  std::sort(cubin_ms.begin(), cubin_ms.end());
  std::printf("[cinn cuda] %s %s: %zu kernels, NVRTC median PTX %.1f ms, CUBIN %.1f ms\n",
              cuda_codegen_target().c_str(), GetParam(), ptx_ms.size(), ptx_ms[ptx_ms.size() / 2],
              cubin_ms[cubin_ms.size() / 2]);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CinnCuda, ::testing::Values("f32", "f64", "bf16"));

// A variance over dynamic columns: one_pass_variance (reduce_plan.cc) rewrites it into
// sum(Y) and sum(Y*Y), Y = x - first(x), and leaves sum(x) dead. The CUDA C computes both
// sums in one sweep, reads column 0 under `cols > 0`, and skips the dead node.
const char* kVariance = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x?xT>)
  %m = "pd_op.mean"(%x) {axis = #shape[-1], keepdim = true} : (tensor<?x?xT>) -> (tensor<?x1xT>)
  %d = "pd_op.subtract"(%x, %m) : (tensor<?x?xT>, tensor<?x1xT>) -> (tensor<?x?xT>)
  %q = "pd_op.multiply"(%d, %d) : (tensor<?x?xT>, tensor<?x?xT>) -> (tensor<?x?xT>)
  %v = "pd_op.mean"(%q) {axis = #shape[-1], keepdim = true} : (tensor<?x?xT>) -> (tensor<?x1xT>)
  "builtin.output"(%d) {name = "d"} : (tensor<?x?xT>) -> ()
  "builtin.output"(%v) {name = "v"} : (tensor<?x1xT>) -> ()
}
)IR";

TEST_P(CinnCuda, OnePassVarianceIsOneSweepWithFirstAndNoDeadNodes) {
  std::vector<LoopKernel> ks = groups(typed(kVariance, GetParam()));
  ASSERT_EQ(ks.size(), 1u);
  const LoopKernel& k = ks[0];
  ASSERT_NE(k.text().find("first(n"), std::string::npos) << k.text();
  const std::string src = cuda_source(k, "cinn_var");
  SCOPED_TRACE(k.text() + "\n" + src);
  EXPECT_EQ(count(src, "dead (reduce_sum)"), 1);        // the rewritten mean's sum(x)
  // Each in the vector body and the element-by-element one (Note [CUDA vector accesses]),
  // the two combined across the block at once (Note [CUDA block reductions]).
  EXPECT_EQ(count(src, "= oar_block_reduce("), 0);
  EXPECT_EQ(count(src, " = smem["), 4);  // sum(Y), sum(Y*Y)
  EXPECT_EQ(count(src, "__syncthreads();"), 2 + 2 * 2);
  EXPECT_EQ(count(src, "c < cols; c += group) {"), 2);  // one sweep, then the stores
  EXPECT_EQ(count(src, "c < cols; c += (long long)group * "), 2);
  EXPECT_EQ(count(src, "if (cols > 0) {"), 2);
  if (compiled_with_nvrtc()) EXPECT_EQ(compile_cuda(k, "cinn_var").substr(1, 3), "ELF");
}

TEST(CinnCudaNvrtc, BadSourceRaisesWithTheCompilerLog) {
  if (!compiled_with_nvrtc()) GTEST_SKIP() << "built without NVRTC";
  try {
    nvrtc_compile("extern \"C\" __global__ void k() { undefined_thing(); }", "k", true);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("NVRTC cannot compile the CUDA C of k"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("undefined_thing"), std::string::npos) << e.what();
  }
}

TEST(CinnCudaSchedule, LaunchDims) {
  GpuSchedule b;
  b.strategy = GpuSchedule::kBlockPerRow;
  EXPECT_EQ(gpu_launch_dims(b, 5, 4096).grid, 5);
  EXPECT_EQ(gpu_launch_dims(b, 1 << 20, 4096).grid, 32 * 132);
  GpuSchedule w;
  w.strategy = GpuSchedule::kWarpPerRow;
  w.rows_per_block = 8;
  EXPECT_EQ(gpu_launch_dims(w, 17, 64).grid, 3);
  GpuSchedule e;
  EXPECT_EQ(gpu_launch_dims(e, 3, 100).grid, 2);
  EXPECT_EQ(gpu_launch_dims(e, 0, 100).grid, 1);
  // Note [CUDA column reductions]: column blocks of 256 * 4 columns times groups of >= 64
  // rows (32 with float4 atomics); a row kernel with column reductions takes >= 16 rows per block.
  GpuSchedule c;
  c.strategy = GpuSchedule::kColumns;
  EXPECT_EQ(gpu_launch_dims(c, 4096, 4096).grid, 4 * 64);
  EXPECT_EQ(gpu_launch_dims(c, 10, 3000).grid, 3);
  EXPECT_EQ(gpu_launch_dims(c, 1 << 20, 1 << 20).grid, 1024 * 4);  // groups limited by the cap
  // float4 atomics: groups of >= 32 rows
  c.vector_atomics = true;
  EXPECT_EQ(gpu_launch_dims(c, 4096, 4096).grid, 4 * 128);
  EXPECT_EQ(gpu_launch_dims(c, 10, 3000).grid, 3);
  b.columns = true;
  EXPECT_EQ(gpu_launch_dims(b, 4096, 4096).grid, 256);
  EXPECT_EQ(gpu_launch_dims(b, 5, 4096).grid, 1);
}

}  // namespace
}  // namespace oar::cinn
