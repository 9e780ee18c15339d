// The cost a fused kernel gives the thread pool (Note [Fused kernels on the pool] in
// docs/notes/cinn.md): in the pool's units (the calibration's float adds), from the bytes
// its full inputs and outputs stream and its arithmetic per element, so that a GELU
// kernel counts as more work than an add over the same space.
#include <string>
#include <utility>

#include "cinn/runtime/row_folds.h"
#include "cinn/schedule/loop_ir.h"
#include "tests/cpp/cinn/cinn_test_util.h"

namespace oar::cinn {
namespace {

LoopKernel lowered(const std::string& text) {
  auto p = test_util::fused(text.c_str());
  const std::vector<const pir::Operation*> fs = test_util::fusions(*p);
  EXPECT_EQ(fs.size(), 1u) << p->str();
  return lower_fusion(fs.at(0));
}

// x + y, then UNARY of it, over [64, 256] of DT (f32 or f64).
std::string program(const std::string& dt, const std::string& unary) {
  std::string s = R"IR(module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<64x256xDT>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<64x256xDT>)
  %s = "pd_op.add"(%x, %y) : (tensor<64x256xDT>, tensor<64x256xDT>) -> (tensor<64x256xDT>)
  %e = "pd_op.UNARY"(%s) : (tensor<64x256xDT>) -> (tensor<64x256xDT>)
  "builtin.output"(%e) {name = "e"} : (tensor<64x256xDT>) -> ()
}
)IR";
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"DT", dt}, {"UNARY", unary}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  return s;
}

TEST(CinnCost, KernelCostCountsBytesAndArithmetic) {
  const int64_t rows = 64, cols = 256, n = rows * cols;
  // Two float32 inputs and one output, 12 bytes per element: 1.5 adds; the add and the
  // exp 0.1 + 0.5.
  const LoopKernel e32 = lowered(program("f32", "exp"));
  EXPECT_EQ(kernel_cost(e32, rows, cols), static_cast<int64_t>(n * (1.5 + 0.1 + 0.5))) << e32.text();
  // erf costs three times exp (A&S 7.1.26: an exp, a division and a polynomial).
  const LoopKernel r32 = lowered(program("f32", "erf"));
  EXPECT_EQ(kernel_cost(r32, rows, cols), static_cast<int64_t>(n * (1.5 + 0.1 + 1.5))) << r32.text();
  // float64: twice the bytes and half the lanes.
  const LoopKernel e64 = lowered(program("f64", "exp"));
  EXPECT_EQ(kernel_cost(e64, rows, cols), static_cast<int64_t>(n * (3.0 + 0.2 + 1.0))) << e64.text();
  // A GELU-like kernel is well above the element count that the pool was given before.
  EXPECT_GT(kernel_cost(r32, rows, cols), 3 * n);
  EXPECT_EQ(kernel_cost(r32, 0, cols), 0);
  EXPECT_EQ(kernel_cost(r32, rows, 0), 0);
}

TEST(CinnCost, KernelCostOfARowSumIsHalfAnAdd) {
  const char* text = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<64x256xf32>)
  %s = "pd_op.sum"(%x) {axis = #shape[-1], keepdim = true} : (tensor<64x256xf32>) -> (tensor<64x1xf32>)
  "builtin.output"(%s) {name = "s"} : (tensor<64x1xf32>) -> ()
}
)IR";
  const LoopKernel k = lowered(text + 1);
  EXPECT_EQ(kernel_cost(k, 64, 256), 64 * 256 / 2) << k.text();
}

}  // namespace
}  // namespace oar::cinn
