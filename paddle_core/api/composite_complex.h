// Backward helpers of complex.yaml and fft.yaml, composed of ops (so they differentiate
// again), in the style of composite.h. Note [Complex autograd] in docs/notes/autograd.md.
#pragma once

#include <string>
#include <vector>

#include "paddle_core/api/composite.h"

namespace oar::ops {

/// angle(x)'s gradient: 0 for real x; grad * i x / |x|^2 for complex x (0 where x == 0).
Tensor angle_grad(const Tensor& x, const Tensor& grad);
/// The normalization that gives the adjoint (opposite-sign) transform the same scale:
/// "backward" <-> "forward", "ortho" stays.
std::string fft_adjoint_norm(const std::string& normalization);
/// fft_r2c's gradient: the half spectrum zero-padded back to x's length (onesided), the
/// adjoint complex transform, its real part.
Tensor fft_r2c_grad(const Tensor& x, const Tensor& grad, const std::vector<int64_t>& axes,
                    const std::string& normalization, bool forward, bool onesided);
/// fft_c2r's gradient: the adjoint real-to-complex transform of grad, the bins that stand
/// for two conjugate bins of the full spectrum doubled; `half` is x's length on the last axis.
Tensor fft_c2r_grad(const Tensor& grad, const std::vector<int64_t>& axes, const std::string& normalization,
                    bool forward, int64_t half);

}  // namespace oar::ops
