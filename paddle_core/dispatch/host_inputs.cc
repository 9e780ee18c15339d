#include "paddle_core/dispatch/host_inputs.h"

#include <string>

#include "paddle_core/base/errors.h"

namespace oar::detail {

DenseTensor on_host(const DenseTensor& t, const char* op, const char* arg) {
  if (t.place().is_cpu() || !t.initialized()) return t;
  DenseTensor host(t.dims(), t.dtype(), CPUPlace());
  host.alloc();
  try {
    copy_into(t, &host);
  } catch (const Error& e) {
    throw Error(e.kind(), std::string(op) + ": copying argument '" + arg + "' from " + t.place().str() +
                              " to the host, where its kernels read it: " + e.message());
  }
  return host;
}

}  // namespace oar::detail
