// One test per pass: input program text -> expected output text (golden outputs
// checked by hand when written; regenerate with build/dev/pir/pir_opt --pipeline=P).
#include <algorithm>

#include "pir/ir/printer.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {

std::string run(const std::string& pipeline, const std::string& input) {
  auto p = parse_program(IrContext::global(), input);
  PassManager pm;
  pm.add_pipeline(pipeline);  // a pass list or a registered pipeline's name
  pm.run(*p);
  return p->str();
}

TEST(PirPasses, Dce) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %a = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %b = "pd_op.tanh"(%a) : (tensor<4xf32>) -> (tensor<4xf32>)
  %c = "pd_op.relu"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %u = "pd_op.uniform"() {dtype = #dtype<float32>, max = 1.0, min = -1.0, place = #place<cpu>, seed = 0, shape = #shape[2]} : () -> (tensor<2xf32>)
  "builtin.set_parameter"(%c) {name = "y"} : (tensor<4xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %1 = "pd_op.relu"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  %2 = "pd_op.uniform"() {dtype = #dtype<float32>, max = 1.0, min = -1.0, place = #place<cpu>, seed = 0, shape = #shape[2]} : () -> (tensor<2xf32>)
  "builtin.set_parameter"(%1) {name = "y"} : (tensor<4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dce", input + 1), expected + 1);
}

TEST(PirPasses, Cse) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %y = "builtin.parameter"() {name = "y"} : () -> (tensor<4xf32>)
  %a = "pd_op.add"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %b = "pd_op.add"(%y, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %c = "pd_op.subtract"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %d = "pd_op.subtract"(%y, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %e = "pd_op.scale"(%a) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %f = "pd_op.scale"(%b) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %g = "pd_op.scale"(%b) {bias = 0.0, bias_after_scale = true, scale = 3.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %r1 = "pd_op.uniform"() {dtype = #dtype<float32>, max = 1.0, min = -1.0, place = #place<cpu>, seed = 0, shape = #shape[4]} : () -> (tensor<4xf32>)
  %r2 = "pd_op.uniform"() {dtype = #dtype<float32>, max = 1.0, min = -1.0, place = #place<cpu>, seed = 0, shape = #shape[4]} : () -> (tensor<4xf32>)
  %cond = "builtin.parameter"() {name = "c"} : () -> (tensor<bool>)
  %h = "cf.if"(%cond) ({
  ^bb0:
    %i = "pd_op.add"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
    %j = "pd_op.exp"(%i) : (tensor<4xf32>) -> (tensor<4xf32>)
    "cf.yield"(%j) : (tensor<4xf32>) -> ()
  }, {
  ^bb0:
    %k = "pd_op.exp"(%a) : (tensor<4xf32>) -> (tensor<4xf32>)
    "cf.yield"(%k) : (tensor<4xf32>) -> ()
  }) : (tensor<bool>) -> (tensor<4xf32>)
  %l = "pd_op.exp"(%a) : (tensor<4xf32>) -> (tensor<4xf32>)
  %out = "builtin.combine"(%c, %d, %e, %f, %g, %r1, %r2, %h, %l) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (vec<tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>>)
  %cat = "pd_op.concat"(%out) {axis = 0} : (vec<tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>>) -> (tensor<36xf32>)
  "builtin.output"(%cat) {name = "out"} : (tensor<36xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %1 = "builtin.parameter"() {name = "y"} : () -> (tensor<4xf32>)
  %2 = "pd_op.add"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %3 = "pd_op.subtract"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %4 = "pd_op.subtract"(%1, %0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %5 = "pd_op.scale"(%2) {bias = 0.0, bias_after_scale = true, scale = 2.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %6 = "pd_op.scale"(%2) {bias = 0.0, bias_after_scale = true, scale = 3.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %7 = "pd_op.uniform"() {dtype = #dtype<float32>, max = 1.0, min = -1.0, place = #place<cpu>, seed = 0, shape = #shape[4]} : () -> (tensor<4xf32>)
  %8 = "pd_op.uniform"() {dtype = #dtype<float32>, max = 1.0, min = -1.0, place = #place<cpu>, seed = 0, shape = #shape[4]} : () -> (tensor<4xf32>)
  %9 = "builtin.parameter"() {name = "c"} : () -> (tensor<bool>)
  %10 = "cf.if"(%9) ({
    ^bb0:
      %11 = "pd_op.exp"(%2) : (tensor<4xf32>) -> (tensor<4xf32>)
      "cf.yield"(%11) : (tensor<4xf32>) -> ()
  }, {
    ^bb0:
      %12 = "pd_op.exp"(%2) : (tensor<4xf32>) -> (tensor<4xf32>)
      "cf.yield"(%12) : (tensor<4xf32>) -> ()
  }) : (tensor<bool>) -> (tensor<4xf32>)
  %13 = "pd_op.exp"(%2) : (tensor<4xf32>) -> (tensor<4xf32>)
  %14 = "builtin.combine"(%3, %4, %5, %5, %6, %7, %8, %10, %13) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (vec<tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>>)
  %15 = "pd_op.concat"(%14) {axis = 0} : (vec<tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>>) -> (tensor<36xf32>)
  "builtin.output"(%15) {name = "out"} : (tensor<36xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("cse", input + 1), expected + 1);
}

TEST(PirPasses, Canonicalize) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<2x3xf32>)
  %s = "pd_op.scale"(%x) {bias = 0.0, bias_after_scale = true, scale = 1.0} : (tensor<2x3xf32>) -> (tensor<2x3xf32>)
  %c = "pd_op.cast"(%s) {dtype = #dtype<float32>} : (tensor<2x3xf32>) -> (tensor<2x3xf32>)
  %t1 = "pd_op.transpose"(%c) {perm = #shape[1, 0]} : (tensor<2x3xf32>) -> (tensor<3x2xf32>)
  %t2 = "pd_op.transpose"(%t1) {perm = #shape[1, 0]} : (tensor<3x2xf32>) -> (tensor<2x3xf32>)
  %r1 = "pd_op.reshape"(%t2) {shape = #shape[6]} : (tensor<2x3xf32>) -> (tensor<6xf32>)
  %r2 = "pd_op.reshape"(%r1) {shape = #shape[3, 2]} : (tensor<6xf32>) -> (tensor<3x2xf32>)
  %n1 = "pd_op.neg"(%r2) : (tensor<3x2xf32>) -> (tensor<3x2xf32>)
  %n2 = "pd_op.neg"(%n1) : (tensor<3x2xf32>) -> (tensor<3x2xf32>)
  %k = "builtin.constant"() {value = #dense<tensor<f32>, "0x0000803f">} : () -> (tensor<f32>)
  %m = "pd_op.multiply"(%k, %n2) : (tensor<f32>, tensor<3x2xf32>) -> (tensor<3x2xf32>)
  %l = "builtin.combine"(%m, %n2) : (tensor<3x2xf32>, tensor<3x2xf32>) -> (vec<tensor<3x2xf32>, tensor<3x2xf32>>)
  %p, %q = "builtin.split"(%l) : (vec<tensor<3x2xf32>, tensor<3x2xf32>>) -> (tensor<3x2xf32>, tensor<3x2xf32>)
  "builtin.output"(%p) {name = "p"} : (tensor<3x2xf32>) -> ()
  "builtin.output"(%q) {name = "q"} : (tensor<3x2xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<2x3xf32>)
  %1 = "pd_op.reshape"(%0) {shape = #shape[3, 2]} : (tensor<2x3xf32>) -> (tensor<3x2xf32>)
  %2 = "builtin.constant"() {value = #dense<tensor<f32>, "0x0000803f">} : () -> (tensor<f32>)
  %3 = "pd_op.multiply"(%1, %2) : (tensor<3x2xf32>, tensor<f32>) -> (tensor<3x2xf32>)
  "builtin.output"(%3) {name = "p"} : (tensor<3x2xf32>) -> ()
  "builtin.output"(%1) {name = "q"} : (tensor<3x2xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("canonicalize", input + 1), expected + 1);
}

// A reshape of a reshape that has another use stays a reshape of it: folded into one of
// the transpose, both reshapes would copy the strided view; unfolded, the second is a
// view of the first's contiguous result. A single-use inner reshape still folds.
TEST(PirPasses, CanonicalizeKeepsAReshapeOfASharedReshape) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<2x3x4xf32>)
  %t = "pd_op.transpose"(%x) {perm = #shape[1, 0, 2]} : (tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>)
  %a = "pd_op.reshape"(%t) {shape = #shape[3, 8]} : (tensor<3x2x4xf32>) -> (tensor<3x8xf32>)
  %b = "pd_op.reshape"(%a) {shape = #shape[24]} : (tensor<3x8xf32>) -> (tensor<24xf32>)
  %c = "pd_op.reshape"(%t) {shape = #shape[6, 4]} : (tensor<3x2x4xf32>) -> (tensor<6x4xf32>)
  %d = "pd_op.reshape"(%c) {shape = #shape[4, 6]} : (tensor<6x4xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%a) {name = "a"} : (tensor<3x8xf32>) -> ()
  "builtin.output"(%b) {name = "b"} : (tensor<24xf32>) -> ()
  "builtin.output"(%d) {name = "d"} : (tensor<4x6xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<2x3x4xf32>)
  %1 = "pd_op.transpose"(%0) {perm = #shape[1, 0, 2]} : (tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>)
  %2 = "pd_op.reshape"(%1) {shape = #shape[3, 8]} : (tensor<3x2x4xf32>) -> (tensor<3x8xf32>)
  %3 = "pd_op.reshape"(%2) {shape = #shape[24]} : (tensor<3x8xf32>) -> (tensor<24xf32>)
  %4 = "pd_op.reshape"(%1) {shape = #shape[4, 6]} : (tensor<3x2x4xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%2) {name = "a"} : (tensor<3x8xf32>) -> ()
  "builtin.output"(%3) {name = "b"} : (tensor<24xf32>) -> ()
  "builtin.output"(%4) {name = "d"} : (tensor<4x6xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("canonicalize", input + 1), expected + 1);
}

TEST(PirPasses, ConstantFold) {
  const char* input = R"IR(
module {
  %a = "builtin.constant"() {value = #dense<tensor<2xf32>, "0x0000803f00000040">} : () -> (tensor<2xf32>)
  %b = "builtin.constant"() {value = #dense<tensor<2xf32>, "0x0000404000008040">} : () -> (tensor<2xf32>)
  %s = "pd_op.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)
  %m = "pd_op.multiply"(%s, %s) : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)
  %l = "builtin.combine"(%m, %a) : (tensor<2xf32>, tensor<2xf32>) -> (vec<tensor<2xf32>, tensor<2xf32>>)
  %c = "pd_op.concat"(%l) {axis = 0} : (vec<tensor<2xf32>, tensor<2xf32>>) -> (tensor<4xf32>)
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %y = "pd_op.add"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %f = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 1.0, place = #place<cpu>, shape = #shape[4]} : () -> (tensor<4xf32>)
  "builtin.output"(%y) {name = "y"} : (tensor<4xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.constant"() {value = #dense<tensor<4xf32>, "0x00008041000010420000803f00000040">} : () -> (tensor<4xf32>)
  %1 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %2 = "pd_op.add"(%1, %0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%2) {name = "y"} : (tensor<4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("constant_fold,dce", input + 1), expected + 1);
}

TEST(PirPasses, Inplace) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %a = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %b = "pd_op.sqrt"(%a) : (tensor<4xf32>) -> (tensor<4xf32>)
  %c = "pd_op.add"(%b, %x) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %d = "pd_op.exp"(%c) : (tensor<4xf32>) -> (tensor<4xf32>)
  %e = "pd_op.scale"(%c) {bias = 1.0, bias_after_scale = true, scale = 2.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %r = "pd_op.reshape"(%e) {shape = #shape[2, 2]} : (tensor<4xf32>) -> (tensor<2x2xf32>)
  %f = "pd_op.exp"(%r) : (tensor<2x2xf32>) -> (tensor<2x2xf32>)
  %y = "builtin.parameter"() {name = "y"} : () -> (tensor<4x4xf32>)
  %g = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %h = "pd_op.add"(%g, %y) : (tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>)
  "builtin.output"(%d) {name = "d"} : (tensor<4xf32>) -> ()
  "builtin.output"(%f) {name = "f"} : (tensor<2x2xf32>) -> ()
  "builtin.output"(%h) {name = "h"} : (tensor<4x4xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %1 = "pd_op.exp"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  %2 = "pd_op.sqrt_"(%1) : (tensor<4xf32>) -> (tensor<4xf32>)
  %3 = "pd_op.add_"(%2, %0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %4 = "pd_op.exp"(%3) : (tensor<4xf32>) -> (tensor<4xf32>)
  %5 = "pd_op.scale"(%3) {bias = 1.0, bias_after_scale = true, scale = 2.0} : (tensor<4xf32>) -> (tensor<4xf32>)
  %6 = "pd_op.reshape"(%5) {shape = #shape[2, 2]} : (tensor<4xf32>) -> (tensor<2x2xf32>)
  %7 = "pd_op.exp"(%6) : (tensor<2x2xf32>) -> (tensor<2x2xf32>)
  %8 = "builtin.parameter"() {name = "y"} : () -> (tensor<4x4xf32>)
  %9 = "pd_op.exp"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  %10 = "pd_op.add"(%9, %8) : (tensor<4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>)
  "builtin.output"(%4) {name = "d"} : (tensor<4xf32>) -> ()
  "builtin.output"(%7) {name = "f"} : (tensor<2x2xf32>) -> ()
  "builtin.output"(%10) {name = "h"} : (tensor<4x4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("inplace", input + 1), expected + 1);
}

TEST(PirPasses, LowerToKernel) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<2x3xf32>)
  %i = "builtin.parameter"() {name = "i"} : () -> (tensor<3xi32>)
  %a = "pd_op.add"(%x, %i) : (tensor<2x3xf32>, tensor<3xi32>) -> (tensor<2x3xf32>)
  %r = "pd_op.reshape"(%a) {shape = #shape[3, 2]} : (tensor<2x3xf32>) -> (tensor<3x2xf32>)
  %f = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 2.0, place = #place<cpu>, shape = #shape[2]} : () -> (tensor<2xf64>)
  %e = "pd_op.exp"(%i) : (tensor<3xi32>) -> (tensor<3xf32>)
  "builtin.output"(%r) {name = "r"} : (tensor<3x2xf32>) -> ()
  "builtin.output"(%f) {name = "f"} : (tensor<2xf64>) -> ()
  "builtin.output"(%e) {name = "e"} : (tensor<3xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<2x3xf32>)
  %1 = "builtin.parameter"() {name = "i"} : () -> (tensor<3xi32>)
  %2 = "kernel.phi_kernel"(%1) {dtype = #dtype<float32>, kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "cast", op_name = "pd_op.cast"} : (tensor<3xi32>) -> (tensor<3xf32>)
  %3 = "kernel.phi_kernel"(%0, %2) {kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "add", op_name = "pd_op.add"} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>)
  %4 = "kernel.phi_kernel"(%3) {kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "ReshapeView", op_name = "pd_op.reshape", shape = #shape[3, 2]} : (tensor<2x3xf32>) -> (tensor<3x2xf32>)
  %5 = "kernel.phi_kernel"() {dtype = #dtype<float64>, fill_value = 2.0, kernel_key = #kernel_key<cpu, f64, NCHW>, kernel_name = "full", op_name = "pd_op.full", place = #place<cpu>, shape = #shape[2]} : () -> (tensor<2xf64>)
  %6 = "kernel.phi_kernel"(%1) {dtype = #dtype<float32>, kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "cast", op_name = "pd_op.cast"} : (tensor<3xi32>) -> (tensor<3xf32>)
  %7 = "kernel.phi_kernel"(%6) {kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "exp", op_name = "pd_op.exp"} : (tensor<3xf32>) -> (tensor<3xf32>)
  "builtin.output"(%4) {name = "r"} : (tensor<3x2xf32>) -> ()
  "builtin.output"(%5) {name = "f"} : (tensor<2xf64>) -> ()
  "builtin.output"(%7) {name = "e"} : (tensor<3xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("lower_to_kernel", input + 1), expected + 1);
}

TEST(PirPasses, FuseDrrRules) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4x8xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<8x16xf32>)
  %b = "builtin.parameter"() {name = "b"} : () -> (tensor<16xf32>)
  %mm = "pd_op.matmul"(%x, %w) {transpose_x = false, transpose_y = false} : (tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>)
  %a = "pd_op.add"(%b, %mm) : (tensor<16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %w2 = "builtin.parameter"() {name = "w2"} : () -> (tensor<16x16xf32>)
  %mm2 = "pd_op.matmul"(%a, %w2) {transpose_x = false, transpose_y = true} : (tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>)
  %a2 = "pd_op.add"(%mm2, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %g = "pd_op.gelu"(%a2) {approximate = true} : (tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %mm3 = "pd_op.matmul"(%g, %w2) {transpose_x = false, transpose_y = false} : (tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>)
  %a3 = "pd_op.add"(%mm3, %g) : (tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %mm4 = "pd_op.matmul"(%a3, %w2) {transpose_x = false, transpose_y = false} : (tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>)
  %a4 = "pd_op.add"(%mm4, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %r4 = "pd_op.relu"(%a4) : (tensor<4x16xf32>) -> (tensor<4x16xf32>)
  "builtin.output"(%mm4) {name = "keep"} : (tensor<4x16xf32>) -> ()
  "builtin.output"(%r4) {name = "out"} : (tensor<4x16xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<8x16xf32>)
  %2 = "builtin.parameter"() {name = "b"} : () -> (tensor<16xf32>)
  %3 = "pd_op.fused_linear"(%0, %1, %2) {transpose_x = false, transpose_y = false} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %4 = "builtin.parameter"() {name = "w2"} : () -> (tensor<16x16xf32>)
  %5 = "pd_op.fused_linear_activation"(%3, %4, %2) {activation = "gelu_tanh", transpose_x = false, transpose_y = true} : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %6 = "pd_op.matmul"(%5, %4) {transpose_x = false, transpose_y = false} : (tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>)
  %7 = "pd_op.add"(%6, %5) : (tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %8 = "pd_op.matmul"(%7, %4) {transpose_x = false, transpose_y = false} : (tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>)
  %9 = "pd_op.add"(%8, %2) : (tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %10 = "pd_op.relu"(%9) : (tensor<4x16xf32>) -> (tensor<4x16xf32>)
  "builtin.output"(%8) {name = "keep"} : (tensor<4x16xf32>) -> ()
  "builtin.output"(%10) {name = "out"} : (tensor<4x16xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("fuse", input + 1), expected + 1);
}

TEST(PirPasses, NestedPipeline) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %c = "builtin.parameter"() {name = "c"} : () -> (tensor<bool>)
  %a = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %b = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %r = "cf.while"(%c, %x) ({
  ^bb0(%v: tensor<4xf32>):
    %e1 = "pd_op.tanh"(%v) : (tensor<4xf32>) -> (tensor<4xf32>)
    %e2 = "pd_op.tanh"(%v) : (tensor<4xf32>) -> (tensor<4xf32>)
    %dead = "pd_op.exp"(%e2) : (tensor<4xf32>) -> (tensor<4xf32>)
    %s = "pd_op.add"(%e1, %e2) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
    %t = "pd_op.sum"(%s) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<4xf32>) -> (tensor<f32>)
    %z = "builtin.constant"() {value = #dense<tensor<f32>, "0x00000000">} : () -> (tensor<f32>)
    %more = "pd_op.less_than"(%t, %z) : (tensor<f32>, tensor<f32>) -> (tensor<bool>)
    "cf.yield"(%more, %s) : (tensor<bool>, tensor<4xf32>) -> ()
  }) : (tensor<bool>, tensor<4xf32>) -> (tensor<4xf32>)
  %o = "pd_op.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%r) {name = "r"} : (tensor<4xf32>) -> ()
  "builtin.output"(%o) {name = "o"} : (tensor<4xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4xf32>)
  %1 = "builtin.parameter"() {name = "c"} : () -> (tensor<bool>)
  %2 = "pd_op.exp"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  %3 = "pd_op.exp"(%0) : (tensor<4xf32>) -> (tensor<4xf32>)
  %4 = "cf.while"(%1, %0) ({
    ^bb0(%5: tensor<4xf32>):
      %6 = "pd_op.tanh"(%5) : (tensor<4xf32>) -> (tensor<4xf32>)
      %7 = "pd_op.add"(%6, %6) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
      %8 = "pd_op.sum"(%7) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<4xf32>) -> (tensor<f32>)
      %9 = "builtin.constant"() {value = #dense<tensor<f32>, "0x00000000">} : () -> (tensor<f32>)
      %10 = "pd_op.less_than"(%8, %9) : (tensor<f32>, tensor<f32>) -> (tensor<bool>)
      "cf.yield"(%10, %7) : (tensor<bool>, tensor<4xf32>) -> ()
  }) : (tensor<bool>, tensor<4xf32>) -> (tensor<4xf32>)
  %11 = "pd_op.add"(%2, %3) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%4) {name = "r"} : (tensor<4xf32>) -> ()
  "builtin.output"(%11) {name = "o"} : (tensor<4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("cf.while(cse,dce)", input + 1), expected + 1);
}

TEST(PirPasses, StandardPipeline) {
  const char* input = R"IR(
module {
  %x = "builtin.parameter"() {name = "x"} : () -> (tensor<4x8xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<8x16xf32>)
  %b = "builtin.parameter"() {name = "b"} : () -> (tensor<16xf32>)
  %mm = "pd_op.matmul"(%x, %w) {transpose_x = false, transpose_y = false} : (tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>)
  %a = "pd_op.add"(%mm, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %r = "pd_op.relu"(%a) : (tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %r2 = "pd_op.relu"(%a) : (tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %s = "pd_op.add"(%r, %r2) : (tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>)
  %dead = "pd_op.exp"(%s) : (tensor<4x16xf32>) -> (tensor<4x16xf32>)
  "builtin.output"(%s) {name = "out"} : (tensor<4x16xf32>) -> ()
}
)IR";
  const char* expected = R"IR(
module {
  %0 = "builtin.parameter"() {name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<8x16xf32>)
  %2 = "builtin.parameter"() {name = "b"} : () -> (tensor<16xf32>)
  %3 = "kernel.phi_kernel"(%0, %1, %2) {activation = "relu", kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "fused_linear_activation", op_name = "pd_op.fused_linear_activation", transpose_x = false, transpose_y = false} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>)
  %4 = "kernel.phi_kernel"(%3, %3) {kernel_key = #kernel_key<cpu, f32, NCHW>, kernel_name = "add", op_name = "pd_op.add"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>)
  "builtin.output"(%4) {name = "out"} : (tensor<4x16xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("standard", input + 1), expected + 1);
}

// ---- Note [Pass pipelines]: the registered pipelines
TEST(PirPipelines, RegisteredByNameAndEndWithLowering) {
  const std::vector<std::string> names = registered_pipelines();
  for (const char* want : {"jit-train", "jit-infer", "predictor", "predictor-memory", "standard"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  const std::vector<std::string> passes = registered_passes();
  for (const std::string& name : names) {
    ASSERT_TRUE(is_pipeline(name));
    const auto& list = pipeline_passes(name);
    ASSERT_FALSE(list.empty()) << name;
    EXPECT_EQ(list.back(), kLowerPass) << name;  // the executor runs kernel-dialect programs
    for (const std::string& p : list)            // every pass exists, and no pipeline shadows a pass
      EXPECT_NE(std::find(passes.begin(), passes.end(), p), passes.end()) << name << ": " << p;
    EXPECT_EQ(std::find(passes.begin(), passes.end(), name), passes.end()) << name;
    // add_pipeline takes the name for its passes
    PassManager pm;
    pm.add_pipeline(name);
    EXPECT_EQ(pm.str(), pipeline(name));
  }
  EXPECT_EQ(standard_pipeline(), pipeline("standard"));
  EXPECT_EQ(pipeline("predictor"), "canonicalize,constant_fold,cse,fuse,fold_parameters,dce,lower_to_kernel");
  EXPECT_EQ(pipeline("predictor-memory"),
            "canonicalize,constant_fold,cse,fuse,fold_parameters,dce,inplace,lower_to_kernel");
  try {
    pipeline_passes("jit-nope");
    FAIL() << "expected NotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(e.message().find("unknown pass pipeline 'jit-nope'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("jit-train"), std::string::npos) << e.message();
  }
}

TEST(PirPipelines, LoweringACopyKeepsTheProgramInTheOpDialect) {
  const char* input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<4xf32>)
  %a = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %b = "pd_op.exp"(%x) : (tensor<4xf32>) -> (tensor<4xf32>)
  %s = "pd_op.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %m = "pd_op.multiply"(%s, %w) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
  %dead = "pd_op.tanh"(%m) : (tensor<4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%m) {name = "y"} : (tensor<4xf32>) -> ()
}
)IR";
  auto p = parse_program(IrContext::global(), input + 1);
  auto w = std::make_shared<DenseTensor>(Dims({4}), DataType::FLOAT32);
  w->alloc();
  p->set_parameter("w", w);
  std::unique_ptr<Program> lowered = run_pipeline_lowering_copy(*p, "jit-train");
  // The program: cleaned (cse, dce) and still op dialect.
  const std::string text = p->str();
  auto count = [](const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(text, "\"pd_op.exp\""), 1) << text;  // cse
  EXPECT_EQ(count(text, "pd_op.tanh"), 0) << text;     // dce
  EXPECT_EQ(count(text, "kernel.phi_kernel"), 0) << text;
  // The copy: the same ops lowered, no pd_op op left, the parameter data shared.
  int kernels = 0;
  lowered->module()->walk([&](Operation* op) {
    EXPECT_NE(op->info()->dialect, "pd_op") << op->name();
    kernels += op->name() == "kernel.phi_kernel";
  });
  EXPECT_EQ(kernels, count(text, "\"pd_op."));
  EXPECT_EQ(lowered->parameter("w").get(), w.get());
}

}  // namespace
}  // namespace oar::pir
