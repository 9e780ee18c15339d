// The copy op's kernel (copy_to in paddle_core/ops/creation.yaml): x to another place.
// Written only over device-generic calls (copy_into, the stream copies of
// backends/runtime/streams.h), so it is registered once as a generic kernel and found for
// every device type, the CPU and each plugin alike (Note [Devices]).
#include "backends/runtime/pinned_allocator.h"
#include "backends/runtime/streams.h"
#include "oar_generated/kernel_signatures.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/dense_tensor.h"
#include "paddle_core/tensor/float16.h"

namespace oar::phi {
namespace {

void copy_to(const DeviceContext&, const DenseTensor& x, const Place& place, bool blocking, DenseTensor* out) {
  // Tensor.pin_memory / .to(CUDAPinnedPlace()): a CPU output in pinned memory.
  if (const Place* pin = backends::pinned_output_device(); pin != nullptr && place.is_cpu()) {
    out->set_storage(backends::pinned_storage(*pin, out->numel() * size_of(out->dtype())));
  }
  out->alloc();
  const Place& from = x.place();
  // Non-blocking: contiguous bytes between the host and a device go on the device's
  // current stream; the caller synchronizes before reading them (numpy() does). A pinned
  // host side is read or written later, by the stream: the copy records an event on the
  // block, so it is not reused before, and host reads of it wait (Note [Pinned memory]).
  if (!blocking && from != place && (from.is_cpu() || place.is_cpu()) && x.is_contiguous() && x.numel() > 0) {
    const Place& device = from.is_cpu() ? place : from;
    const OAR_Stream stream = backends::current_stream(device);
    backends::memcpy_async(place, out->raw_data(), from, x.raw_data(), x.numel() * size_of(x.dtype()), stream);
    const DenseTensor& host = from.is_cpu() ? x : *out;
    backends::pinned_record_use(host.storage()->data(), device, stream, /*write=*/place.is_cpu());
    return;
  }
  copy_into(x, out);
}

template <typename T>
void CopyToKernel(const DeviceContext& ctx, const DenseTensor& x, const Place& place, bool blocking, DenseTensor* out) {
  copy_to(ctx, x, place, blocking, out);
}

template <typename... T>
bool register_all() {
  (KernelRegistry::instance().register_generic_kernel(
       "copy_to", dtype_of<T>, reinterpret_cast<void*>(static_cast<kernel_sig::copy_to>(&CopyToKernel<T>))),
   ...);
  return true;
}

const bool g_registered = register_all<OAR_ALL_TYPES, OAR_COMPLEX_TYPES>();

}  // namespace
}  // namespace oar::phi
