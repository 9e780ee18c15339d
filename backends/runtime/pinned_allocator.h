// Pinned host memory as CPU storage, cached per device type, and the rule that makes
// asynchronous copies from and to it safe (Note [Pinned memory], docs/notes/devices.md).
//
// A pinned tensor is a CPU tensor whose Storage came from pinned_storage(): every CPU op
// works on it. Its blocks come from the device table's host_memory_allocate (through
// pinned_allocate in streams.h) and are kept for reuse when freed. A queued copy that
// reads or writes a block records an event on its stream (pinned_record_use); a freed
// block is handed out again, or given back to the device, only after all its events
// have completed (polled with query_event, never waited for by allocate; a table
// without query_event has its events synchronized). Blocks are keyed by their base
// pointer (a Storage's data()), so nothing in the tensor layer has to know about them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/include/oar/device_ext.h"
#include "paddle_core/tensor/place.h"
#include "paddle_core/tensor/storage.h"

namespace oar::backends {

/// A CPU storage of at least `bytes` bytes in pinned memory of `device`'s type (a device
/// place, not the CPU); its death returns the block to the cache.
std::shared_ptr<Storage> pinned_storage(const Place& device, size_t bytes);

/// Whether `base` (a Storage's data()) is a live pinned block; if so and `device` is not
/// null, the place whose memory it is.
bool pinned_lookup(const void* base, Place* device = nullptr);

/// Work queued on `stream` of `device` reads (write=false) or writes the pinned block at
/// `base`: the block is not reused before that work ran, and host reads of a written
/// block wait for it. No-op when `base` is not a pinned block.
void pinned_record_use(const void* base, const Place& device, OAR_Stream stream, bool write);

namespace detail {
extern std::atomic<int> g_pinned_blocks_with_writes;
}
/// Whether any pinned block has queued writes (one atomic load): the host-read fast path.
inline bool pinned_writes_pending() { return detail::g_pinned_blocks_with_writes.load(std::memory_order_acquire) != 0; }

/// Waits until the writes queued into the pinned block at `base` have run (what a host
/// read of it does first). Costs one atomic load when no pinned block has such writes.
void pinned_wait_writes(const void* base);

/// Gives every free block back to its device (waiting for its events first).
void pinned_empty_cache();

struct PinnedStats {
  int64_t allocated_bytes = 0;    // live blocks (their rounded sizes)
  int64_t cached_bytes = 0;       // free blocks kept for reuse
  int64_t num_device_allocs = 0;  // calls that reached host_memory_allocate
};
PinnedStats pinned_stats();

/// While alive, the copy op's output on this thread, when it is on the CPU, is pinned
/// memory of `device` (Tensor.pin_memory, Tensor.to(CUDAPinnedPlace())). Nests.
class PinnedOutputScope {
 public:
  explicit PinnedOutputScope(const Place& device);
  ~PinnedOutputScope();
  PinnedOutputScope(const PinnedOutputScope&) = delete;
  PinnedOutputScope& operator=(const PinnedOutputScope&) = delete;

 private:
  const Place* prev_;
  Place device_;
};
/// The device of the innermost PinnedOutputScope of this thread, or null.
const Place* pinned_output_device();

}  // namespace oar::backends
