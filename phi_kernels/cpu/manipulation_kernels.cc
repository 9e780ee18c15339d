// Kernels of shape-manipulation ops that are not pure views.
#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/view_meta.h"
#include "phi_kernels/cpu/elementwise.h"

namespace oar::phi {
namespace {

// d x from d x[slice]: zeros everywhere, grad_out written into the sliced view.
template <typename T>
void SliceGradKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& grad_out,
                     const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends, const std::vector<int64_t>& strides,
                     DenseTensor* out) {
  T* o = out->alloc<T>();
  std::fill(o, o + out->numel(), T(0));
  DenseTensor view = SliceView(*out, axes, starts, ends, strides);
  copy_into(grad_out, &view);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(slice_grad, CPU, SliceGradKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
