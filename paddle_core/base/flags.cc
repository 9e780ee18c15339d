#include "paddle_core/base/flags.h"

#include <cstdlib>
#include <mutex>

#include "paddle_core/base/errors.h"

DEFINE_int32(oar_num_threads, 0, "Intra-op threads; 0 means the OpenMP default (cores)");
DEFINE_bool(oar_check_nan_inf, false, "Check every op output for NaN/Inf and raise");
DEFINE_int64(oar_allocator_cache_limit_mb, 4096,
             "Upper bound of freed host memory kept by the caching allocator");

namespace oar::flags {

void init_from_env() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<gflags::CommandLineFlagInfo> all;
    gflags::GetAllFlags(&all);
    for (const auto& f : all) {
      const char* v = std::getenv(("FLAGS_" + f.name).c_str());
      if (v != nullptr) gflags::SetCommandLineOption(f.name.c_str(), v);
    }
  });
}

bool set_flag(const std::string& name, const std::string& value) {
  return !gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty();
}

std::string get_flag(const std::string& name) {
  std::string value;
  OAR_ENFORCE(gflags::GetCommandLineOption(name.c_str(), &value), NotFound,
              "get_flags: unknown flag FLAGS_", name);
  return value;
}

std::vector<std::string> list_flags() {
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  std::vector<std::string> names;
  for (const auto& f : all) {
    if (f.name.rfind("oar_", 0) == 0) names.push_back(f.name);
  }
  return names;
}

}  // namespace oar::flags
