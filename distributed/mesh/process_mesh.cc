#include "distributed/mesh/process_mesh.h"

#include <functional>
#include <unordered_set>

#include "paddle_core/base/errors.h"

namespace oar::dist {

ProcessMesh::ProcessMesh(std::vector<int64_t> shape, std::vector<int64_t> process_ids,
                         std::vector<std::string> dim_names)
    : shape_(std::move(shape)), process_ids_(std::move(process_ids)), dim_names_(std::move(dim_names)) {
  OAR_ENFORCE(!shape_.empty(), InvalidArgument, "ProcessMesh: the mesh needs at least one axis");
  int64_t n = 1;
  for (int64_t s : shape_) {
    OAR_ENFORCE(s > 0, InvalidArgument, "ProcessMesh: shape ", shape_, " has a non-positive axis size ", s);
    n *= s;
  }
  OAR_ENFORCE(static_cast<int64_t>(process_ids_.size()) == n, InvalidArgument, "ProcessMesh: shape ", shape_, " holds ",
              n, " processes but ", process_ids_.size(), " process ids were given");
  std::unordered_set<int64_t> seen;
  for (int64_t id : process_ids_) {
    OAR_ENFORCE(id >= 0, InvalidArgument, "ProcessMesh: process id ", id, " is negative (ids: ", process_ids_, ")");
    OAR_ENFORCE(seen.insert(id).second, InvalidArgument, "ProcessMesh: process id ", id,
                " appears more than once (ids: ", process_ids_, ")");
  }
  if (dim_names_.empty()) {
    for (size_t i = 0; i < shape_.size(); ++i) dim_names_.push_back("d" + std::to_string(i));
  }
  OAR_ENFORCE(dim_names_.size() == shape_.size(), InvalidArgument, "ProcessMesh: ", dim_names_.size(),
              " dim_names for a ", shape_.size(), "-d mesh (shape ", shape_, ")");
  std::unordered_set<std::string> names(dim_names_.begin(), dim_names_.end());
  OAR_ENFORCE(names.size() == dim_names_.size(), InvalidArgument, "ProcessMesh: dim_names ", dim_names_,
              " repeat a name");
}

int64_t ProcessMesh::dim_size(int dim) const {
  OAR_ENFORCE(dim >= 0 && dim < ndim(), OutOfRange, "ProcessMesh: axis ", dim, " out of range for a ", ndim(),
              "-d mesh");
  return shape_[dim];
}

int ProcessMesh::dim_index(const std::string& name) const {
  for (int i = 0; i < ndim(); ++i) {
    if (dim_names_[i] == name) return i;
  }
  OAR_THROW(InvalidArgument, "ProcessMesh: no axis named '", name, "' (dim_names: ", dim_names_, ")");
}

bool ProcessMesh::contains(int64_t process_id) const {
  for (int64_t id : process_ids_) {
    if (id == process_id) return true;
  }
  return false;
}

std::vector<int64_t> ProcessMesh::coord(int64_t process_id) const {
  for (size_t flat = 0; flat < process_ids_.size(); ++flat) {
    if (process_ids_[flat] != process_id) continue;
    std::vector<int64_t> c(shape_.size());
    int64_t rest = static_cast<int64_t>(flat);
    for (int d = ndim() - 1; d >= 0; --d) {
      c[d] = rest % shape_[d];
      rest /= shape_[d];
    }
    return c;
  }
  OAR_THROW(InvalidArgument, "ProcessMesh: process ", process_id, " is not in the mesh ", to_string());
}

int64_t ProcessMesh::process_at(const std::vector<int64_t>& c) const {
  OAR_ENFORCE(c.size() == shape_.size(), InvalidArgument, "ProcessMesh: coordinate ", c, " for a ", ndim(), "-d mesh");
  int64_t flat = 0;
  for (int d = 0; d < ndim(); ++d) {
    OAR_ENFORCE(c[d] >= 0 && c[d] < shape_[d], OutOfRange, "ProcessMesh: coordinate ", c, " outside shape ", shape_);
    flat = flat * shape_[d] + c[d];
  }
  return process_ids_[flat];
}

ProcessMesh ProcessMesh::sub_mesh(int dim, int64_t index) const {
  OAR_ENFORCE(ndim() > 1, InvalidArgument, "ProcessMesh: a 1-d mesh has no sub-mesh");
  OAR_ENFORCE(index >= 0 && index < dim_size(dim), OutOfRange, "ProcessMesh: index ", index, " out of range for axis ",
              dim, " of size ", shape_[dim]);
  std::vector<int64_t> shape, ids;
  std::vector<std::string> names;
  for (int d = 0; d < ndim(); ++d) {
    if (d == dim) continue;
    shape.push_back(shape_[d]);
    names.push_back(dim_names_[d]);
  }
  for (size_t flat = 0; flat < process_ids_.size(); ++flat) {
    if (coord(process_ids_[flat])[dim] == index) ids.push_back(process_ids_[flat]);
  }
  return ProcessMesh(std::move(shape), std::move(ids), std::move(names));
}

ProcessMesh ProcessMesh::axis_group(int dim, int64_t process_id) const {
  std::vector<int64_t> c = coord(process_id);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < dim_size(dim); ++i) {
    c[dim] = i;
    ids.push_back(process_at(c));
  }
  return ProcessMesh({dim_size(dim)}, std::move(ids), {dim_names_[dim]});
}

std::string ProcessMesh::to_string() const {
  return detail::str_cat("ProcessMesh(shape=", shape_, ", process_ids=", process_ids_, ", dim_names=", dim_names_, ")");
}

size_t ProcessMesh::hash() const {
  size_t h = 0;
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int64_t s : shape_) mix(std::hash<int64_t>()(s));
  for (int64_t id : process_ids_) mix(std::hash<int64_t>()(id));
  for (const auto& n : dim_names_) mix(std::hash<std::string>()(n));
  return h;
}

}  // namespace oar::dist
