// The static auto-parallel passes over global programs (Note [Static auto-parallel passes]):
// dist-complete, dist-reshard and dist-partition, input text -> expected text, as the
// other pass tests (golden outputs checked by hand when written; regenerate with
// build/<dir>/pir/pir_opt --pipeline='dist-complete,dist-reshard,dist-partition{rank=1}' file).
// `#P<[...]|>` stands for `#dist.placements<[...], mesh = ..., ids = ..., names = ...>` on
// the test's mesh.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "distributed/static/dist_dialect.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::dist {
namespace {
using pir::testing::expect_error;

const char* kMP = R"(, mesh = [2], ids = [0, 1], names = ["mp"]>)";
const char* kDP = R"(, mesh = [2], ids = [0, 1], names = ["dp"]>)";
const char* kX = R"(, mesh = [2], ids = [0, 1], names = ["x"]>)";
const char* kDPMP = R"(, mesh = [2, 2], ids = [0, 1, 2, 3], names = ["dp", "mp"]>)";

std::string expand(std::string s, const std::string& mesh) {
  if (!s.empty() && s[0] == '\n') s.erase(0, 1);
  for (size_t p; (p = s.find("#P<")) != std::string::npos;) s.replace(p, 3, "#dist.placements<");
  for (size_t p; (p = s.find("|>")) != std::string::npos;) s.replace(p, 2, mesh);
  return s;
}

std::string run(const std::string& pipeline, const std::string& input, const std::string& mesh) {
  auto p = pir::parse_program(pir::IrContext::global(), expand(input, mesh));
  pir::PassManager pm;
  pm.add_pipeline(pipeline);
  pm.run(*p);
  return p->str();
}

// linear -> gelu -> linear, w1 split by columns and w2 by rows (mp = 2), the loss `sum` and
// the traced backward (matmuls, gelu_grad), each gradient annotated with its parameter's
// placements: the row-parallel output is Partial and the loss's sum asks it Replicate (one
// all_reduce); the backward needs no transfer (each gradient comes out as its parameter).
TEST(DistStaticPasses, ColumnThenRowParallelMlpForwardAndBackward) {
  const std::string input = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf64>)
  %1 = "builtin.parameter"() {name = "w1"} : () -> (tensor<8x16xf64>)
  %2 = "builtin.parameter"() {name = "w2"} : () -> (tensor<16x8xf64>)
  %3 = "dist.shard_annotate"(%0) {placements = #P<[Replicate()]|>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %4 = "dist.shard_annotate"(%1) {placements = #P<[Shard(1)]|>} : (tensor<8x16xf64>) -> (tensor<8x16xf64>)
  %5 = "dist.shard_annotate"(%2) {placements = #P<[Shard(0)]|>} : (tensor<16x8xf64>) -> (tensor<16x8xf64>)
  %6 = "pd_op.matmul"(%3, %4) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x16xf64>) -> (tensor<4x16xf64>)
  %7 = "pd_op.gelu"(%6) {approximate = false} : (tensor<4x16xf64>) -> (tensor<4x16xf64>)
  %8 = "pd_op.matmul"(%7, %5) {transpose_x = false, transpose_y = false} : (tensor<4x16xf64>, tensor<16x8xf64>) -> (tensor<4x8xf64>)
  %9 = "pd_op.sum"(%8) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x8xf64>) -> (tensor<f64>)
  %10 = "pd_op.full_like"(%9) {dtype = #dtype<float64>, fill_value = 1.0} : (tensor<f64>) -> (tensor<f64>)
  %11 = "pd_op.reshape"(%10) {shape = #shape[1, 1]} : (tensor<f64>) -> (tensor<1x1xf64>)
  %12 = "pd_op.expand"(%11) {shape = #shape[4, 8]} : (tensor<1x1xf64>) -> (tensor<4x8xf64>)
  %13 = "pd_op.matmul"(%12, %5) {transpose_x = false, transpose_y = true} : (tensor<4x8xf64>, tensor<16x8xf64>) -> (tensor<4x16xf64>)
  %14 = "pd_op.matmul"(%7, %12) {transpose_x = true, transpose_y = false} : (tensor<4x16xf64>, tensor<4x8xf64>) -> (tensor<16x8xf64>)
  %15 = "pd_op.gelu_grad"(%6, %13) {approximate = false} : (tensor<4x16xf64>, tensor<4x16xf64>) -> (tensor<4x16xf64>)
  %16 = "pd_op.matmul"(%3, %15) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x16xf64>) -> (tensor<8x16xf64>)
  %17 = "dist.shard_annotate"(%16) {placements = #P<[Shard(1)]|>} : (tensor<8x16xf64>) -> (tensor<8x16xf64>)
  %18 = "dist.shard_annotate"(%14) {placements = #P<[Shard(0)]|>} : (tensor<16x8xf64>) -> (tensor<16x8xf64>)
  %19 = "dist.shard_annotate"(%9) {placements = #P<[Replicate()]|>} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%19) {name = "out0"} : (tensor<f64>) -> ()
  "builtin.output"(%17) {name = "out1"} : (tensor<8x16xf64>) -> ()
  "builtin.output"(%18) {name = "out2"} : (tensor<16x8xf64>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {dist_out = [#P<[Replicate()]|>], name = "x"} : () -> (tensor<4x8xf64>)
  %1 = "builtin.parameter"() {dist_out = [#P<[Shard(1)]|>], name = "w1"} : () -> (tensor<8x16xf64>)
  %2 = "builtin.parameter"() {dist_out = [#P<[Shard(0)]|>], name = "w2"} : () -> (tensor<16x8xf64>)
  %3 = "dist.shard_annotate"(%0) {placements = #P<[Replicate()]|>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %4 = "dist.shard_annotate"(%1) {placements = #P<[Shard(1)]|>} : (tensor<8x16xf64>) -> (tensor<8x16xf64>)
  %5 = "dist.shard_annotate"(%2) {placements = #P<[Shard(0)]|>} : (tensor<16x8xf64>) -> (tensor<16x8xf64>)
  %6 = "pd_op.matmul"(%3, %4) {dist_in = [#P<[Replicate()]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>], transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x16xf64>) -> (tensor<4x16xf64>)
  %7 = "pd_op.gelu"(%6) {approximate = false, dist_in = [#P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>]} : (tensor<4x16xf64>) -> (tensor<4x16xf64>)
  %8 = "pd_op.matmul"(%7, %5) {dist_in = [#P<[Shard(1)]|>, #P<[Shard(0)]|>], dist_out = [#P<[Partial(sum)]|>], transpose_x = false, transpose_y = false} : (tensor<4x16xf64>, tensor<16x8xf64>) -> (tensor<4x8xf64>)
  %9 = "pd_op.sum"(%8) {axis = #shape[], dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x8xf64>) -> (tensor<f64>)
  %10 = "pd_op.full_like"(%9) {dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], dtype = #dtype<float64>, fill_value = 1.0} : (tensor<f64>) -> (tensor<f64>)
  %11 = "pd_op.reshape"(%10) {dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], shape = #shape[1, 1]} : (tensor<f64>) -> (tensor<1x1xf64>)
  %12 = "pd_op.expand"(%11) {dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], shape = #shape[4, 8]} : (tensor<1x1xf64>) -> (tensor<4x8xf64>)
  %13 = "pd_op.matmul"(%12, %5) {dist_in = [#P<[Replicate()]|>, #P<[Shard(0)]|>], dist_out = [#P<[Shard(1)]|>], transpose_x = false, transpose_y = true} : (tensor<4x8xf64>, tensor<16x8xf64>) -> (tensor<4x16xf64>)
  %14 = "pd_op.matmul"(%7, %12) {dist_in = [#P<[Shard(1)]|>, #P<[Replicate()]|>], dist_out = [#P<[Shard(0)]|>], transpose_x = true, transpose_y = false} : (tensor<4x16xf64>, tensor<4x8xf64>) -> (tensor<16x8xf64>)
  %15 = "pd_op.gelu_grad"(%6, %13) {approximate = false, dist_in = [#P<[Shard(1)]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>]} : (tensor<4x16xf64>, tensor<4x16xf64>) -> (tensor<4x16xf64>)
  %16 = "pd_op.matmul"(%3, %15) {dist_in = [#P<[Replicate()]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>], transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x16xf64>) -> (tensor<8x16xf64>)
  %17 = "dist.shard_annotate"(%16) {placements = #P<[Shard(1)]|>} : (tensor<8x16xf64>) -> (tensor<8x16xf64>)
  %18 = "dist.shard_annotate"(%14) {placements = #P<[Shard(0)]|>} : (tensor<16x8xf64>) -> (tensor<16x8xf64>)
  %19 = "dist.shard_annotate"(%9) {placements = #P<[Replicate()]|>} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%19) {name = "out0"} : (tensor<f64>) -> ()
  "builtin.output"(%17) {name = "out1"} : (tensor<8x16xf64>) -> ()
  "builtin.output"(%18) {name = "out2"} : (tensor<16x8xf64>) -> ()
}
)IR",
                                                     kMP));
  EXPECT_EQ(run("dist-complete,dist-reshard", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {dist_out = [#P<[Replicate()]|>], name = "x"} : () -> (tensor<4x8xf64>)
  %1 = "builtin.parameter"() {dist_out = [#P<[Shard(1)]|>], name = "w1"} : () -> (tensor<8x16xf64>)
  %2 = "builtin.parameter"() {dist_out = [#P<[Shard(0)]|>], name = "w2"} : () -> (tensor<16x8xf64>)
  %3 = "dist.shard_annotate"(%0) {placements = #P<[Replicate()]|>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %4 = "dist.shard_annotate"(%1) {placements = #P<[Shard(1)]|>} : (tensor<8x16xf64>) -> (tensor<8x16xf64>)
  %5 = "dist.shard_annotate"(%2) {placements = #P<[Shard(0)]|>} : (tensor<16x8xf64>) -> (tensor<16x8xf64>)
  %6 = "pd_op.matmul"(%3, %4) {dist_in = [#P<[Replicate()]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>], transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x16xf64>) -> (tensor<4x16xf64>)
  %7 = "pd_op.gelu"(%6) {approximate = false, dist_in = [#P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>]} : (tensor<4x16xf64>) -> (tensor<4x16xf64>)
  %8 = "pd_op.matmul"(%7, %5) {dist_in = [#P<[Shard(1)]|>, #P<[Shard(0)]|>], dist_out = [#P<[Partial(sum)]|>], transpose_x = false, transpose_y = false} : (tensor<4x16xf64>, tensor<16x8xf64>) -> (tensor<4x8xf64>)
  %9 = "dist.all_reduce"(%8) {axis = 0, dist_out = [#P<[Replicate()]|>], global_shape = #shape[4, 8], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %10 = "pd_op.sum"(%9) {axis = #shape[], dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x8xf64>) -> (tensor<f64>)
  %11 = "pd_op.full_like"(%10) {dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], dtype = #dtype<float64>, fill_value = 1.0} : (tensor<f64>) -> (tensor<f64>)
  %12 = "pd_op.reshape"(%11) {dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], shape = #shape[1, 1]} : (tensor<f64>) -> (tensor<1x1xf64>)
  %13 = "pd_op.expand"(%12) {dist_in = [#P<[Replicate()]|>], dist_out = [#P<[Replicate()]|>], shape = #shape[4, 8]} : (tensor<1x1xf64>) -> (tensor<4x8xf64>)
  %14 = "pd_op.matmul"(%13, %5) {dist_in = [#P<[Replicate()]|>, #P<[Shard(0)]|>], dist_out = [#P<[Shard(1)]|>], transpose_x = false, transpose_y = true} : (tensor<4x8xf64>, tensor<16x8xf64>) -> (tensor<4x16xf64>)
  %15 = "pd_op.matmul"(%7, %13) {dist_in = [#P<[Shard(1)]|>, #P<[Replicate()]|>], dist_out = [#P<[Shard(0)]|>], transpose_x = true, transpose_y = false} : (tensor<4x16xf64>, tensor<4x8xf64>) -> (tensor<16x8xf64>)
  %16 = "pd_op.gelu_grad"(%6, %14) {approximate = false, dist_in = [#P<[Shard(1)]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>]} : (tensor<4x16xf64>, tensor<4x16xf64>) -> (tensor<4x16xf64>)
  %17 = "pd_op.matmul"(%3, %16) {dist_in = [#P<[Replicate()]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>], transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x16xf64>) -> (tensor<8x16xf64>)
  %18 = "dist.shard_annotate"(%17) {placements = #P<[Shard(1)]|>} : (tensor<8x16xf64>) -> (tensor<8x16xf64>)
  %19 = "dist.shard_annotate"(%15) {placements = #P<[Shard(0)]|>} : (tensor<16x8xf64>) -> (tensor<16x8xf64>)
  %20 = "dist.shard_annotate"(%10) {placements = #P<[Replicate()]|>} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%20) {name = "out0"} : (tensor<f64>) -> ()
  "builtin.output"(%18) {name = "out1"} : (tensor<8x16xf64>) -> ()
  "builtin.output"(%19) {name = "out2"} : (tensor<16x8xf64>) -> ()
}
)IR",
                                                                  kMP));
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf64>)
  %1 = "builtin.parameter"() {name = "w1"} : () -> (tensor<8x8xf64>)
  %2 = "builtin.parameter"() {name = "w2"} : () -> (tensor<8x8xf64>)
  %3 = "pd_op.matmul"(%0, %1) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %4 = "pd_op.gelu"(%3) {approximate = false} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %5 = "pd_op.matmul"(%4, %2) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %6 = "dist.all_reduce"(%5) {axis = 0, global_shape = #shape[4, 8], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %7 = "pd_op.sum"(%6) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x8xf64>) -> (tensor<f64>)
  %8 = "pd_op.full_like"(%7) {dtype = #dtype<float64>, fill_value = 1.0} : (tensor<f64>) -> (tensor<f64>)
  %9 = "pd_op.reshape"(%8) {shape = #shape[1, 1]} : (tensor<f64>) -> (tensor<1x1xf64>)
  %10 = "pd_op.expand"(%9) {shape = #shape[4, 8]} : (tensor<1x1xf64>) -> (tensor<4x8xf64>)
  %11 = "pd_op.matmul"(%10, %2) {transpose_x = false, transpose_y = true} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %12 = "pd_op.matmul"(%4, %10) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<8x8xf64>)
  %13 = "pd_op.gelu_grad"(%3, %11) {approximate = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %14 = "pd_op.matmul"(%0, %13) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<8x8xf64>)
  "builtin.output"(%7) {name = "out0"} : (tensor<f64>) -> ()
  "builtin.output"(%14) {name = "out1"} : (tensor<8x8xf64>) -> ()
  "builtin.output"(%12) {name = "out2"} : (tensor<8x8xf64>) -> ()
}
)IR",
                                                                                         kMP));
}

// dp only: a batch of 5 split over 2 (rank 0 holds 3 rows, rank 1 two, as Paddle), a
// replicated weight, and a sum over the split batch: Partial(sum) until the annotation asks
// Replicate (one all_reduce of the scalar).
TEST(DistStaticPasses, DataParallelUnevenBatchAndAPartialSum) {
  const std::string input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<5x4xf64>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3xf64>)
  %a = "dist.shard_annotate"(%x) {placements = #P<[Shard(0)]|>} : (tensor<5x4xf64>) -> (tensor<5x4xf64>)
  %y = "pd_op.matmul"(%a, %w) {transpose_x = false, transpose_y = false} : (tensor<5x4xf64>, tensor<4x3xf64>) -> (tensor<5x3xf64>)
  %s = "pd_op.sum"(%y) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<5x3xf64>) -> (tensor<f64>)
  %r = "dist.shard_annotate"(%s) {placements = #P<[Replicate()]|>} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%r) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%y) {name = "y"} : (tensor<5x3xf64>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete,dist-reshard", input, kDP), expand(R"IR(
module {
  %0 = "builtin.input"() {dist_out = [#P<[Shard(0)]|>], name = "x"} : () -> (tensor<5x4xf64>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3xf64>)
  %2 = "dist.shard_annotate"(%0) {placements = #P<[Shard(0)]|>} : (tensor<5x4xf64>) -> (tensor<5x4xf64>)
  %3 = "pd_op.matmul"(%2, %1) {dist_in = [#P<[Shard(0)]|>, #P<[Replicate()]|>], dist_out = [#P<[Shard(0)]|>], transpose_x = false, transpose_y = false} : (tensor<5x4xf64>, tensor<4x3xf64>) -> (tensor<5x3xf64>)
  %4 = "pd_op.sum"(%3) {axis = #shape[], dist_in = [#P<[Shard(0)]|>], dist_out = [#P<[Partial(sum)]|>], dtype = #dtype<undefined>, keepdim = false} : (tensor<5x3xf64>) -> (tensor<f64>)
  %5 = "dist.all_reduce"(%4) {axis = 0, dist_out = [#P<[Replicate()]|>], global_shape = #shape[], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"} : (tensor<f64>) -> (tensor<f64>)
  %6 = "dist.shard_annotate"(%5) {placements = #P<[Replicate()]|>} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%6) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%3) {name = "y"} : (tensor<5x3xf64>) -> ()
}
)IR",
                                                                  kDP));
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=0}", input, kDP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<3x4xf64>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3xf64>)
  %2 = "pd_op.matmul"(%0, %1) {transpose_x = false, transpose_y = false} : (tensor<3x4xf64>, tensor<4x3xf64>) -> (tensor<3x3xf64>)
  %3 = "pd_op.sum"(%2) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<3x3xf64>) -> (tensor<f64>)
  %4 = "dist.all_reduce"(%3) {axis = 0, global_shape = #shape[], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%4) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%2) {name = "y"} : (tensor<3x3xf64>) -> ()
}
)IR",
                                                                                         kDP));
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kDP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x4xf64>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<4x3xf64>)
  %2 = "pd_op.matmul"(%0, %1) {transpose_x = false, transpose_y = false} : (tensor<2x4xf64>, tensor<4x3xf64>) -> (tensor<2x3xf64>)
  %3 = "pd_op.sum"(%2) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<2x3xf64>) -> (tensor<f64>)
  %4 = "dist.all_reduce"(%3) {axis = 0, global_shape = #shape[], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"} : (tensor<f64>) -> (tensor<f64>)
  "builtin.output"(%4) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%2) {name = "y"} : (tensor<2x3xf64>) -> ()
}
)IR",
                                                                                         kDP));
}

// The reshape rule keeps a leading split that both sides divide, and dist-partition makes
// the shape attribute the rank's (the dist layer's local_shape_attr: -1 resolved, then cut).
TEST(DistStaticPasses, ReshapeKeepsTheLeadingSplitAndTakesTheLocalShape) {
  const std::string input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x6xf32>)
  %a = "dist.shard_annotate"(%x) {placements = #P<[Shard(0)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  %r = "pd_op.reshape"(%a) {shape = #shape[2, -1, 6]} : (tensor<4x6xf32>) -> (tensor<2x2x6xf32>)
  %f = "pd_op.reshape"(%a) {shape = #shape[24]} : (tensor<4x6xf32>) -> (tensor<24xf32>)
  %t = "pd_op.reshape"(%a) {shape = #shape[6, 4]} : (tensor<4x6xf32>) -> (tensor<6x4xf32>)
  "builtin.output"(%r) {name = "r"} : (tensor<2x2x6xf32>) -> ()
  "builtin.output"(%f) {name = "f"} : (tensor<24xf32>) -> ()
  "builtin.output"(%t) {name = "t"} : (tensor<6x4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete", input, kX), expand(R"IR(
module {
  %0 = "builtin.input"() {dist_out = [#P<[Shard(0)]|>], name = "x"} : () -> (tensor<4x6xf32>)
  %1 = "dist.shard_annotate"(%0) {placements = #P<[Shard(0)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  %2 = "pd_op.reshape"(%1) {dist_in = [#P<[Shard(0)]|>], dist_out = [#P<[Shard(0)]|>], shape = #shape[2, -1, 6]} : (tensor<4x6xf32>) -> (tensor<2x2x6xf32>)
  %3 = "pd_op.reshape"(%1) {dist_in = [#P<[Shard(0)]|>], dist_out = [#P<[Shard(0)]|>], shape = #shape[24]} : (tensor<4x6xf32>) -> (tensor<24xf32>)
  %4 = "pd_op.reshape"(%1) {dist_in = [#P<[Shard(0)]|>], dist_out = [#P<[Shard(0)]|>], shape = #shape[6, 4]} : (tensor<4x6xf32>) -> (tensor<6x4xf32>)
  "builtin.output"(%2) {name = "r"} : (tensor<2x2x6xf32>) -> ()
  "builtin.output"(%3) {name = "f"} : (tensor<24xf32>) -> ()
  "builtin.output"(%4) {name = "t"} : (tensor<6x4xf32>) -> ()
}
)IR",
                                                    kX));
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kX), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x6xf32>)
  %1 = "pd_op.reshape"(%0) {shape = #shape[1, 2, 6]} : (tensor<2x6xf32>) -> (tensor<1x2x6xf32>)
  %2 = "pd_op.reshape"(%0) {shape = #shape[12]} : (tensor<2x6xf32>) -> (tensor<12xf32>)
  %3 = "pd_op.reshape"(%0) {shape = #shape[3, 4]} : (tensor<2x6xf32>) -> (tensor<3x4xf32>)
  "builtin.output"(%1) {name = "r"} : (tensor<1x2x6xf32>) -> ()
  "builtin.output"(%2) {name = "f"} : (tensor<12xf32>) -> ()
  "builtin.output"(%3) {name = "t"} : (tensor<3x4xf32>) -> ()
}
)IR",
                                                                                        kX));
}

// dp x mp 2x2: x is split on mp by a local slice to meet the matmul's K split, the output
// Partial on mp is reduce-scattered to the annotation's Shard(1); rank 3 runs its axis-1
// transfers over the group [2, 3].
TEST(DistStaticPasses, TwoDimensionalMeshTransfersOneAxisAtATime) {
  const std::string input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf32>)
  %w = "builtin.parameter"() {name = "w"} : () -> (tensor<8x6xf32>)
  %a = "dist.shard_annotate"(%x) {placements = #P<[Shard(0), Replicate()]|>} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %b = "dist.shard_annotate"(%w) {placements = #P<[Replicate(), Shard(0)]|>} : (tensor<8x6xf32>) -> (tensor<8x6xf32>)
  %y = "pd_op.matmul"(%a, %b) {transpose_x = false, transpose_y = false} : (tensor<4x8xf32>, tensor<8x6xf32>) -> (tensor<4x6xf32>)
  %z = "dist.shard_annotate"(%y) {placements = #P<[Shard(0), Shard(1)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%z) {name = "z"} : (tensor<4x6xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete,dist-reshard", input, kDPMP), expand(R"IR(
module {
  %0 = "builtin.input"() {dist_out = [#P<[Shard(0), Replicate()]|>], name = "x"} : () -> (tensor<4x8xf32>)
  %1 = "builtin.parameter"() {dist_out = [#P<[Replicate(), Shard(0)]|>], name = "w"} : () -> (tensor<8x6xf32>)
  %2 = "dist.shard_annotate"(%0) {placements = #P<[Shard(0), Replicate()]|>} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %3 = "dist.shard_annotate"(%1) {placements = #P<[Replicate(), Shard(0)]|>} : (tensor<8x6xf32>) -> (tensor<8x6xf32>)
  %4 = "dist.shard_slice"(%2) {axis = 1, dim = 1, dist_out = [#P<[Shard(0), Shard(1)]|>], global_shape = #shape[4, 8], mesh_ids = #shape[0, 1, 2, 3], mesh_shape = #shape[2, 2]} : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
  %5 = "pd_op.matmul"(%4, %3) {dist_in = [#P<[Shard(0), Shard(1)]|>, #P<[Replicate(), Shard(0)]|>], dist_out = [#P<[Shard(0), Partial(sum)]|>], transpose_x = false, transpose_y = false} : (tensor<4x8xf32>, tensor<8x6xf32>) -> (tensor<4x6xf32>)
  %6 = "dist.reduce_scatter"(%5) {axis = 1, dim = 1, dist_out = [#P<[Shard(0), Shard(1)]|>], global_shape = #shape[4, 6], mesh_ids = #shape[0, 1, 2, 3], mesh_shape = #shape[2, 2], reduce = "kRedSum"} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  %7 = "dist.shard_annotate"(%6) {placements = #P<[Shard(0), Shard(1)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%7) {name = "z"} : (tensor<4x6xf32>) -> ()
}
)IR",
                                                                    kDPMP));
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=3}", input, kDPMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x8xf32>)
  %1 = "builtin.parameter"() {name = "w"} : () -> (tensor<4x6xf32>)
  %2 = "dist.shard_slice"(%0) {axis = 1, dim = 1, global_shape = #shape[4, 8], group = #shape[2, 3], mesh_ids = #shape[0, 1, 2, 3], mesh_shape = #shape[2, 2]} : (tensor<2x8xf32>) -> (tensor<2x4xf32>)
  %3 = "pd_op.matmul"(%2, %1) {transpose_x = false, transpose_y = false} : (tensor<2x4xf32>, tensor<4x6xf32>) -> (tensor<2x6xf32>)
  %4 = "dist.reduce_scatter"(%3) {axis = 1, dim = 1, global_shape = #shape[4, 6], group = #shape[2, 3], mesh_ids = #shape[0, 1, 2, 3], mesh_shape = #shape[2, 2], reduce = "kRedSum"} : (tensor<2x6xf32>) -> (tensor<2x3xf32>)
  "builtin.output"(%4) {name = "z"} : (tensor<2x3xf32>) -> ()
}
)IR",
                                                                                           kDPMP));
}
// dist.<rule>_update: the gradient (here a Partial input) and the states take the
// parameter's placements (a reduce-scatter to Shard(1): 5 columns, rank 1 holds 2), and the
// results written back by set_parameter are the parameter's local shards.
TEST(DistStaticPasses, AnUpdateOpTakesItsParametersPlacements) {
  const std::string input = R"IR(
module {
  %0 = "builtin.input"() {name = "g"} : () -> (tensor<8x5xf32>)
  %1 = "builtin.input"() {name = "opt_lr"} : () -> (tensor<f64>)
  %2 = "builtin.input"() {name = "opt_step"} : () -> (tensor<i64>)
  %3 = "builtin.parameter"() {name = "w"} : () -> (tensor<8x5xf32>)
  %4 = "builtin.parameter"() {name = "opt0.velocity"} : () -> (tensor<8x5xf32>)
  %5 = "dist.shard_annotate"(%3) {placements = #P<[Shard(1)]|>} : (tensor<8x5xf32>) -> (tensor<8x5xf32>)
  %6 = "dist.shard_annotate"(%4) {placements = #P<[Shard(1)]|>} : (tensor<8x5xf32>) -> (tensor<8x5xf32>)
  %7 = "dist.shard_annotate"(%0) {placements = #P<[Partial(sum)]|>} : (tensor<8x5xf32>) -> (tensor<8x5xf32>)
  %8, %9 = "dist.momentum_update"(%1, %2, %5, %7, %6) {flag = false, lr_scale = [1.0], scalars = [0.9], state_lists = #shape[1], weight_decay = [0.0]} : (tensor<f64>, tensor<i64>, tensor<8x5xf32>, tensor<8x5xf32>, tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>)
  "builtin.set_parameter"(%8) {name = "w"} : (tensor<8x5xf32>) -> ()
  "builtin.set_parameter"(%9) {name = "opt0.velocity"} : (tensor<8x5xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {dist_out = [#P<[Partial(sum)]|>], name = "g"} : () -> (tensor<8x5xf32>)
  %1 = "builtin.input"() {name = "opt_lr"} : () -> (tensor<f64>)
  %2 = "builtin.input"() {name = "opt_step"} : () -> (tensor<i64>)
  %3 = "builtin.parameter"() {dist_out = [#P<[Shard(1)]|>], name = "w"} : () -> (tensor<8x5xf32>)
  %4 = "builtin.parameter"() {dist_out = [#P<[Shard(1)]|>], name = "opt0.velocity"} : () -> (tensor<8x5xf32>)
  %5 = "dist.shard_annotate"(%3) {placements = #P<[Shard(1)]|>} : (tensor<8x5xf32>) -> (tensor<8x5xf32>)
  %6 = "dist.shard_annotate"(%4) {placements = #P<[Shard(1)]|>} : (tensor<8x5xf32>) -> (tensor<8x5xf32>)
  %7 = "dist.shard_annotate"(%0) {placements = #P<[Partial(sum)]|>} : (tensor<8x5xf32>) -> (tensor<8x5xf32>)
  %8, %9 = "dist.momentum_update"(%1, %2, %5, %7, %6) {dist_in = [#P<[Replicate()]|>, #P<[Replicate()]|>, #P<[Shard(1)]|>, #P<[Shard(1)]|>, #P<[Shard(1)]|>], dist_out = [#P<[Shard(1)]|>, #P<[Shard(1)]|>], flag = false, lr_scale = [1.0], scalars = [0.9], state_lists = #shape[1], weight_decay = [0.0]} : (tensor<f64>, tensor<i64>, tensor<8x5xf32>, tensor<8x5xf32>, tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>)
  "builtin.set_parameter"(%8) {name = "w"} : (tensor<8x5xf32>) -> ()
  "builtin.set_parameter"(%9) {name = "opt0.velocity"} : (tensor<8x5xf32>) -> ()
}
)IR",
                                                     kMP));
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "g"} : () -> (tensor<8x5xf32>)
  %1 = "builtin.input"() {name = "opt_lr"} : () -> (tensor<f64>)
  %2 = "builtin.input"() {name = "opt_step"} : () -> (tensor<i64>)
  %3 = "builtin.parameter"() {name = "w"} : () -> (tensor<8x2xf32>)
  %4 = "builtin.parameter"() {name = "opt0.velocity"} : () -> (tensor<8x2xf32>)
  %5 = "dist.reduce_scatter"(%0) {axis = 0, dim = 1, global_shape = #shape[8, 5], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2], reduce = "kRedSum"} : (tensor<8x5xf32>) -> (tensor<8x2xf32>)
  %6, %7 = "dist.momentum_update"(%1, %2, %3, %5, %4) {flag = false, lr_scale = [1.0], scalars = [0.9], state_lists = #shape[1], weight_decay = [0.0]} : (tensor<f64>, tensor<i64>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> (tensor<8x2xf32>, tensor<8x2xf32>)
  "builtin.set_parameter"(%6) {name = "w"} : (tensor<8x2xf32>) -> ()
  "builtin.set_parameter"(%7) {name = "opt0.velocity"} : (tensor<8x2xf32>) -> ()
}
)IR",
                                                                                         kMP));
}

// One combine read by two concats: along axis 1 the Shard(0) elements stay split, along
// axis 0 (the split axis) the rule asks Replicate: that concat gets its own combine of the
// gathered elements, and every combine takes its elements' local types.
TEST(DistStaticPasses, ATensorListOperandSharedByTwoConsumersIsMovedForOneOnly) {
  const std::string input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<5x3xf32>)
  %y = "builtin.input"() {name = "y"} : () -> (tensor<5x3xf32>)
  %a = "dist.shard_annotate"(%x) {placements = #P<[Shard(0)]|>} : (tensor<5x3xf32>) -> (tensor<5x3xf32>)
  %b = "dist.shard_annotate"(%y) {placements = #P<[Shard(0)]|>} : (tensor<5x3xf32>) -> (tensor<5x3xf32>)
  %c = "builtin.combine"(%a, %b) : (tensor<5x3xf32>, tensor<5x3xf32>) -> (vec<tensor<5x3xf32>, tensor<5x3xf32>>)
  %d = "pd_op.concat"(%c) {axis = 1} : (vec<tensor<5x3xf32>, tensor<5x3xf32>>) -> (tensor<5x6xf32>)
  %e = "pd_op.concat"(%c) {axis = 0} : (vec<tensor<5x3xf32>, tensor<5x3xf32>>) -> (tensor<10x3xf32>)
  "builtin.output"(%d) {name = "d"} : (tensor<5x6xf32>) -> ()
  "builtin.output"(%e) {name = "e"} : (tensor<10x3xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x3xf32>)
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<2x3xf32>)
  %2 = "dist.all_gather"(%0) {axis = 0, dim = 0, global_shape = #shape[5, 3], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2]} : (tensor<2x3xf32>) -> (tensor<5x3xf32>)
  %3 = "dist.all_gather"(%1) {axis = 0, dim = 0, global_shape = #shape[5, 3], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2]} : (tensor<2x3xf32>) -> (tensor<5x3xf32>)
  %4 = "builtin.combine"(%2, %3) : (tensor<5x3xf32>, tensor<5x3xf32>) -> (vec<tensor<5x3xf32>, tensor<5x3xf32>>)
  %5 = "builtin.combine"(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> (vec<tensor<2x3xf32>, tensor<2x3xf32>>)
  %6 = "pd_op.concat"(%5) {axis = 1} : (vec<tensor<2x3xf32>, tensor<2x3xf32>>) -> (tensor<2x6xf32>)
  %7 = "pd_op.concat"(%4) {axis = 0} : (vec<tensor<5x3xf32>, tensor<5x3xf32>>) -> (tensor<10x3xf32>)
  "builtin.output"(%6) {name = "d"} : (tensor<2x6xf32>) -> ()
  "builtin.output"(%7) {name = "e"} : (tensor<10x3xf32>) -> ()
}
)IR",
                                                                                         kMP));
}

std::string expand_pp(std::string s) {
  for (size_t p; (p = s.find("|A>")) != std::string::npos;)
    s.replace(p, 3, R"(, mesh = [1], ids = [0], names = ["pp"]>)");
  for (size_t p; (p = s.find("|B>")) != std::string::npos;)
    s.replace(p, 3, R"(, mesh = [1], ids = [1], names = ["pp"]>)");
  return expand(s, "");
}
std::string run_pp(const std::string& pipeline, const std::string& input) {
  return run(pipeline, expand_pp(input), "");
}

// Two stages on the 1-process meshes [0] (|A>) and [1] (|B>): the activation's annotation onto
// B and its gradient's back onto A become dist.send_recv; each rank keeps its stage's ops,
// the other stage's values it still reads (a send's operand, an output) are empty fulls
// (every dim 0; a 0-d value keeps one zero), as eager holds outside a mesh.
TEST(DistStaticPasses, PipelineStagesMoveBySendRecvAndEachRankKeepsItsStage) {
  const std::string input = R"IR(
module {
  %x = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf64>)
  %w1 = "builtin.parameter"() {name = "w1"} : () -> (tensor<8x8xf64>)
  %w2 = "builtin.parameter"() {name = "w2"} : () -> (tensor<8x8xf64>)
  %ax = "dist.shard_annotate"(%x) {placements = #P<[Replicate()]|A>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %a1 = "dist.shard_annotate"(%w1) {placements = #P<[Replicate()]|A>} : (tensor<8x8xf64>) -> (tensor<8x8xf64>)
  %a2 = "dist.shard_annotate"(%w2) {placements = #P<[Replicate()]|B>} : (tensor<8x8xf64>) -> (tensor<8x8xf64>)
  %h = "pd_op.matmul"(%ax, %a1) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %hb = "dist.shard_annotate"(%h) {placements = #P<[Replicate()]|B>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %y = "pd_op.matmul"(%hb, %a2) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %l = "pd_op.sum"(%y) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x8xf64>) -> (tensor<f64>)
  %gy = "pd_op.full_like"(%y) {dtype = #dtype<float64>, fill_value = 1.0} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %gh = "pd_op.matmul"(%gy, %a2) {transpose_x = false, transpose_y = true} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %gw2 = "pd_op.matmul"(%hb, %gy) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<8x8xf64>)
  %gha = "dist.shard_annotate"(%gh) {placements = #P<[Replicate()]|A>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %gw1 = "pd_op.matmul"(%ax, %gha) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<8x8xf64>)
  "builtin.output"(%l) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%gw1) {name = "gw1"} : (tensor<8x8xf64>) -> ()
  "builtin.output"(%gw2) {name = "gw2"} : (tensor<8x8xf64>) -> ()
}
)IR";
  EXPECT_EQ(run_pp("dist-complete,dist-reshard,dist-partition{rank=0}", input), expand_pp(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf64>)
  %1 = "builtin.parameter"() {name = "w1"} : () -> (tensor<8x8xf64>)
  %2 = "builtin.parameter"() {name = "w2"} : () -> (tensor<0x0xf64>)
  %3 = "pd_op.matmul"(%0, %1) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %4 = "dist.send_recv"(%3) {from = #shape[-1], global_shape = #shape[4, 8], mesh_ids = #shape[0], mesh_shape = #shape[1], to = #shape[-1], to_mesh_ids = #shape[1], to_mesh_shape = #shape[1]} : (tensor<4x8xf64>) -> (tensor<0x0xf64>)
  %5 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf64>)
  %6 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[]} : () -> (tensor<f64>)
  %7 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf64>)
  %8 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf64>)
  %9 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf64>)
  %10 = "dist.send_recv"(%8) {from = #shape[-1], global_shape = #shape[4, 8], mesh_ids = #shape[1], mesh_shape = #shape[1], to = #shape[-1], to_mesh_ids = #shape[0], to_mesh_shape = #shape[1]} : (tensor<0x0xf64>) -> (tensor<4x8xf64>)
  %11 = "pd_op.matmul"(%0, %10) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<8x8xf64>)
  "builtin.output"(%6) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%11) {name = "gw1"} : (tensor<8x8xf64>) -> ()
  "builtin.output"(%9) {name = "gw2"} : (tensor<0x0xf64>) -> ()
}
)IR"));
  EXPECT_EQ(run_pp("dist-complete,dist-reshard,dist-partition{rank=1}", input), expand_pp(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<0x0xf64>)
  %1 = "builtin.parameter"() {name = "w1"} : () -> (tensor<0x0xf64>)
  %2 = "builtin.parameter"() {name = "w2"} : () -> (tensor<8x8xf64>)
  %3 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf64>)
  %4 = "dist.send_recv"(%3) {from = #shape[-1], global_shape = #shape[4, 8], mesh_ids = #shape[0], mesh_shape = #shape[1], to = #shape[-1], to_mesh_ids = #shape[1], to_mesh_shape = #shape[1]} : (tensor<0x0xf64>) -> (tensor<4x8xf64>)
  %5 = "pd_op.matmul"(%4, %2) {transpose_x = false, transpose_y = false} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %6 = "pd_op.sum"(%5) {axis = #shape[], dtype = #dtype<undefined>, keepdim = false} : (tensor<4x8xf64>) -> (tensor<f64>)
  %7 = "pd_op.full_like"(%5) {dtype = #dtype<float64>, fill_value = 1.0} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
  %8 = "pd_op.matmul"(%7, %2) {transpose_x = false, transpose_y = true} : (tensor<4x8xf64>, tensor<8x8xf64>) -> (tensor<4x8xf64>)
  %9 = "pd_op.matmul"(%4, %7) {transpose_x = true, transpose_y = false} : (tensor<4x8xf64>, tensor<4x8xf64>) -> (tensor<8x8xf64>)
  %10 = "dist.send_recv"(%8) {from = #shape[-1], global_shape = #shape[4, 8], mesh_ids = #shape[1], mesh_shape = #shape[1], to = #shape[-1], to_mesh_ids = #shape[0], to_mesh_shape = #shape[1]} : (tensor<4x8xf64>) -> (tensor<0x0xf64>)
  %11 = "pd_op.full"() {dtype = #dtype<float64>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf64>)
  "builtin.output"(%6) {name = "loss"} : (tensor<f64>) -> ()
  "builtin.output"(%11) {name = "gw1"} : (tensor<0x0xf64>) -> ()
  "builtin.output"(%9) {name = "gw2"} : (tensor<8x8xf64>) -> ()
}
)IR"));
}

TEST(DistStaticPasses, ThePipelineAndThePassesAreRegistered) {
  const auto passes = pir::registered_passes();
  for (const char* n : {"dist-complete", "dist-reshard", "dist-partition"})
    EXPECT_NE(std::find(passes.begin(), passes.end(), n), passes.end()) << n;
  EXPECT_EQ(pir::pipeline("dist-train"),
            "dist-complete,dist-reshard,dist-partition,canonicalize,cse,dce,lower_to_kernel");
}

const char* kAdd = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x6xf32>)
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<4x6xf32>)
  %2 = "dist.shard_annotate"(%0) {placements = #P<[Shard(0)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  %3 = "dist.shard_annotate"(%1) {placements = #P<[Shard(1)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  %4 = "pd_op.add"(%2, %3) : (tensor<4x6xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%4) {name = "z"} : (tensor<4x6xf32>) -> ()
}
)IR";

TEST(DistStaticPasses, AnOrdinaryValueTakesPartAsReplicateAndIsSlicedWhereAsked) {
  // y has no annotation: it is the same on every process, so meeting x's Shard(0) costs a
  // local slice; without annotations nothing changes at all.
  std::string input = kAdd;
  input.replace(input.find("  %3 = \"dist.shard_annotate\""), input.find("  %4 =") - input.find("  %3 = \"dist"), "");
  input.replace(input.find("(%2, %3)"), 8, "(%2, %1)");
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x6xf32>)
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<4x6xf32>)
  %2 = "dist.shard_slice"(%1) {axis = 0, dim = 0, global_shape = #shape[4, 6], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2]} : (tensor<4x6xf32>) -> (tensor<2x6xf32>)
  %3 = "pd_op.add"(%0, %2) : (tensor<2x6xf32>, tensor<2x6xf32>) -> (tensor<2x6xf32>)
  "builtin.output"(%3) {name = "z"} : (tensor<2x6xf32>) -> ()
}
)IR",
                                                                                         kMP));
  const std::string plain = R"IR(module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x6xf32>)
  %1 = "pd_op.exp"(%0) : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%1) {name = "z"} : (tensor<4x6xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", plain, kMP), plain);
}

TEST(DistStaticPasses, ConsumersAskingTheSameLayoutShareOneMove) {
  // x (Shard(1)) meets y's Shard(0) in two adds: one all_to_all serves both.
  std::string input = kAdd;
  input.replace(input.find("  \"builtin.output\""), 0,
                "  %5 = \"pd_op.add\"(%2, %3) : (tensor<4x6xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>)\n");
  const std::string out = run("dist-complete,dist-reshard", input, kMP);
  size_t n = 0;
  for (size_t p = 0; (p = out.find("dist.all_to_all", p)) != std::string::npos; ++p) ++n;
  EXPECT_EQ(n, 1u) << out;
  EXPECT_NE(out.find(R"("dist.all_to_all"(%3) {axis = 0, dim = 1,)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("pd_op.add"(%2, %4))"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("pd_op.add"(%2, %4) {dist_in)"), out.rfind(R"("pd_op.add"(%2, %4) {dist_in)")) << out;
}

TEST(DistStaticPasses, AnOpWithoutARuleRunsReplicated) {
  // diagonal has no rule: the logged fallback asks every operand Replicate (an all_gather)
  // and gives a Replicate result, as eager.
  const std::string input = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x4xf32>)
  %1 = "dist.shard_annotate"(%0) {placements = #P<[Shard(0)]|>} : (tensor<4x4xf32>) -> (tensor<4x4xf32>)
  %2 = "pd_op.diagonal"(%1) {axis1 = 0, axis2 = 1, offset = 0} : (tensor<4x4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%2) {name = "t"} : (tensor<4xf32>) -> ()
}
)IR";
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=0}", input, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<2x4xf32>)
  %1 = "dist.all_gather"(%0) {axis = 0, dim = 0, global_shape = #shape[4, 4], group = #shape[0, 1], mesh_ids = #shape[0, 1], mesh_shape = #shape[2]} : (tensor<2x4xf32>) -> (tensor<4x4xf32>)
  %2 = "pd_op.diagonal"(%1) {axis1 = 0, axis2 = 1, offset = 0} : (tensor<4x4xf32>) -> (tensor<4xf32>)
  "builtin.output"(%2) {name = "t"} : (tensor<4xf32>) -> ()
}
)IR",
                                                                                         kMP));
}

TEST(DistStaticPasses, ARankOutsideEveryMeshKeepsOnlyEmptyValues) {
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=2},dce", kAdd, kMP), expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<0x0xf32>)
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<0x0xf32>)
  %2 = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 0]} : () -> (tensor<0x0xf32>)
  "builtin.output"(%2) {name = "z"} : (tensor<0x0xf32>) -> ()
}
)IR",
                                                                                            kMP));
}

const char* kZeroSizeExpected = R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<0x6xf32>)
  %1 = "builtin.input"() {name = "y"} : () -> (tensor<0x3xf32>)
  %2 = "pd_op.full"() {dtype = #dtype<float32>, fill_value = 0.0, place = #place<cpu>, shape = #shape[0, 6]} : () -> (tensor<0x6xf32>)
  %3 = "pd_op.add"(%0, %2) : (tensor<0x6xf32>, tensor<0x6xf32>) -> (tensor<0x6xf32>)
  "builtin.output"(%3) {name = "z"} : (tensor<0x6xf32>) -> ()
}
)IR";

TEST(DistStaticPasses, AZeroSizeTensorMovesNothing) {
  // x + y of shape [0, 6], x Shard(0) and y Shard(1): y's all_to_all (as in
  // ConsumersAskingTheSameLayoutShareOneMove) becomes rank 1's empty value of the target
  // layout, a pd_op.full of [0, 6]: no transfer, as eager's reshard skips zero-size tensors.
  std::string input = kAdd;
  for (size_t p; (p = input.find("4x6")) != std::string::npos;) input.replace(p, 3, "0x6");
  EXPECT_EQ(run("dist-complete,dist-reshard,dist-partition{rank=1}", input, kMP), expand(kZeroSizeExpected, kMP));
}

TEST(DistStaticPasses, ControlFlowOverADistValueNamesTheOpAndTheValue) {
  // cf.if whose condition is computed from a split tensor: refused, naming the op, the
  // operand and its placements.
  pir::IrContext* c = pir::IrContext::global();
  pir::Program p(c);
  pir::Builder b(c, p.block());
  pir::Type t = c->tensor_type(DataType::FLOAT32, {4});
  pir::Value x = b.build("builtin.input", {}, {{"name", c->str_attr("x")}}, {t})->result(0);
  pir::Attribute split = placements_attr(c, ProcessMesh({2}, {0, 1}, {"mp"}), {Placement::shard(0)});
  pir::Value a = b.build(kShardAnnotateOp, {x}, {{"placements", split}}, {t})->result(0);
  pir::Value cond = b.op("pd_op.less_than", {b.op("pd_op.sum", {a}), b.constant_scalar(0.0, DataType::FLOAT32, {})});
  pir::Operation* iff = b.build("cf.if", {cond}, {}, {t}, 2);
  pir::Builder then_b(c, iff->region(0).add_block());
  then_b.yield({then_b.op("pd_op.scale", {x}, {{"scale", c->float_attr(-1.0)}})});
  pir::Builder else_b(c, iff->region(1).add_block());
  else_b.yield({x});
  b.build("builtin.output", {iff->result(0)}, {{"name", c->str_attr("y")}}, {});
  auto complete = [&] {
    pir::PassManager pm;
    pm.add_pipeline("dist-complete");
    pm.run(p);
  };
  expect_error(complete, "dist-complete: cf.if (op #");
  expect_error(complete,
               "has regions; control flow over dist values is not supported (its operand result 0 of "
               "pd_op.less_than");
  expect_error(complete, "is laid out as [Replicate()] on ProcessMesh(shape=[2], process_ids=[0, 1]");
}

TEST(DistStaticPasses, BadInputNamesTheOpTheValueAndThePlacements) {
  auto fails = [](const std::string& input, const std::string& pipeline, const std::string& needle) {
    expect_error([&] { run(pipeline, input, kMP); }, needle);
  };
  // A Shard dim out of range for the value's rank.
  std::string bad = kAdd;
  bad.replace(bad.find("[Shard(1)]"), 10, "[Shard(2)]");
  fails(bad, "dist-complete", "dist-complete: dist.shard_annotate (op #3 of its block): placements [Shard(dim=2)] on");
  fails(bad, "dist-complete", "do not fit result 0 of builtin.input (op #1 of its block) 'y', tensor<4x6xf32>");
  // Operands on different meshes.
  std::string meshes = kAdd;
  meshes.replace(meshes.find("[Shard(1)]|>"), 12, R"([Shard(1)], mesh = [2], ids = [2, 3], names = ["mp"]>)");
  fails(meshes, "dist-complete", "dist-complete: pd_op.add (op #4 of its block): operands on different meshes");
  fails(meshes, "dist-complete", "result 0 of dist.shard_annotate (op #2 of its block), tensor<4x6xf32> on");
  // A rule that rejects its operands (parsed unverified: softmax's axis is out of range).
  const std::string softmax = expand(R"IR(
module {
  %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x6xf32>)
  %1 = "dist.shard_annotate"(%0) {placements = #P<[Shard(0)]|>} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  %2 = "pd_op.softmax"(%1) {axis = 5} : (tensor<4x6xf32>) -> (tensor<4x6xf32>)
  "builtin.output"(%2) {name = "y"} : (tensor<4x6xf32>) -> ()
}
)IR",
                                     kMP);
  expect_error(
      [&] {
    auto p = pir::parse_program(pir::IrContext::global(), softmax, /*verify=*/false);
    pir::PassManager pm;
    pm.set_verify_each(false);
    pm.add_pipeline("dist-complete");
    pm.run(*p);
      },
      "dist-complete: pd_op.softmax (op #2 of its block): its SPMD rule 'softmax' rejects the operands: softmax: "
      "axis 5 out of range for rank 2\n  operand 0: result 0 of dist.shard_annotate (op #1 of its block), "
      "tensor<4x6xf32> as [Shard(dim=0)]");
  // Bad options.
  fails(kAdd, "dist-partition{rank=one}", "dist-partition: option rank must be an integer >= 0, got 'one'");
  fails(kAdd, "dist-partition{rank=-1}", "got '-1'");
  fails(kAdd, "dist-complete{rank=1}", "pass 'dist-complete' takes no option 'rank'");
  fails(kAdd, "dist-partition{rank}", "option 'rank' of dist-partition is not key=value");
}

}  // namespace
}  // namespace oar::dist
