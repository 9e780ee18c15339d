// Placements (Shard / Replicate / Partial, one per mesh axis) and Paddle's equivalent
// TensorDistAttr form (dims_mapping + partial mesh axes), which the SPMD rules work
// on, with the conversions between them and the local shard geometry.
// See Note [Placements] in docs/notes/distributed.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "distributed/mesh/process_mesh.h"

namespace oar::dist {

/// How Partial values combine into the full tensor (Paddle's ReduceType).
enum class ReduceType { kRedSum = 0, kRedMax, kRedMin, kRedProd, kRedAvg, kRedAny, kRedAll };
const char* reduce_type_name(ReduceType t);

/// How a tensor is laid out along one mesh axis.
struct Placement {
  enum class Kind { kReplicate, kShard, kPartial };
  Kind kind = Kind::kReplicate;
  int64_t dim = -1;                         // Shard: the tensor dimension split
  ReduceType reduce = ReduceType::kRedSum;  // Partial: how the pieces combine

  static Placement replicate() { return {}; }
  static Placement shard(int64_t d) { return {Kind::kShard, d, ReduceType::kRedSum}; }
  static Placement partial(ReduceType r = ReduceType::kRedSum) { return {Kind::kPartial, -1, r}; }
  bool is_replicate() const { return kind == Kind::kReplicate; }
  bool is_shard() const { return kind == Kind::kShard; }
  bool is_partial() const { return kind == Kind::kPartial; }
  std::string to_string() const;
  bool operator==(const Placement& o) const {
    return kind == o.kind && (kind != Kind::kShard || dim == o.dim) && (kind != Kind::kPartial || reduce == o.reduce);
  }
  bool operator!=(const Placement& o) const { return !(*this == o); }
};
using Placements = std::vector<Placement>;
std::string to_string(const Placements& p);

/// Paddle's form: dims_mapping[i] is the mesh axis tensor dim i is split over (-1:
/// not split); `partial` maps mesh axes to their pending reduction. Invariant (checked
/// by validate): a mesh axis splits at most one tensor dim and is never also partial.
struct TensorDistAttr {
  ProcessMesh mesh;
  std::vector<int64_t> dims_mapping;
  std::map<int64_t, ReduceType> partial;

  TensorDistAttr() = default;
  TensorDistAttr(ProcessMesh m, std::vector<int64_t> dm, std::map<int64_t, ReduceType> p = {})
      : mesh(std::move(m)), dims_mapping(std::move(dm)), partial(std::move(p)) {}
  /// Every dim replicated, nothing partial.
  static TensorDistAttr replicated(const ProcessMesh& m, int64_t rank) {
    return TensorDistAttr(m, std::vector<int64_t>(rank, -1));
  }
  bool is_partial() const { return !partial.empty(); }
  bool is_replicated() const;
  std::string to_string() const;
  bool operator==(const TensorDistAttr& o) const {
    return mesh == o.mesh && dims_mapping == o.dims_mapping && partial == o.partial;
  }
  bool operator!=(const TensorDistAttr& o) const { return !(*this == o); }
};

/// Placements -> dims_mapping form for a tensor of rank `rank`. InvalidArgument when
/// the count differs from the mesh's rank, a Shard dim is out of [-rank, rank) or two
/// mesh axes split the same tensor dim (not expressible as a dims_mapping).
TensorDistAttr to_dist_attr(const ProcessMesh& mesh, const Placements& placements, int64_t rank);
/// dims_mapping form -> one placement per mesh axis.
Placements to_placements(const TensorDistAttr& attr);
/// Checks the TensorDistAttr invariants for a tensor of rank `rank` (InvalidArgument
/// naming `what` and the bad entry).
void validate(const TensorDistAttr& attr, int64_t rank, const std::string& what = "tensor");

/// [begin, end) of shard `index` of `n` along a dim of `size`: chunks of ceil(size/n),
/// the last ones smaller or empty (Paddle's uneven split).
std::pair<int64_t, int64_t> shard_range(int64_t size, int64_t n, int64_t index);
/// The local shape / offset of the process at `coord` (mesh coordinate).
std::vector<int64_t> local_shape(const std::vector<int64_t>& global_shape, const TensorDistAttr& attr,
                                 const std::vector<int64_t>& coord);
std::vector<int64_t> local_offset(const std::vector<int64_t>& global_shape, const TensorDistAttr& attr,
                                  const std::vector<int64_t>& coord);

}  // namespace oar::dist
