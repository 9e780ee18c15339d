#include "paddle_core/meta/infer_meta_attention.h"

#include <cmath>

namespace oar {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// Checks the operands; returns the output dims.
Dims check_attention(const DenseTensor& q, const DenseTensor& k, const DenseTensor& v,
                     const DenseTensor* mask, double scale) {
  const int r = q.rank();
  OAR_ENFORCE(r == 3 || r == 4, InvalidArgument, kOp,
              ": query must be 4-D [batch_size, seq_len, num_heads, head_dim] or 3-D "
              "[seq_len, num_heads, head_dim], got shape ", q.dims());
  OAR_ENFORCE(k.rank() == r && v.rank() == r, InvalidArgument, kOp,
              ": key and value must have query's rank ", r, ", got key shape ", k.dims(),
              " and value shape ", v.dims());
  OAR_ENFORCE(is_floating(q.dtype()), InvalidType, kOp,
              ": query must be a floating-point tensor, got ", dtype_name(q.dtype()));
  OAR_ENFORCE(k.dtype() == q.dtype() && v.dtype() == q.dtype(), InvalidType, kOp,
              ": key and value must have query's dtype ", dtype_name(q.dtype()), ", got ",
              dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  const int o = r - 3;  // offset of the seq dim
  const Dims& qd = q.dims();
  const Dims& kd = k.dims();
  const Dims& vd = v.dims();
  if (r == 4) {
    OAR_ENFORCE(kd[0] == qd[0] && vd[0] == qd[0], InvalidArgument, kOp,
                ": query, key and value must have the same batch size, got shapes ", qd, ", ",
                kd, ", ", vd);
  }
  OAR_ENFORCE(kd[o] == vd[o], InvalidArgument, kOp,
              ": key and value must have the same seq_len, got shapes ", kd, " and ", vd);
  OAR_ENFORCE(kd[o + 1] == vd[o + 1], InvalidArgument, kOp,
              ": key and value must have the same num_heads, got shapes ", kd, " and ", vd);
  OAR_ENFORCE(kd[o + 2] == qd[o + 2], InvalidArgument, kOp,
              ": key's head_dim must equal query's, got shapes ", qd, " and ", kd);
  const int64_t h = qd[o + 1], hk = kd[o + 1];
  OAR_ENFORCE(hk > 0 ? h % hk == 0 : h == 0, InvalidArgument, kOp,
              ": query's num_heads ", h, " must be a multiple of key/value's num_heads ", hk);
  OAR_ENFORCE(std::isfinite(scale) && scale >= 0.0, InvalidArgument, kOp,
              ": scale must be finite and non-negative (0 means 1/sqrt(head_dim)), got ", scale);
  if (mask != nullptr) {
    OAR_ENFORCE(mask->dtype() == DataType::BOOL || is_floating(mask->dtype()), InvalidType, kOp,
                ": attn_mask must be bool or floating-point, got ", dtype_name(mask->dtype()));
    // Right-aligned against [B, H, Sq, Sk] (or [H, Sq, Sk] for 3-D inputs).
    Dims full = r == 4 ? Dims{qd[0], h, qd[1], kd[1]} : Dims{h, qd[0], kd[0]};
    bool ok = mask->rank() <= full.size();
    for (int i = 0; ok && i < mask->rank(); ++i) {
      const int64_t m = mask->dims()[mask->rank() - 1 - i], f = full[full.size() - 1 - i];
      ok = m == 1 || m == f;
    }
    OAR_ENFORCE(ok, InvalidArgument, kOp, ": attn_mask of shape ", mask->dims(),
                " does not broadcast to the attention scores' shape ", full,
                " ([batch_size, num_heads, query seq_len, key seq_len])");
  }
  Dims out = qd;
  out[r - 1] = vd[r - 1];
  return out;
}

// [B, H, Sq] (or [H, Sq]).
Dims lse_dims(const DenseTensor& q) {
  const Dims& qd = q.dims();
  return q.rank() == 4 ? Dims{qd[0], qd[2], qd[1]} : Dims{qd[1], qd[0]};
}

}  // namespace

void ScaledDotProductAttentionInferMeta(const DenseTensor& query, const DenseTensor& key,
                                        const DenseTensor& value, const DenseTensor* attn_mask,
                                        bool /*is_causal*/, double scale, DenseTensor* out,
                                        DenseTensor* lse) {
  Dims od = check_attention(query, key, value, attn_mask, scale);
  out->set_dtype(query.dtype());
  out->set_dims(od);
  lse->set_dtype(query.dtype() == DataType::FLOAT64 ? DataType::FLOAT64 : DataType::FLOAT32);
  lse->set_dims(lse_dims(query));
}

void ScaledDotProductAttentionGradInferMeta(
    const DenseTensor& query, const DenseTensor& key, const DenseTensor& value,
    const DenseTensor* attn_mask, const DenseTensor& out, const DenseTensor& lse,
    const DenseTensor& grad_out, bool /*is_causal*/, double scale, DenseTensor* query_grad,
    DenseTensor* key_grad, DenseTensor* value_grad) {
  Dims od = check_attention(query, key, value, attn_mask, scale);
  OAR_ENFORCE(out.dims() == od && grad_out.dims() == od, InvalidArgument, kOp,
              "_grad: out and grad_out must have shape ", od, ", got ", out.dims(), " and ",
              grad_out.dims());
  OAR_ENFORCE(grad_out.dtype() == query.dtype() && out.dtype() == query.dtype(), InvalidType,
              kOp, "_grad: out and grad_out must have query's dtype ", dtype_name(query.dtype()));
  OAR_ENFORCE(is_floating(lse.dtype()) && lse.dims() == lse_dims(query), InvalidArgument, kOp,
              "_grad: lse must have shape ", lse_dims(query), ", got ", lse.dims());
  query_grad->set_dtype(query.dtype());
  query_grad->set_dims(query.dims());
  key_grad->set_dtype(key.dtype());
  key_grad->set_dims(key.dims());
  value_grad->set_dtype(value.dtype());
  value_grad->set_dims(value.dims());
}

}  // namespace oar
