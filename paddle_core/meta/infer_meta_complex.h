// Shape/dtype inference for complex.yaml (the parts of complex tensors) and fft.yaml
// (the three FFT primitives). Conventions as in infer_meta.h: fill the outputs, raise
// errors that name the op, the argument and the values.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

// ---- complex.yaml
/// complex(real, imag): both float32/float64 (promoted alike), broadcast; complex out.
void ComplexInferMeta(const DenseTensor& real, const DenseTensor& imag, DenseTensor* out);
/// as_complex: a float tensor [..., 2] -> complex [...].
void AsComplexInferMeta(const DenseTensor& x, DenseTensor* out);
/// as_real: a complex tensor [...] -> float [..., 2].
void AsRealInferMeta(const DenseTensor& x, DenseTensor* out);

// ---- fft.yaml
void FftC2CInferMeta(const DenseTensor& x, const IntList& axes, const std::string& normalization, bool forward,
                     DenseTensor* out);
void FftR2CInferMeta(const DenseTensor& x, const IntList& axes, const std::string& normalization, bool forward,
                     bool onesided, DenseTensor* out);
/// last_dim_size 0: 2 * (x.dims[axes.back()] - 1), as Paddle.
void FftC2RInferMeta(const DenseTensor& x, const IntList& axes, const std::string& normalization, bool forward,
                     int64_t last_dim_size, DenseTensor* out);

namespace meta {
/// The axes of an FFT, normalized to [0, rank): non-empty, in range, no repeats.
std::vector<int64_t> fft_axes(const IntList& axes, int rank, const char* op);
/// The scale an FFT's result is multiplied by: normalization "backward" / "forward" /
/// "ortho" (else InvalidArgument naming op), n the product of the transformed sizes.
double fft_scale(const std::string& normalization, bool forward, int64_t n, const char* op);
}  // namespace meta

}  // namespace oar
