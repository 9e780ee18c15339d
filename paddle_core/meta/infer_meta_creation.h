// Shape/dtype inference of the creation ops (see infer_meta.h for the conventions).
#pragma once

#include "paddle_core/meta/infer_meta.h"

namespace oar {

/// The dtype arange computes in: `dtype`, or int64 for integer bounds / the default float.
DataType arange_dtype(const Scalar& start, const Scalar& end, const Scalar& step, DataType dtype);

void ArangeInferMeta(const Scalar& start, const Scalar& end, const Scalar& step, DataType dtype,
                     const Place& place, DenseTensor* out);
void LinspaceInferMeta(double start, double stop, int64_t num, DataType dtype, const Place& place,
                       DenseTensor* out);
void EyeInferMeta(int64_t num_rows, int64_t num_columns, DataType dtype, const Place& place,
                  DenseTensor* out);
void UniformInferMeta(const IntList& shape, DataType dtype, double min, double max, int64_t seed,
                      const Place& place, DenseTensor* out);
void GaussianInferMeta(const IntList& shape, double mean, double std, int64_t seed, DataType dtype,
                       const Place& place, DenseTensor* out);
void RandintInferMeta(int64_t low, int64_t high, const IntList& shape, DataType dtype,
                      const Place& place, DenseTensor* out);
/// uniform / gaussian / randint sized by a shape tensor (meta::shape_operand); all dims
/// dynamic (0, data_dependent) when neither its values nor a hint are known.
void DynUniformInferMeta(const DenseTensor& shape, const IntList& hint, DataType dtype, double min, double max,
                         int64_t seed, const Place& place, DenseTensor* out);
void DynGaussianInferMeta(const DenseTensor& shape, const IntList& hint, double mean, double std, int64_t seed,
                          DataType dtype, const Place& place, DenseTensor* out);
void DynRandintInferMeta(const DenseTensor& shape, const IntList& hint, int64_t low, int64_t high, DataType dtype,
                         const Place& place, DenseTensor* out);
void RandpermInferMeta(int64_t n, DataType dtype, const Place& place, DenseTensor* out);
/// The copy op: x's shape and dtype, on `place`.
void CopyToInferMeta(const DenseTensor& x, const Place& place, DenseTensor* out);

}  // namespace oar
