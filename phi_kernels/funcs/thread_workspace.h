// Per-thread float scratch buffers that a kernel keeps across calls (a fresh page costs
// ~11 us to fault in on these machines, more than many kernels): thread_workspace<Tag>
// gives slot `slot` of the calling thread's buffers for kernel family Tag, 64-byte
// aligned, grown (never shrunk) to at least `floats`. Contents are undefined.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "paddle_core/base/errors.h"

namespace oar::phi {

template <typename Tag, int kSlots = 4>
float* thread_workspace(int slot, size_t floats) {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> buf[kSlots];
  thread_local size_t size[kSlots] = {};
  if (size[slot] < floats) {
    buf[slot].reset();
    buf[slot].reset(static_cast<float*>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64)));
    OAR_ENFORCE(buf[slot] != nullptr, Internal, "out of memory for a kernel workspace of ", floats, " floats");
    size[slot] = floats;
  }
  return buf[slot].get();
}

}  // namespace oar::phi
