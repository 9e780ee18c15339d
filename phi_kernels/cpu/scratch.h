// Scratch: a kernel's working buffer kept per thread (thread_local) and grown as needed.
// Fresh pages cost ~11 us each to fault in on these machines, so a product or convolution
// repeated every step must not allocate: the AMX GEMM's packing (amx_gemm.cc) and the bf16
// paths through float32 (lowp_gemm.cc) keep theirs here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "paddle_core/base/errors.h"

namespace oar::phi {

/// 64-byte-aligned, grown to the largest request and kept; a buffer larger than kKeep (a
/// call far beyond a model's usual ones) is given back by trim() after the call.
struct Scratch {
  static constexpr size_t kKeep = size_t{64} << 20;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> p;
  size_t bytes = 0;

  /// At least `need` bytes; `what` names the kernel in the out-of-memory error.
  void* get(size_t need, const char* what) {
    if (need > bytes) {
      need = (need + 4095) / 4096 * 4096;
      p.reset(std::aligned_alloc(64, need));
      bytes = p ? need : 0;
      OAR_ENFORCE(p, ResourceExhausted, what, ": could not allocate ", need, " bytes of scratch");
    }
    return p.get();
  }
  template <class T>
  T* get(int64_t count, const char* what) {
    return static_cast<T*>(get(static_cast<size_t>(count) * sizeof(T), what));
  }
  void trim() {
    if (bytes > kKeep) p.reset(), bytes = 0;
  }
};

}  // namespace oar::phi
