// Global size attributes made local. Note [SPMD rules] in docs/notes/distributed.md.
#include "distributed/spmd_rules/local_attrs.h"

#include "paddle_core/base/errors.h"

namespace oar::dist {

bool has_local_shape_attr(const std::string& op) { return op == "reshape" || op == "expand" || op == "sum_to"; }

std::vector<int64_t> local_shape_attr(const std::string& op, std::vector<int64_t> s, const std::vector<int64_t>& g,
                                      const TensorDistAttr& out, const std::vector<int64_t>& coord) {
  int64_t numel = 1;
  for (int64_t d : g) numel *= d;
  if (op == "reshape") {
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == 0 && i < g.size()) s[i] = g[i];
      if (s[i] == -1) {
        infer = static_cast<int64_t>(i);
      } else {
        known *= s[i];
      }
    }
    if (infer >= 0 && known != 0) s[infer] = numel / known;
    known = 1;
    for (int64_t d : s) known *= d;
    OAR_ENFORCE(known == numel, InvalidArgument, "reshape: shape has ", known, " elements but the input has ", numel);
  } else if (op == "expand") {
    const int64_t off = static_cast<int64_t>(s.size()) - static_cast<int64_t>(g.size());
    for (size_t j = 0; j < g.size(); ++j) {
      if (off + static_cast<int64_t>(j) >= 0 && s[off + j] == -1) s[off + j] = g[j];
    }
  }
  return local_shape(s, out, coord);
}

std::vector<int64_t> global_squeeze_axes(const std::vector<int64_t>& g) {
  std::vector<int64_t> axes;
  for (size_t j = 0; j < g.size(); ++j) {
    if (g[j] == 1) axes.push_back(static_cast<int64_t>(j));
  }
  return axes;
}

}  // namespace oar::dist
