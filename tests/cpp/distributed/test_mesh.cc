// ProcessMesh, placements <-> dims_mapping, validation and uneven local shards.
#include <gtest/gtest.h>

#include <unordered_set>

#include "distributed/mesh/dist_tensor_meta.h"
#include "distributed/mesh/placement.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

ProcessMesh mesh2x3() { return ProcessMesh({2, 3}, {0, 1, 2, 3, 4, 5}, {"dp", "mp"}); }

TEST(ProcessMesh, ShapeCoordsAndNames) {
  ProcessMesh m = mesh2x3();
  EXPECT_EQ(m.ndim(), 2);
  EXPECT_EQ(m.size(), 6);
  EXPECT_EQ(m.dim_size("mp"), 3);
  EXPECT_EQ(m.dim_index("dp"), 0);
  EXPECT_EQ(m.coord(4), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.process_at({1, 2}), 5);
  EXPECT_TRUE(m.contains(5));
  EXPECT_FALSE(m.contains(6));
  EXPECT_EQ(ProcessMesh({4}, {3, 1, 0, 2}).dim_names(), (std::vector<std::string>{"d0"}));
}

TEST(ProcessMesh, SubMeshAndAxisGroup) {
  ProcessMesh m = mesh2x3();
  ProcessMesh row1 = m.sub_mesh(0, 1);
  EXPECT_EQ(row1.process_ids(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(row1.dim_names(), (std::vector<std::string>{"mp"}));
  EXPECT_EQ(m.sub_mesh(1, 2).process_ids(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(m.axis_group(0, 4).process_ids(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(m.axis_group(1, 4).process_ids(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_THROW(ProcessMesh({2}, {0, 1}).sub_mesh(0, 0), Error);
  EXPECT_THROW(m.sub_mesh(0, 2), Error);
}

TEST(ProcessMesh, EqualityAndHash) {
  EXPECT_EQ(mesh2x3(), mesh2x3());
  EXPECT_NE(mesh2x3(), ProcessMesh({2, 3}, {0, 1, 2, 3, 4, 5}, {"a", "b"}));
  EXPECT_NE(mesh2x3(), ProcessMesh({3, 2}, {0, 1, 2, 3, 4, 5}, {"dp", "mp"}));
  std::unordered_set<ProcessMesh> s{mesh2x3(), mesh2x3(), ProcessMesh({6}, {0, 1, 2, 3, 4, 5})};
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(mesh2x3().hash(), mesh2x3().hash());
}

TEST(ProcessMesh, BadMeshesRaise) {
  EXPECT_THROW(ProcessMesh({2}, {0, 0}), Error);        // duplicated id
  EXPECT_THROW(ProcessMesh({2}, {0, -1}), Error);       // negative id
  EXPECT_THROW(ProcessMesh({2, 2}, {0, 1, 2}), Error);  // count mismatch
  EXPECT_THROW(ProcessMesh({0}, {}), Error);            // empty axis
  EXPECT_THROW(ProcessMesh({2}, {0, 1}, {"a", "b"}), Error);
  EXPECT_THROW(ProcessMesh({1, 2}, {0, 1}, {"a", "a"}), Error);
  try {
    ProcessMesh({2}, {3, 3});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("process id 3 appears more than once"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mesh2x3().dim_index("pp"), Error);
  EXPECT_THROW(mesh2x3().coord(9), Error);
}

TEST(Placements, RoundTripThroughDistAttr) {
  ProcessMesh m = mesh2x3();
  Placements p{Placement::shard(1), Placement::partial(ReduceType::kRedMax)};
  TensorDistAttr a = to_dist_attr(m, p, 3);
  EXPECT_EQ(a.dims_mapping, (std::vector<int64_t>{-1, 0, -1}));
  ASSERT_EQ(a.partial.size(), 1u);
  EXPECT_EQ(a.partial.at(1), ReduceType::kRedMax);
  EXPECT_EQ(to_placements(a), p);
  // Negative shard dims count from the end.
  EXPECT_EQ(to_dist_attr(m, {Placement::replicate(), Placement::shard(-1)}, 2).dims_mapping,
            (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ(to_placements(TensorDistAttr::replicated(m, 2)),
            (Placements{Placement::replicate(), Placement::replicate()}));
  EXPECT_EQ(Placement::shard(0).to_string(), "Shard(dim=0)");
  EXPECT_EQ(Placement::partial().to_string(), "Partial(reduce_type=kRedSum)");
}

TEST(Placements, InvalidPlacementsRaise) {
  ProcessMesh m = mesh2x3();
  EXPECT_THROW(to_dist_attr(m, {Placement::shard(0)}, 2), Error);                          // length != mesh rank
  EXPECT_THROW(to_dist_attr(m, {Placement::shard(2), Placement::replicate()}, 2), Error);  // dim out of range
  EXPECT_THROW(to_dist_attr(m, {Placement::shard(-3), Placement::replicate()}, 2), Error);
  EXPECT_THROW(to_dist_attr(m, {Placement::shard(0), Placement::shard(0)}, 2), Error);  // co-shard
  try {
    to_dist_attr(m, {Placement::shard(5), Placement::replicate()}, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Shard(dim=5)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate(TensorDistAttr(m, {0, 0}), 2), Error);
  EXPECT_THROW(validate(TensorDistAttr(m, {2, -1}), 2), Error);
  EXPECT_THROW(validate(TensorDistAttr(m, {0}), 2), Error);
  EXPECT_THROW(validate(TensorDistAttr(m, {0, -1}, {{0, ReduceType::kRedSum}}), 2), Error);
  EXPECT_NO_THROW(validate(TensorDistAttr(m, {0, -1}, {{1, ReduceType::kRedSum}}), 2));
}

TEST(LocalShard, UnevenSplitsLeaveTheLastShardSmaller) {
  EXPECT_EQ(shard_range(10, 4, 0), (std::pair<int64_t, int64_t>{0, 3}));
  EXPECT_EQ(shard_range(10, 4, 3), (std::pair<int64_t, int64_t>{9, 10}));
  EXPECT_EQ(shard_range(5, 2, 1), (std::pair<int64_t, int64_t>{3, 5}));
  EXPECT_EQ(shard_range(1, 2, 1), (std::pair<int64_t, int64_t>{1, 1}));  // empty shard
  ProcessMesh m = mesh2x3();
  TensorDistAttr a = to_dist_attr(m, {Placement::shard(1), Placement::shard(0)}, 2);
  // [7, 5]: dim 0 over mp (3): 3,3,1; dim 1 over dp (2): 3,2.
  EXPECT_EQ(local_shape({7, 5}, a, m.coord(5)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(local_offset({7, 5}, a, m.coord(5)), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(local_shape({7, 5}, a, m.coord(0)), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(local_offset({7, 5}, a, m.coord(1)), (std::vector<int64_t>{3, 0}));
  // Shard sizes always add up to the global size.
  for (int64_t size : {0, 1, 5, 8, 13}) {
    for (int64_t n : {1, 2, 3, 4}) {
      int64_t total = 0, next = 0;
      for (int64_t i = 0; i < n; ++i) {
        auto [b, e] = shard_range(size, n, i);
        EXPECT_EQ(b, next);
        total += e - b;
        next = e;
      }
      EXPECT_EQ(total, size);
    }
  }
}

TEST(DistTensorMeta, LivesInTheTensorSlot) {
  Tensor t(DenseTensor{});
  EXPECT_EQ(dist_meta(t), nullptr);
  auto meta = std::make_unique<DistTensorMeta>();
  meta->mesh = ProcessMesh({2}, {0, 1});
  meta->placements = {Placement::shard(0)};
  meta->global_shape = {4, 3};
  t.impl()->dist = std::move(meta);
  ASSERT_NE(dist_meta(t), nullptr);
  EXPECT_EQ(dist_meta(t)->global_shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(dist_meta(Tensor()), nullptr);
}

}  // namespace
}  // namespace oar::dist
