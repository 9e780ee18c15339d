// Einsum-like notation, the engine under most rules (as in Paddle's rules): each
// tensor dim gets a letter, and dims sharing a letter must share a sharding. A rule
// only says which letters its tensors have; merging, conflicts, Partial for split
// contractions and the reverse direction are done here once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "distributed/spmd_rules/spmd_rule.h"

namespace oar::dist {

/// The letters of a rule. '1' marks a broadcast dim: always replicated. An absent
/// optional input has the empty notation.
struct Notations {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  /// Letters that must not be split (a softmax axis, sliced dims...).
  std::string replicated;
  /// Letters in inputs but in no output are contracted: when split, each process holds
  /// a partial result combined by `reduce`.
  ReduceType reduce = ReduceType::kRedSum;
  /// Partial inputs may stay Partial (the op is linear: add, neg...) when every input
  /// is partial over the same mesh axes; otherwise Partial inputs are asked replicated.
  bool linear = false;
};

/// Letters a, b, c... for a tensor of rank `rank`, starting at `first`.
std::string letters(int64_t rank, char first = 'a');
/// Per letter, the mesh axis it is split over (-1: none), from tensors' dims_mappings:
/// the first tensor that splits a letter wins; a mesh axis claimed by two letters
/// stays with the letter seen first; letters in `replicated` and '1' stay -1.
std::map<char, int64_t> merge_axes(const std::vector<std::string>& notations,
                                   const std::vector<const std::vector<int64_t>*>& mappings,
                                   const std::string& replicated);
std::vector<int64_t> mapping_for(const std::string& notation, const std::map<char, int64_t>& axes);

SpmdInfo infer_by_notation(const SpmdContext& ctx, const Notations& n);
SpmdInfo reverse_by_notation(const SpmdContext& ctx, const std::vector<DistMetaTensor>& outputs, const Notations& n);

/// Normalizes `axis` into [0, rank); OutOfRange naming the op otherwise.
int64_t norm_axis(const SpmdContext& ctx, int64_t axis, int64_t rank);

/// Defines <name>_forward and <name>_reverse from a Notations builder.
#define OAR_NOTATION_RULE(name, builder)                                                     \
  SpmdInfo name##_forward(const SpmdContext& c) { return infer_by_notation(c, builder(c)); } \
  SpmdInfo name##_reverse(const SpmdContext& c, const std::vector<DistMetaTensor>& o) {      \
    return reverse_by_notation(c, o, builder(c));                                            \
  }

}  // namespace oar::dist
