// Shape/dtype inference for math_ext.yaml (elementwise math beyond math.yaml) and
// stats.yaml (reductions, statistics, sorting and searching). Conventions as in
// infer_meta.h: fill the outputs, raise errors that name the op, argument and values.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

// ---- math_ext.yaml
void RoundInferMeta(const DenseTensor& x, int64_t decimals, DenseTensor* out);
void PolygammaInferMeta(const DenseTensor& x, int64_t n, DenseTensor* out);
void NanToNumInferMeta(const DenseTensor& x, double nan, double posinf, double neginf,
                       DenseTensor* out);
void LerpInferMeta(const DenseTensor& x, const DenseTensor& y, const DenseTensor& weight,
                   DenseTensor* out);
void IncrementInferMeta(const DenseTensor& x, double value, DenseTensor* out);

}  // namespace oar
