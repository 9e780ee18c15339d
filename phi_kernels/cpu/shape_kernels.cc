// Kernels of the ops that carry sizes computed at run time (a dynamic dim under
// to_static): shape64 reads a tensor's dims into an int64 tensor; dyn_reshape and
// dyn_expand take their target shape from a tensor (its values were checked and turned
// into the output dims by DynReshapeInferMeta / DynExpandInferMeta).
#include <cstring>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/view_meta.h"

namespace oar::phi {
namespace {

template <typename T>
void Shape64Kernel(const DeviceContext&, const DenseTensor& input, DenseTensor* out) {
  int64_t* o = out->alloc<int64_t>();
  for (int i = 0; i < input.rank(); ++i) o[i] = input.dims()[i];
}

template <typename T>
void DynReshapeKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor&, const std::vector<int64_t>&,
                      DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const DenseTensor c = contiguous(x);
  std::memcpy(o, c.data<T>(), out->numel() * sizeof(T));
}

template <typename T>
void DynExpandKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor&, const std::vector<int64_t>&,
                     DenseTensor* out) {
  out->alloc<T>();
  if (out->numel() == 0) return;
  copy_into(ExpandView(x, out->dims().vec()), out);
}

template <typename T>
void AppendRowKernel(const DeviceContext&, const DenseTensor& buf, const DenseTensor& x, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t head = buf.dims()[0] == 0 ? 0 : buf.numel();
  if (head) std::memcpy(o, contiguous(buf).data<T>(), head * sizeof(T));
  if (x.numel()) std::memcpy(o + head, contiguous(x).data<T>(), x.numel() * sizeof(T));
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(shape64, CPU, Shape64Kernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(dyn_reshape, CPU, DynReshapeKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(dyn_expand, CPU, DynExpandKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(append_row, CPU, AppendRowKernel, OAR_ALL_TYPES)
