// The dist dialect's contract with DistModel (Note [Static auto-parallel passes]):
// #dist.placements (uniquing, verify, text and binary round trips, errors) and
// dist.shard_annotate; the reshard planner the passes and eager reshard share.
#include <gtest/gtest.h>

#include "distributed/reshard/transfer.h"
#include "distributed/static/dist_dialect.h"
#include "pir/ir/operation.h"
#include "pir/serialize/serialize.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::dist {
namespace {
using pir::testing::dedent;
using pir::testing::expect_error;

pir::IrContext* ctx() { return pir::IrContext::global(); }
ProcessMesh mesh2x2() { return ProcessMesh({2, 2}, {0, 1, 2, 3}, {"dp", "mp"}); }

TEST(DistDialect, PlacementsAreUniquedAndPrint) {
  Placements p = {Placement::shard(0), Placement::partial(ReduceType::kRedAvg)};
  pir::Attribute a = placements_attr(ctx(), mesh2x2(), p);
  EXPECT_EQ(a, placements_attr(ctx(), mesh2x2(), p));
  EXPECT_NE(a, placements_attr(ctx(), mesh2x2(), {Placement::shard(1), Placement::partial(ReduceType::kRedAvg)}));
  EXPECT_NE(a, placements_attr(ctx(), ProcessMesh({2, 2}, {0, 1, 2, 3}), p));  // other axis names
  EXPECT_TRUE(is_placements_attr(a));
  EXPECT_FALSE(is_placements_attr(ctx()->int_attr(1)));
  EXPECT_EQ(a.str(),
            "#dist.placements<[Shard(0), Partial(avg)], mesh = [2, 2], ids = [0, 1, 2, 3], names = [\"dp\", \"mp\"]>");
  EXPECT_EQ(attr_mesh(a), mesh2x2());
  EXPECT_EQ(attr_placements(a), p);
  expect_error([] { attr_placements(ctx()->int_attr(1), "dist_out[0]"); }, "dist_out[0] must be a #dist.placements");
}

TEST(DistDialect, PlacementsVerify) {
  expect_error([] { placements_attr(ctx(), mesh2x2(), {Placement::shard(0)}); }, "1 placements for a mesh of rank 2");
  expect_error(
      [] {
    placements_attr(ctx(), ProcessMesh({2}, {0, 1}), {Placement::shard(-1)});
      },
      "Shard(-1) has a negative dim");
}

const std::string kProgram = dedent(R"(
  module {
    %0 = "builtin.input"() {name = "x"} : () -> (tensor<4x8xf64>)
    %1 = "dist.shard_annotate"(%0) {placements = #dist.placements<[Shard(0), Partial(max)], mesh = [2, 2], ids = [3, 1, 2, 0], names = ["dp", "mp"]>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
    %2 = "dist.shard_annotate"(%1) {placements = #dist.placements<[Replicate(), Replicate()], mesh = [2, 2], ids = [3, 1, 2, 0], names = ["dp", "mp"]>} : (tensor<4x8xf64>) -> (tensor<4x8xf64>)
    "builtin.output"(%2) {name = "y"} : (tensor<4x8xf64>) -> ()
  }
)");

TEST(DistDialect, TextAndBinaryRoundTrips) {
  auto p = pir::parse_program(ctx(), kProgram);
  EXPECT_EQ(p->str(), kProgram);
  auto q = pir::deserialize_program(ctx(), pir::serialize_program(*p));
  EXPECT_EQ(q->str(), kProgram);
  // A fresh context (other kind ids) reads the same bytes once the dialect is loaded.
  pir::IrContext fresh;
  fresh.load_all_dialects();
  EXPECT_EQ(pir::deserialize_program(&fresh, pir::serialize_program(*p))->str(), kProgram);
}

TEST(DistDialect, BadTextAndBadAnnotations) {
  auto parse = [](const std::string& placements, const std::string& type2 = "tensor<4xf64>") {
    pir::parse_program(ctx(),
                       "module {\n  %0 = \"builtin.input\"() {name = \"x\"} : () -> (tensor<4xf64>)\n"
                       "  %1 = \"dist.shard_annotate\"(%0) {placements = " +
                           placements + "} : (tensor<4xf64>) -> (" + type2 + ")\n}\n");
  };
  const std::string mesh = ", mesh = [2], ids = [0, 1], names = [\"x\"]>";
  expect_error([&] { parse("#dist.placements<[Shard(0), Shard(0)]" + mesh); }, "2 placements for a mesh of rank 1");
  expect_error([&] { parse("#dist.placements<[Split(0)]" + mesh); }, "expected Shard(d), Replicate() or Partial");
  expect_error([&] { parse("#dist.placements<[Partial(mean)]" + mesh); }, "unknown reduce type 'mean'");
  expect_error([&] { parse("#dist.placements<[Shard(0)], mesh = [2], ids = [0, 0], names = [\"x\"]>"); },
               "process id 0 appears more than once");
  expect_error([&] { parse("#dist.placements<[Shard(0)]" + mesh, "tensor<2xf64>"); },
               "the result's type tensor<2xf64> must be the operand's tensor<4xf64>");
  expect_error([&] { parse("3"); }, "attribute 'placements' must be a #dist.placements");
}

TEST(DistDialect, PlannerListsOneTransferPerMeshAxis) {
  using K = Transfer::Kind;
  auto kinds = [](const std::vector<Transfer>& ts) {
    std::vector<K> out;
    for (const Transfer& t : ts) out.push_back(t.kind);
    return out;
  };
  const ProcessMesh m = mesh2x2();
  const Placements r2 = {Placement::replicate(), Placement::replicate()};
  EXPECT_TRUE(plan_reshard({4, 8}, m, r2, r2).empty());
  // [S(0), S(1)] -> [S(1), S(0)]: gather axis 0, all-to-all axis 1, slice axis 0.
  auto t =
      plan_reshard({4, 8}, m, {Placement::shard(0), Placement::shard(1)}, {Placement::shard(1), Placement::shard(0)});
  EXPECT_EQ(kinds(t), (std::vector<K>{K::kAllGather, K::kAllToAll, K::kShardSlice}));
  EXPECT_EQ(t[1].axis, 1);
  EXPECT_EQ(t[1].dim, 1);
  EXPECT_EQ(t[1].to_dim, 0);
  // Partial(sum) on both axes -> [S(0), R]: reduce-scatter on axis 0, all-reduce on axis 1.
  t = plan_reshard({4, 8}, m, {Placement::partial(), Placement::partial()},
                   {Placement::shard(-2), Placement::replicate()});
  EXPECT_EQ(kinds(t), (std::vector<K>{K::kReduceScatter, K::kAllReduce}));
  EXPECT_EQ(t[0].dim, 0);
  // R -> Partial(prod): a local init.
  t = plan_reshard({4}, ProcessMesh({2}, {0, 1}), {Placement::replicate()}, {Placement::partial(ReduceType::kRedProd)});
  EXPECT_EQ(kinds(t), (std::vector<K>{K::kPartialInit}));
  EXPECT_EQ(t[0].reduce, ReduceType::kRedProd);
}

}  // namespace
}  // namespace oar::dist
