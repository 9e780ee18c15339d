// What the sample device's other files (collectives.cc) reach in sample_device.cc: device
// memory as the plugin sees it, its streams, and the thread's last error message.
#pragma once

#include <oar/device_ext.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace sample {

/// The read-write view of device memory [ptr, ptr + n) of device `id`, or nullptr when
/// that range is not inside the device's arena.
char* device_view(int id, const void* ptr, size_t n);
/// The device id whose arena holds [ptr, ptr + n), or -1.
int device_of(const void* ptr, size_t n);
/// Queues `work` on `stream` after what is already there. A non-empty string it returns
/// is an asynchronous failure: the stream's next synchronize_stream reports it (as CUDA's
/// cudaStreamSynchronize reports a failed kernel).
void stream_enqueue(OAR_Stream stream, std::function<std::string()> work);
/// Sets the calling thread's get_last_error_message text; returns `status`.
OAR_Status fail(OAR_Status status, std::string message);

/// Bytes of one element (0 for a value outside the enum) (ccl_reduce.cc).
size_t dtype_size(OAR_DataType t);
/// dst[i] = op over srcs[0..n)[i], in rank order, so every rank gets the same bits.
void reduce_into(char* dst, const std::vector<const char*>& srcs, size_t count, OAR_DataType t, OAR_ReduceOp op);

/// Fills the table's ccl_* slots (collectives.cc).
void fill_collectives(OAR_DeviceInterface* table);

}  // namespace sample
