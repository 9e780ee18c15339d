// Note [Lowering for a place] (pir/transforms/inplace_lower.cc): a program lowered for a
// plugin device takes that device's kernels and the CPU's through the fallback for the
// rest, as eager dispatch does; DRR's require_kernels asks the same question; the
// executor runs the result on the device, moving parameters there once.
#include <gflags/gflags.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "backends/include/oar/device_ext.h"
#include "backends/runtime/device_manager.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "pir/drr/drr.h"
#include "pir/executor/executor.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "pir/transforms/passes.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {

using testing::ctx;
using testing::expect_error;

std::atomic<int> g_h2d{0};

// Device type "lower_dev": the CPU's table underneath (its memory is host memory, so the
// CPU's kernels can stand in for its own), counting host-to-device copies. It has an
// `exp` kernel and `fused_linear`; multiply, scale, add and full have none.
Place lower_dev() {
  static const Place place = [] {
    static const OAR_DeviceInterface cpu = backends::DeviceManager::instance().interface("cpu");
    OAR_DeviceInterface table = cpu;
    table.memory_copy_h2d = [](const OAR_Device* d, void* dst, const void* src, size_t n) {
      ++g_h2d;
      return cpu.memory_copy_h2d(d, dst, src, n);
    };
    OAR_DeviceRegistration reg{};
    reg.struct_size = sizeof(reg);
    reg.version = {sizeof(OAR_DeviceAbiVersion), OAR_DEVICE_ABI_VERSION_MAJOR, OAR_DEVICE_ABI_VERSION_MINOR};
    reg.device_type = "lower_dev";
    reg.interface = &table;
    backends::DeviceManager::instance().register_device(reg);
    KernelRegistry& r = KernelRegistry::instance();
    for (const char* k : {"exp", "fused_linear"})
      r.register_kernel(k, "lower_dev", DataType::FLOAT32, r.find(k, DeviceType::kCPU, DataType::FLOAT32));
    return CustomPlace("lower_dev", 0);
  }();
  return place;
}

// FLAGS_enable_api_kernel_fallback off for one scope.
struct NoFallback {
  NoFallback() { gflags::SetCommandLineOption("enable_api_kernel_fallback", "false"); }
  ~NoFallback() { gflags::SetCommandLineOption("enable_api_kernel_fallback", "true"); }
};

// out = exp(scale(exp(x) * w) + full(2)): exp runs on the device, the rest falls back.
const char* kProgram = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<?x3xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<3xf32>)
  %e = "pd_op.exp"(%x) : (tensor<?x3xf32>) -> (tensor<?x3xf32>)
  %m = "pd_op.multiply"(%e, %w) : (tensor<?x3xf32>, tensor<3xf32>) -> (tensor<?x3xf32>)
  %s = "pd_op.scale"(%m) {bias = 1.0, scale = 0.5} : (tensor<?x3xf32>) -> (tensor<?x3xf32>)
  %f = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 2.0, place = #place<cpu>, shape = #shape[3]} : () -> (tensor<3xf32>)
  %a = "pd_op.add"(%s, %f) : (tensor<?x3xf32>, tensor<3xf32>) -> (tensor<?x3xf32>)
  %o = "pd_op.exp"(%a) : (tensor<?x3xf32>) -> (tensor<?x3xf32>)
  "builtin.output"(%o) {name = "out"} : (tensor<?x3xf32>) -> ()
}
)IR";

std::unique_ptr<Program> program_with_w() {
  auto p = parse_program(ctx(), kProgram + 1);
  auto w = std::make_shared<DenseTensor>(Dims{3}, DataType::FLOAT32);
  w->alloc();
  for (int i = 0; i < 3; ++i) w->data<float>()[i] = 0.25f * static_cast<float>(i + 1);
  p->set_parameter("w", w);
  return p;
}

std::string lowered_for(const Place& place, const std::string& input) {
  auto p = parse_program(ctx(), input);
  PassManager pm;
  pm.set_place(place);
  pm.add_pass("lower_to_kernel");
  pm.run(*p);
  return p->str();
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t i = s.find(needle); i != std::string::npos; i = s.find(needle, i + 1)) ++n;
  return n;
}

