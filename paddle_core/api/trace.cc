#include "paddle_core/api/trace.h"

namespace oar::trace {
namespace {
thread_local Tracer* t_active = nullptr;
}

Tracer* active() { return t_active; }

TracerGuard::TracerGuard(Tracer* t) : prev_(t_active) { t_active = t; }
TracerGuard::~TracerGuard() { t_active = prev_; }

}  // namespace oar::trace
