// Rules for ops that contract a dimension: matmul, embedding (a lookup is a one-hot
// matmul), scaled_dot_product_attention and conv2d. A split contraction leaves the
// output Partial (sum).
#include <algorithm>

#include "distributed/spmd_rules/notation.h"
#include "distributed/spmd_rules/rules.h"
#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

/// Batch letters a, b... right-aligned against the broadcast batch dims of x and y;
/// M, K, N for rows, the contraction and columns.
Notations matmul_notations(const SpmdContext& c) {
  const DistMetaTensor& x = c.inputs.at(0);
  const DistMetaTensor& y = c.inputs.at(1);
  OAR_ENFORCE(x.rank() >= 1 && y.rank() >= 1, InvalidArgument, c.op, ": inputs must have rank >= 1, got shapes ",
              x.shape, " and ", y.shape);
  bool tx = c.bool_attr("transpose_x", false), ty = c.bool_attr("transpose_y", false);
  int64_t xb = std::max<int64_t>(x.rank() - 2, 0), yb = std::max<int64_t>(y.rank() - 2, 0);
  int64_t nb = std::max(xb, yb);
  std::vector<int64_t> out_batch(nb, 1);
  for (int64_t i = 0; i < xb; ++i) out_batch[nb - xb + i] = std::max(out_batch[nb - xb + i], x.shape[i]);
  for (int64_t i = 0; i < yb; ++i) out_batch[nb - yb + i] = std::max(out_batch[nb - yb + i], y.shape[i]);
  std::string batch = letters(nb);
  auto batch_of = [&](const DistMetaTensor& t, int64_t b) {
    std::string s;
    for (int64_t i = 0; i < b; ++i) s += t.shape[i] == out_batch[nb - b + i] ? batch[nb - b + i] : '1';
    return s;
  };
  Notations n;
  std::string xs = x.rank() == 1 ? "K" : batch_of(x, xb) + (tx ? "KM" : "MK");
  std::string ys = y.rank() == 1 ? "K" : batch_of(y, yb) + (ty ? "NK" : "KN");
  n.inputs = {xs, ys};
  n.outputs = {batch + (x.rank() > 1 ? "M" : "") + (y.rank() > 1 ? "N" : "")};
  return n;
}

/// embedding(x, weight[V, H]): a split vocabulary gives each process the rows it owns
/// (ids outside them look up zeros), so the output is a Partial sum.
Notations embedding_notations(const SpmdContext& c) {
  std::string ids = letters(c.inputs.at(0).rank());
  Notations n;
  n.inputs = {ids, "VH"};
  n.outputs = {ids + "H"};
  return n;
}

/// query [b, s, h, d], key/value [b, t, h, d|e] (3-d without b), attn_mask broadcast
/// against [b, h, s, t] -> out [b, s, h, e], lse [b, h, s]. Batch, heads and (without a
/// causal mask, whose diagonal depends on the global row) query rows split; the key
/// sequence and head dims stay whole.
Notations sdpa_notations(const SpmdContext& c) {
  const DistMetaTensor& q = c.inputs.at(0);
  const DistMetaTensor& k = c.inputs.at(1);
  bool four = q.rank() == 4;
  std::string pre = four ? "b" : "";
  int64_t o = four ? 1 : 0;
  bool gqa = k.rank() == q.rank() && k.shape[o + 1] != q.shape[o + 1];
  std::string kh = gqa ? "g" : "h";
  Notations n;
  n.inputs = {pre + "shd", pre + "t" + kh + "d", pre + "t" + kh + "e"};
  std::string full = pre + "hst";
  std::string mask;
  if (c.inputs.size() > 3 && c.inputs[3].defined) {
    const DistMetaTensor& m = c.inputs[3];
    std::vector<int64_t> fs = four ? std::vector<int64_t>{q.shape[0], q.shape[2], q.shape[1], k.shape[1]}
                                   : std::vector<int64_t>{q.shape[1], q.shape[0], k.shape[0]};
    for (int64_t i = 0; i < m.rank(); ++i) {
      int64_t f = static_cast<int64_t>(full.size()) - m.rank() + i;
      mask += m.shape[i] == fs[f] ? full[f] : '1';
    }
  }
  n.inputs.push_back(mask);
  n.inputs.resize(c.inputs.size());
  n.outputs = {pre + "she", pre + "hs"};
  n.replicated = "tde";
  if (gqa) n.replicated += "hg";
  if (c.bool_attr("is_causal", false)) n.replicated += "s";
  return n;
}

/// conv2d(input, filter[O, C/groups, kh, kw]): batch and output channels split; a
/// split input channel gives a Partial sum; spatial dims stay whole (halos).
Notations conv2d_notations(const SpmdContext& c) {
  bool nhwc = c.str_attr("data_format", "NCHW") == "NHWC";
  Notations n;
  n.inputs = {nhwc ? "nhwc" : "nchw", "ocyx"};
  n.outputs = {nhwc ? "nuvo" : "nouv"};
  n.replicated = "hwyxuv";
  if (c.int_attr("groups", 1) != 1) n.replicated += "co";
  return n;
}

}  // namespace

OAR_NOTATION_RULE(matmul, matmul_notations)
OAR_NOTATION_RULE(embedding, embedding_notations)
OAR_NOTATION_RULE(scaled_dot_product_attention, sdpa_notations)
OAR_NOTATION_RULE(conv2d, conv2d_notations)

}  // namespace oar::dist
