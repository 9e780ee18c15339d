// ProcessMesh: an N-d array of process ids with a name per axis (Paddle's
// dist.ProcessMesh). Placements (placement.h) say, per mesh axis, how a tensor is laid
// over the processes of that axis. See Note [Placements] in docs/notes/distributed.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace oar::dist {

/// Invariants: shape has no zero/negative entry, process_ids has prod(shape) distinct
/// non-negative entries (row-major), dim_names has one distinct name per axis.
class ProcessMesh {
 public:
  ProcessMesh() = default;
  /// Validates (InvalidArgument naming the bad value); empty dim_names become d0, d1...
  ProcessMesh(std::vector<int64_t> shape, std::vector<int64_t> process_ids, std::vector<std::string> dim_names = {});

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& process_ids() const { return process_ids_; }
  const std::vector<std::string>& dim_names() const { return dim_names_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return static_cast<int64_t>(process_ids_.size()); }
  bool empty() const { return process_ids_.empty(); }
  int64_t dim_size(int dim) const;
  int64_t dim_size(const std::string& name) const { return shape_[dim_index(name)]; }
  /// The axis called `name`; InvalidArgument listing the names when none is.
  int dim_index(const std::string& name) const;

  bool contains(int64_t process_id) const;
  /// The coordinate of `process_id` in the mesh; InvalidArgument when absent.
  std::vector<int64_t> coord(int64_t process_id) const;
  /// The process at `coord`.
  int64_t process_at(const std::vector<int64_t>& coord) const;
  /// The (ndim-1)-d mesh at `index` along `dim` (mesh[:, index] for dim 1).
  ProcessMesh sub_mesh(int dim, int64_t index) const;
  /// The 1-d mesh along `dim` through `process_id`: the group a collective over that
  /// axis runs in.
  ProcessMesh axis_group(int dim, int64_t process_id) const;

  std::string to_string() const;
  bool operator==(const ProcessMesh& o) const {
    return shape_ == o.shape_ && process_ids_ == o.process_ids_ && dim_names_ == o.dim_names_;
  }
  bool operator!=(const ProcessMesh& o) const { return !(*this == o); }
  size_t hash() const;

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> process_ids_;
  std::vector<std::string> dim_names_;
};

}  // namespace oar::dist

template <>
struct std::hash<oar::dist::ProcessMesh> {
  size_t operator()(const oar::dist::ProcessMesh& m) const { return m.hash(); }
};
