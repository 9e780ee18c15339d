// Every built-in rule's entry points; registry.cc maps `spmd:` names to them.
#pragma once

#include <vector>

#include "distributed/spmd_rules/spmd_rule.h"

namespace oar::dist {

#define OAR_DECLARE_SPMD_RULE(name)              \
  SpmdInfo name##_forward(const SpmdContext& c); \
  SpmdInfo name##_reverse(const SpmdContext& c, const std::vector<DistMetaTensor>& o);

// pointwise.cc
OAR_DECLARE_SPMD_RULE(elementwise)
OAR_DECLARE_SPMD_RULE(unary)
OAR_DECLARE_SPMD_RULE(expand)
OAR_DECLARE_SPMD_RULE(tile)
OAR_DECLARE_SPMD_RULE(sum_to)
OAR_DECLARE_SPMD_RULE(replicated)
// reduction.cc
OAR_DECLARE_SPMD_RULE(reduction)
OAR_DECLARE_SPMD_RULE(arg_reduction)
OAR_DECLARE_SPMD_RULE(along_axis)
OAR_DECLARE_SPMD_RULE(softmax)
OAR_DECLARE_SPMD_RULE(cross_entropy)
OAR_DECLARE_SPMD_RULE(layer_norm)
OAR_DECLARE_SPMD_RULE(layer_norm_grad)
OAR_DECLARE_SPMD_RULE(rms_norm)
// contraction.cc
OAR_DECLARE_SPMD_RULE(matmul)
OAR_DECLARE_SPMD_RULE(embedding)
OAR_DECLARE_SPMD_RULE(scaled_dot_product_attention)
OAR_DECLARE_SPMD_RULE(conv2d)
// reshape.cc
OAR_DECLARE_SPMD_RULE(reshape)
OAR_DECLARE_SPMD_RULE(flatten)
OAR_DECLARE_SPMD_RULE(squeeze)
OAR_DECLARE_SPMD_RULE(unsqueeze)
OAR_DECLARE_SPMD_RULE(transpose)
// indexing.cc
OAR_DECLARE_SPMD_RULE(concat)
OAR_DECLARE_SPMD_RULE(stack)
OAR_DECLARE_SPMD_RULE(split)
OAR_DECLARE_SPMD_RULE(slice)
OAR_DECLARE_SPMD_RULE(gather)

#undef OAR_DECLARE_SPMD_RULE

}  // namespace oar::dist
