#include "distributed/mesh/placement.h"

#include <algorithm>

#include "paddle_core/base/errors.h"

namespace oar::dist {

const char* reduce_type_name(ReduceType t) {
  switch (t) {
    case ReduceType::kRedSum:
      return "kRedSum";
    case ReduceType::kRedMax:
      return "kRedMax";
    case ReduceType::kRedMin:
      return "kRedMin";
    case ReduceType::kRedProd:
      return "kRedProd";
    case ReduceType::kRedAvg:
      return "kRedAvg";
    case ReduceType::kRedAny:
      return "kRedAny";
    case ReduceType::kRedAll:
      return "kRedAll";
  }
  return "?";
}

std::string Placement::to_string() const {
  switch (kind) {
    case Kind::kReplicate:
      return "Replicate()";
    case Kind::kShard:
      return "Shard(dim=" + std::to_string(dim) + ")";
    case Kind::kPartial:
      return std::string("Partial(reduce_type=") + reduce_type_name(reduce) + ")";
  }
  return "?";
}

std::string to_string(const Placements& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? ", " : "") + p[i].to_string();
  return s + "]";
}

bool TensorDistAttr::is_replicated() const {
  return partial.empty() && std::all_of(dims_mapping.begin(), dims_mapping.end(), [](int64_t m) { return m < 0; });
}

std::string TensorDistAttr::to_string() const {
  std::string p;
  for (const auto& [axis, r] : partial) p += (p.empty() ? "" : ", ") + std::to_string(axis) + ":" + reduce_type_name(r);
  return detail::str_cat("TensorDistAttr(dims_mapping=", dims_mapping, ", partial={", p, "}, mesh_shape=", mesh.shape(),
                         ")");
}

TensorDistAttr to_dist_attr(const ProcessMesh& mesh, const Placements& placements, int64_t rank) {
  OAR_ENFORCE(static_cast<int>(placements.size()) == mesh.ndim(), InvalidArgument, "placements: ", placements.size(),
              " placements ", to_string(placements), " for a ", mesh.ndim(), "-d mesh (shape ", mesh.shape(),
              "); give one per mesh axis");
  TensorDistAttr a = TensorDistAttr::replicated(mesh, rank);
  for (int axis = 0; axis < mesh.ndim(); ++axis) {
    const Placement& p = placements[axis];
    if (p.is_partial()) {
      a.partial[axis] = p.reduce;
    } else if (p.is_shard()) {
      OAR_ENFORCE(p.dim >= -rank && p.dim < rank, InvalidArgument, "placements: Shard(dim=", p.dim, ") on mesh axis ",
                  axis, " is out of range for a tensor of rank ", rank);
      int64_t d = p.dim < 0 ? p.dim + rank : p.dim;
      OAR_ENFORCE(a.dims_mapping[d] < 0, InvalidArgument, "placements: tensor dim ", d, " is sharded by mesh axes ",
                  a.dims_mapping[d], " and ", axis, " (", to_string(placements),
                  "); a dim can be split over one mesh axis only");
      a.dims_mapping[d] = axis;
    }
  }
  return a;
}

Placements to_placements(const TensorDistAttr& attr) {
  Placements p(attr.mesh.ndim());
  for (size_t d = 0; d < attr.dims_mapping.size(); ++d) {
    if (attr.dims_mapping[d] >= 0) p[attr.dims_mapping[d]] = Placement::shard(static_cast<int64_t>(d));
  }
  for (const auto& [axis, r] : attr.partial) p[axis] = Placement::partial(r);
  return p;
}

void validate(const TensorDistAttr& attr, int64_t rank, const std::string& what) {
  OAR_ENFORCE(static_cast<int64_t>(attr.dims_mapping.size()) == rank, InvalidArgument, what, ": dims_mapping ",
              attr.dims_mapping, " has ", attr.dims_mapping.size(), " entries for a tensor of rank ", rank);
  std::vector<int> used(attr.mesh.ndim(), 0);
  for (int64_t m : attr.dims_mapping) {
    OAR_ENFORCE(m >= -1 && m < attr.mesh.ndim(), InvalidArgument, what, ": dims_mapping ", attr.dims_mapping,
                " names mesh axis ", m, " of a ", attr.mesh.ndim(), "-d mesh");
    if (m >= 0) {
      OAR_ENFORCE(!used[m]++, InvalidArgument, what, ": dims_mapping ", attr.dims_mapping,
                  " splits two dims over mesh axis ", m);
    }
  }
  for (const auto& [axis, r] : attr.partial) {
    OAR_ENFORCE(axis >= 0 && axis < attr.mesh.ndim(), InvalidArgument, what, ": partial on mesh axis ", axis, " of a ",
                attr.mesh.ndim(), "-d mesh");
    OAR_ENFORCE(!used[axis], InvalidArgument, what, ": mesh axis ", axis, " is both sharding dims_mapping ",
                attr.dims_mapping, " and partial");
  }
}

std::pair<int64_t, int64_t> shard_range(int64_t size, int64_t n, int64_t index) {
  int64_t chunk = (size + n - 1) / n;
  int64_t begin = std::min(index * chunk, size);
  return {begin, std::min(begin + chunk, size)};
}

std::vector<int64_t> local_shape(const std::vector<int64_t>& global_shape, const TensorDistAttr& attr,
                                 const std::vector<int64_t>& coord) {
  validate(attr, static_cast<int64_t>(global_shape.size()));
  std::vector<int64_t> s = global_shape;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t m = attr.dims_mapping[d];
    if (m < 0) continue;
    auto [b, e] = shard_range(global_shape[d], attr.mesh.shape()[m], coord.at(m));
    s[d] = e - b;
  }
  return s;
}

std::vector<int64_t> local_offset(const std::vector<int64_t>& global_shape, const TensorDistAttr& attr,
                                  const std::vector<int64_t>& coord) {
  validate(attr, static_cast<int64_t>(global_shape.size()));
  std::vector<int64_t> o(global_shape.size(), 0);
  for (size_t d = 0; d < o.size(); ++d) {
    int64_t m = attr.dims_mapping[d];
    if (m >= 0) o[d] = shard_range(global_shape[d], attr.mesh.shape()[m], coord.at(m)).first;
  }
  return o;
}

}  // namespace oar::dist
