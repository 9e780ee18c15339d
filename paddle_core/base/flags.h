// Global flags (gflags). Every flag can be set from the environment as FLAGS_<name>,
// from Python with oar.set_flags({"FLAGS_<name>": v}), or on a C++ command line.
#pragma once

#include <string>
#include <vector>

#include <gflags/gflags.h>

DECLARE_int32(oar_num_threads);
DECLARE_bool(oar_check_nan_inf);
DECLARE_int64(oar_allocator_cache_limit_mb);

namespace oar::flags {

/// Reads FLAGS_<name> environment variables into every registered flag; idempotent.
void init_from_env();
/// Sets a flag by name (without the FLAGS_ prefix); returns false if unknown or unparsable.
bool set_flag(const std::string& name, const std::string& value);
/// Current value of a flag as a string; throws NotFound for an unknown flag.
std::string get_flag(const std::string& name);
/// Names of all Oar flags (those whose name starts with "oar_").
std::vector<std::string> list_flags();

}  // namespace oar::flags
