// The fallback layer's counters (fallback.cc; Note [Devices] in docs/notes/devices.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace oar::dispatch {

/// How many times each "op/device type/dtype" ran through the fallback layer (since the
/// process started or the last reset): what tests check that an op ran on its device with.
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace oar::dispatch
