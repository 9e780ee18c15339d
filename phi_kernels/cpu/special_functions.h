// Scalar special functions in double that kernels of more than one source use.
#pragma once

namespace oar::phi {

/// The inverse error function, accurate to float64 (special_kernels.cc): NaN outside
/// [-1, 1], +-inf at +-1.
double erfinv(double y);

}  // namespace oar::phi
