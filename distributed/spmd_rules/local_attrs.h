// Attributes that name global sizes, made this process's (Note [SPMD rules], "Local
// attributes", in docs/notes/distributed.md). One implementation for the eager dist layer
// (distributed/eager/dist_layer.cc) and the dist-partition pass over a global program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/mesh/placement.h"

namespace oar::dist {

/// Whether `op` ("reshape", "expand", "sum_to") has a `shape` attribute naming its global
/// output sizes.
bool has_local_shape_attr(const std::string& op);
/// That attribute made local: `shape` as the op was given it (reshape's 0 and -1, expand's
/// -1 resolved against the global input shape `global_in`), cut to the output's layout
/// `out` at mesh coordinate `coord`. InvalidArgument when reshape's element count differs.
std::vector<int64_t> local_shape_attr(const std::string& op, std::vector<int64_t> shape,
                                      const std::vector<int64_t>& global_in, const TensorDistAttr& out,
                                      const std::vector<int64_t>& coord);
/// squeeze() without axes removes the input's global size-1 axes (a shard of size 1 must
/// stay): those axes, for an input of global shape `global_in`.
std::vector<int64_t> global_squeeze_axes(const std::vector<int64_t>& global_in);

}  // namespace oar::dist