std::vector<float> host_values(const Tensor& t) {
  DenseTensor h(t.dims(), t.dtype(), CPUPlace());
  h.alloc();
  copy_into(t.dense(), &h);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

TEST(PirLowerPlace, DeviceKernelsElseTheCpuThroughTheFallback) {
  const std::string cpu = lowered_for(CPUPlace(), kProgram + 1);
  EXPECT_EQ(count(cpu, "#kernel_key<cpu,"), 6u) << cpu;
  const std::string dev = lowered_for(lower_dev(), kProgram + 1);
  // the two exps take lower_dev's kernel; multiply, scale, full and add the CPU's
  EXPECT_EQ(count(dev, "#kernel_key<lower_dev, f32, NCHW>, kernel_name = \"exp\""), 2u) << dev;
  EXPECT_EQ(count(dev, "#kernel_key<cpu,"), 4u) << dev;
  // a creation op's place is where its kernel runs: the CPU here, as its kernel is the CPU's
  EXPECT_EQ(count(dev, "place = #place<cpu>"), 1u) << dev;
  // The registered pass with no place set lowers for the CPU (what pir_opt and the
  // pass tests run).
  auto p = parse_program(ctx(), kProgram + 1);
  PassManager pm;
  pm.add_pass("lower_to_kernel");
  pm.run(*p);
  EXPECT_EQ(p->str(), cpu);
}

TEST(PirLowerPlace, CreationOpsOnTheDeviceTakeItsPlace) {
  const Place dev = lower_dev();
  KernelRegistry& r = KernelRegistry::instance();
  if (!r.find("full", dev.type(), DataType::FLOAT64))
    r.register_kernel("full", "lower_dev", DataType::FLOAT64, r.find("full", DeviceType::kCPU, DataType::FLOAT64));
  const std::string s = lowered_for(dev, R"IR(
module {
  %f = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 2.0, place = #place<cpu>, shape = #shape[2]} : () -> (tensor<2xf64>)
  "builtin.output"(%f) {name = "f"} : (tensor<2xf64>) -> ()
}
)IR" + 1);
  EXPECT_EQ(count(s, "place = #place<lower_dev:0>"), 1u) << s;
  EXPECT_EQ(count(s, "#kernel_key<lower_dev, f64, NCHW>"), 1u) << s;
}

TEST(PirLowerPlace, NoFallbackIsAnErrorNamingTheOp) {
  NoFallback off;
  expect_error([] { lowered_for(lower_dev(), kProgram + 1); },
               "lower_to_kernel: no lower_dev kernel 'multiply' for dtype float32 (op pd_op.multiply), and "
               "FLAGS_enable_api_kernel_fallback is off");
  // on the CPU nothing changes
  EXPECT_EQ(count(lowered_for(CPUPlace(), kProgram + 1), "#kernel_key<cpu,"), 6u);
}

TEST(PirLowerPlace, ExecutorRunsOnTheDeviceAndMovesParametersOnce) {
  auto p = program_with_w();
  Executor cpu_ex(*p);
  Executor dev_ex(*p, lower_dev());
  EXPECT_EQ(dev_ex.place(), lower_dev());
  DenseTensor xd(Dims{2, 3}, DataType::FLOAT32);
  xd.alloc();
  for (int i = 0; i < 6; ++i) xd.data<float>()[i] = 0.1f * static_cast<float>(i) - 0.2f;
  const Tensor x(std::move(xd));
  const std::vector<float> want = host_values(cpu_ex.run({x})[0]);
  for (int i = 0; i < 6; ++i) {  // against the formula in double
    const double xv = 0.1 * i - 0.2, wv = 0.25 * (i % 3 + 1);
    EXPECT_NEAR(want[i], std::exp(0.5 * std::exp(xv) * wv + 1.0 + 2.0), 1e-4);
  }
  std::vector<int> h2d;
  for (int run = 0; run < 3; ++run) {
    const int before = g_h2d.load();
    std::vector<Tensor> out = dev_ex.run({x});  // a host input is copied to the device
    h2d.push_back(g_h2d.load() - before);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].place(), lower_dev());
    const std::vector<float> got = host_values(out[0]);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
  }
  // The first run moves w to the device; later runs copy only their input and the
  // fallback ops' outputs (the same number each run).
  EXPECT_EQ(h2d[0], h2d[1] + 1);
  EXPECT_EQ(h2d[1], h2d[2]);
}

TEST(PirLowerPlace, ExecutorOnTheDeviceRefusesParametersOnAnotherPlace) {
  auto p = program_with_w();
  Executor ex(*p, lower_dev());
  const Tensor x = ops::full({1, 3}, Scalar(0.5), DataType::FLOAT32);
  const std::unordered_map<std::string, Tensor> params = {{"w", ops::full({3}, Scalar(1.0), DataType::FLOAT32)}};
  expect_error([&] { ex.run({x}, &params); },
               "Executor.run: parameter 'w' is on cpu but the program runs on lower_dev:0");
}

TEST(PirLowerPlace, DrrRequireKernelsAsksTheRunPlace) {
  auto build = [] {
    auto p = std::make_unique<Program>(ctx());
    Builder b(ctx(), p->block());
    Value x = b.parameter("x", ctx()->tensor_type(DataType::FLOAT64, {4, 8}));
    Value w = b.parameter("w", ctx()->tensor_type(DataType::FLOAT64, {8, 16}));
    Value bias = b.parameter("b", ctx()->tensor_type(DataType::FLOAT64, {16}));
    Value out = b.op("pd_op.add", {b.op("pd_op.matmul", {x, w}), bias});
    b.build("builtin.output", {out}, {{"name", ctx()->str_attr("y")}}, {});
    return p;
  };
  auto fused = [&](const Place& place) {
    auto p = build();
    PassManager pm;
    pm.set_place(place);
    pm.add_pass("fuse");
    pm.run(*p);
    return p->str().find("pd_op.fused_linear") != std::string::npos;
  };
  lower_dev();
  EXPECT_TRUE(fused(CPUPlace()));
  EXPECT_TRUE(fused(lower_dev()));  // no f64 fused_linear there: the CPU's, through the fallback
  NoFallback off;
  EXPECT_TRUE(fused(CPUPlace()));
  EXPECT_FALSE(fused(lower_dev()));  // no kernel the program could run: the rule does not fire
}

TEST(PirLowerPlace, PipelinesLowerForThePlaceTheyAreGiven) {
  auto p = program_with_w();
  auto lowered = run_pipeline_lowering_copy(*p, "jit-infer", lower_dev());
  EXPECT_EQ(count(lowered->str(), "#kernel_key<lower_dev, f32, NCHW>, kernel_name = \"exp\""), 2u);
  EXPECT_EQ(current_place(), CPUPlace());  // the place is the pipeline's only while it runs
}

}  // namespace
}  // namespace oar::pir
