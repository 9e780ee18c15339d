#include "paddle_core/meta/infer_meta_math_functions.h"

namespace oar {

void RoundInferMeta(const DenseTensor& x, int64_t decimals, DenseTensor* out) {
  OAR_ENFORCE(decimals >= -308 && decimals <= 308, InvalidArgument,
              "round: decimals must be in [-308, 308], got ", decimals);
  UnchangedInferMeta(x, out);
}

void PolygammaInferMeta(const DenseTensor& x, int64_t n, DenseTensor* out) {
  OAR_ENFORCE(n >= 0, InvalidArgument, "polygamma: n must be a non-negative integer, got ", n);
  UnchangedInferMeta(x, out);
}

void NanToNumInferMeta(const DenseTensor& x, double, double, double, DenseTensor* out) {
  UnchangedInferMeta(x, out);
}

void LerpInferMeta(const DenseTensor& x, const DenseTensor& y, const DenseTensor& weight,
                   DenseTensor* out) {
  Dims d = meta::broadcast_dims(x.dims(), y.dims(), "lerp");
  out->set_dtype(x.dtype());
  out->set_dims(meta::broadcast_dims(d, weight.dims(), "lerp"));
}

void IncrementInferMeta(const DenseTensor& x, double, DenseTensor* out) {
  OAR_ENFORCE(x.numel() == 1, InvalidArgument,
              "increment: x must have exactly one element, got shape ", x.dims());
  UnchangedInferMeta(x, out);
}

}  // namespace oar
