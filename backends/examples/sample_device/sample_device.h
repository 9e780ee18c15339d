// What the sample device's kernels (kernels_*.cc) use of its runtime (sample_device.cc).
// Nothing here is exported: the plugin's only public symbol is oar_init_plugin.
#pragma once

#include <oar/device_ext.h>
#include <oar/kernel_ext.h>

#include <cstddef>
#include <functional>
#include <string>

namespace sample {

/// The plugin's read-write view of [p, p + bytes) of device `d`'s memory (what Oar sees
/// is PROT_NONE), or null when that range is not in the device's arena.
char* host_view(const OAR_Device* d, const void* p, size_t bytes);

/// Queues `work` on `stream`, after what is queued there (null: runs it on the calling
/// thread after all work queued on the device).
OAR_Status launch(const OAR_Device* d, OAR_Stream stream, std::function<void()> work);

/// Waits for the work queued on `stream` (null: on the whole device).
OAR_Status synchronize(const OAR_Device* d, OAR_Stream stream);

/// True when SAMPLE_DEVICE_FAIL (comma-separated, read at each call) lists `what`: the
/// debug switch that makes an allocation, a copy or a kernel fail.
bool debug_fail(const std::string& what);

/// Registers every kernel of kernels_*.cc (OAR_DeviceRegistration.register_kernels).
OAR_Status register_kernels(const OAR_KernelApi* api);

}  // namespace sample
