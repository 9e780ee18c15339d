// Rules for ops that select or join along an axis: concat, stack, split, slice,
// gather and index_select. The axis they cut or join stays whole (a split of it would
// need the global offsets); the other dims keep their split. All are linear in x, so
// Partial inputs stay Partial.
#include "distributed/spmd_rules/notation.h"
#include "distributed/spmd_rules/rules.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

Notations concat_notations(const SpmdContext& c) {
  OAR_ENFORCE(!c.inputs.empty(), InvalidArgument, c.op, ": needs at least one input");
  std::string in = letters(c.inputs[0].rank());
  Notations n;
  n.inputs.assign(c.inputs.size(), in);
  n.outputs = {in};
  n.replicated = in.substr(norm_axis(c, c.int_attr("axis", 0), c.inputs[0].rank()), 1);
  n.linear = true;
  return n;
}

/// stack: a new (replicated) dim at `axis`.
Notations stack_notations(const SpmdContext& c) {
  OAR_ENFORCE(!c.inputs.empty(), InvalidArgument, c.op, ": needs at least one input");
  std::string in = letters(c.inputs[0].rank()), out = in;
  out.insert(norm_axis(c, c.int_attr("axis", 0), c.inputs[0].rank() + 1), 1, 'z');
  Notations n;
  n.inputs.assign(c.inputs.size(), in);
  n.outputs = {out};
  n.replicated = "z";
  n.linear = true;
  return n;
}

Notations split_notations(const SpmdContext& c) {
  std::string in = letters(c.inputs.at(0).rank());
  int64_t count = c.num_outputs;
  if (c.has_attr("num")) count = c.int_attr("num", 1);
  if (c.has_attr("num_or_sections")) {
    std::vector<int64_t> s = c.ints_attr("num_or_sections", {});
    count = s.size() == 1 ? s[0] : static_cast<int64_t>(s.size());
  }
  Notations n;
  n.inputs = {in};
  n.outputs.assign(count, in);
  n.replicated = in.substr(norm_axis(c, c.int_attr("axis", 0), c.inputs[0].rank()), 1);
  n.linear = true;
  return n;
}

Notations slice_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  std::string in = letters(x.rank());
  Notations n;
  n.inputs = {in};
  n.outputs = {in};
  for (int64_t a : c.ints_attr("axes", {})) n.replicated += in[norm_axis(c, a, x.rank())];
  n.linear = true;
  return n;
}

/// gather / index_select(x, index, axis): out is x with dim `axis` replaced by index's
/// dims, which may be split like the index.
Notations gather_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  const DistMetaTensor& index = c.inputs.at(1);
  int64_t a = norm_axis(c, c.int_attr("axis", 0), x.rank());
  std::string in = letters(x.rank()), idx = letters(index.rank(), 'p'), out = in;
  out.replace(a, 1, idx);
  Notations n;
  n.inputs = {in, idx};
  n.outputs = {out};
  n.replicated = in.substr(a, 1);
  return n;
}

}  // namespace

OAR_NOTATION_RULE(concat, concat_notations)
OAR_NOTATION_RULE(stack, stack_notations)
OAR_NOTATION_RULE(split, split_notations)
OAR_NOTATION_RULE(slice, slice_notations)
OAR_NOTATION_RULE(gather, gather_notations)

}  // namespace oar::dist
