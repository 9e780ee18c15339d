// Streams and events by Place, over the device table (Note [Devices], docs/notes/devices.md).
//
// Every device place has a default stream, created on first use and never destroyed.
// Each thread has a current stream per place: the default one unless set_current_stream
// chose another (paddle.device.set_stream / stream_guard). Kernels see it in their
// DeviceContext; the caching allocator tags blocks with it. The CPU runs everything
// synchronously on the calling thread: its stream is null and every wait returns at once.
#pragma once

#include <cstddef>

#include "backends/include/oar/device_ext.h"
#include "paddle_core/tensor/place.h"

namespace oar::backends {

/// The place's default stream (null on the CPU).
OAR_Stream default_stream(const Place& place);
/// The calling thread's current stream for `place` (null on the CPU).
OAR_Stream current_stream(const Place& place);
/// Makes `stream` (one created for `place`; null: the default) current for the calling
/// thread; returns the previous one.
OAR_Stream set_current_stream(const Place& place, OAR_Stream stream);

/// Thin wrappers over the table that throw oar::Error naming the device and the call.
/// `flags` are OAR_StreamFlags (device_ext.h): a table without create_stream_with_flags
/// (before ABI 1.3) gives a plain stream, which is correct but may be waited for by the
/// device's blocking copies (Note [Non-blocking streams], docs/notes/devices.md).
OAR_Stream create_stream(const Place& place, unsigned int flags = OAR_STREAM_DEFAULT);
void destroy_stream(const Place& place, OAR_Stream stream);
void synchronize_stream(const Place& place, OAR_Stream stream);
OAR_Event create_event(const Place& place);
void destroy_event(const Place& place, OAR_Event event);
void record_event(const Place& place, OAR_Stream stream, OAR_Event event);
void synchronize_event(const Place& place, OAR_Event event);
/// Work queued on `stream` after this call waits for `event`; a table without
/// stream_wait_event makes the host wait instead (correct, only slower).
void stream_wait_event(const Place& place, OAR_Stream stream, OAR_Event event);

/// A copy queued on `stream` (device side: `place`), host <-> device or within the
/// device; the host must keep `src`/`dst` alive until the stream passes it. Without
/// the table's async slot it is a blocking copy.
void memcpy_async(const Place& dst_place, void* dst, const Place& src_place, const void* src, size_t bytes,
                  OAR_Stream stream);
/// Pinned host memory of `place`'s device (copies from it may run asynchronously);
/// plain host memory when the table has no host_memory_allocate.
void* pinned_allocate(const Place& place, size_t bytes);
void pinned_deallocate(const Place& place, void* ptr, size_t bytes);

}  // namespace oar::backends
