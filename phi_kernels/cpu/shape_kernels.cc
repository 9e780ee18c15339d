// Kernels of the ops that carry sizes computed at run time (a dynamic dim under
// to_static): shape64 reads a tensor's dims into an int64 tensor; dyn_reshape and
// dyn_expand take their target shape from a tensor (its values were checked and turned
// into the output dims by DynReshapeInferMeta / DynExpandInferMeta).
//
// The three are also registered as device-generic kernels (written over copy_into and
// views only), so a to_static program with dynamic shapes runs on a plugin device without
// falling back; the target shape reaches them on the host (`host_inputs: [shape]` in
// manipulation.yaml, Note [Host inputs]), x and out stay on the device.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/meta/view_meta.h"
#include "paddle_core/tensor/float16.h"

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

// The device-generic versions (any place: the host work is on CPU copies only).
template <typename T>
void Shape64AnyKernel(const DeviceContext&, const DenseTensor& input, DenseTensor* out) {
  out->alloc();
  DenseTensor host(out->dims(), DataType::INT64, CPUPlace());
  int64_t* h = host.alloc<int64_t>();
  for (int i = 0; i < input.rank(); ++i) h[i] = input.dims()[i];
  copy_into(host, out);
}

template <typename T>
void DynReshapeAnyKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor&, const std::vector<int64_t>&,
                         DenseTensor* out) {
  out->alloc();
  if (out->numel() == 0) return;
  copy_into(ReshapeView(x, out->dims().vec()), out);  // a view of x, or a contiguous copy on x's place
}

template <typename... T>
bool register_generic() {
  auto& r = KernelRegistry::instance();
  (r.register_generic_kernel("shape64", dtype_of<T>,
                             reinterpret_cast<void*>(static_cast<kernel_sig::shape64>(&Shape64AnyKernel<T>))),
   ...);
  (r.register_generic_kernel("dyn_reshape", dtype_of<T>,
                             reinterpret_cast<void*>(static_cast<kernel_sig::dyn_reshape>(&DynReshapeAnyKernel<T>))),
   ...);
  (r.register_generic_kernel("dyn_expand", dtype_of<T>,
                             reinterpret_cast<void*>(static_cast<kernel_sig::dyn_expand>(&DynExpandKernel<T>))),
   ...);
  return true;
}
const bool g_generic_registered = register_generic<OAR_ALL_TYPES, OAR_COMPLEX_TYPES>();

// `out` may hold buf's memory (the executor donated it, Note [Donated inputs]): its rows
// are then in place and only x is written; memory too small is replaced by twice the
// size, so a loop appending row after row copies O(rows) in all.
template <typename T>
void AppendRowKernel(const DeviceContext&, const DenseTensor& buf, const DenseTensor& x, DenseTensor* out) {
  const int64_t head = buf.dims()[0] == 0 ? 0 : buf.numel();
  const size_t need = static_cast<size_t>(out->numel()) * sizeof(T);
  const bool donated = out->storage() != nullptr && out->storage() == buf.storage();
  bool rows_done = false;
  if (donated && out->storage()->bytes() < need + out->offset() * sizeof(T)) {
    auto grown = std::make_shared<Storage>(std::max(need, 2 * out->storage()->bytes()), out->place());
    if (head) std::memcpy(grown->data(), contiguous(buf).data<T>(), head * sizeof(T));
    out->set_storage(std::move(grown));
    rows_done = true;
  }
  T* o = out->alloc<T>();
  if (head && !rows_done && o != buf.data<T>()) std::memcpy(o, contiguous(buf).data<T>(), head * sizeof(T));
  if (x.numel()) std::memcpy(o + head, contiguous(x).data<T>(), x.numel() * sizeof(T));
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(shape64, CPU, Shape64Kernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(dyn_reshape, CPU, DynReshapeKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(dyn_expand, CPU, DynExpandKernel, OAR_ALL_TYPES, OAR_COMPLEX_TYPES)
OAR_REGISTER_KERNEL(append_row, CPU, AppendRowKernel, OAR_ALL_TYPES)
