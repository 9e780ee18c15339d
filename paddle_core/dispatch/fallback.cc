// The fallback layer (Note [Dispatch layers]): an op with no kernel for its device runs
// the CPU kernel instead, with its inputs copied to the host and its outputs copied back
// to the device, and a warning once per (op, device type, dtype). The generated kernel
// stage enters it on a kernel miss for a non-CPU place.
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "backends/runtime/device_manager.h"
#include "paddle_core/dispatch/dispatch.h"

namespace oar::dispatch {
namespace {

/// `t` on `dst`: a contiguous copy through the device table, or `t` itself.
Tensor to_place(const Tensor& t, const Place& dst) {
  if (!t.defined() || t.place() == dst) return t;
  const DenseTensor src = contiguous(t.dense());
  DenseTensor out(src.dims(), src.dtype(), dst);
  out.alloc();
  const size_t bytes = static_cast<size_t>(src.numel()) * size_of(src.dtype());
  if (bytes > 0) {
    auto& dm = backends::DeviceManager::instance();
    if (dst.is_cpu()) {
      dm.memcpy_d2h(src.place(), out.raw_data(), src.raw_data(), bytes);
    } else if (src.place().is_cpu()) {
      dm.memcpy_h2d(dst, out.raw_data(), src.raw_data(), bytes);
    } else {  // device to another device: through the host
      DenseTensor host(src.dims(), src.dtype(), CPUPlace());
      host.alloc();
      dm.memcpy_d2h(src.place(), host.raw_data(), src.raw_data(), bytes);
      dm.memcpy_h2d(dst, out.raw_data(), host.raw_data(), bytes);
    }
  }
  return Tensor(std::move(out));
}

void warn_once(const OpCall& call, const Place& device) {
  DataType dtype = DataType::UNDEFINED;
  for (const Value& v : call.inputs) {
    if (!v.is_list && v.tensor.defined()) {
      dtype = v.tensor.dtype();
      break;
    }
  }
  static std::mutex mu;
  static std::set<std::string> seen;
  const std::string key = std::string(call.op->name) + "/" + backends::DeviceManager::device_type_of(device) +
                          "/" + dtype_name(dtype);
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(key).second) return;
  std::fprintf(stderr, "oar: warning: %s has no %s kernel for %s; running its CPU kernel with copies\n",
               call.op->name, backends::DeviceManager::device_type_of(device).c_str(), dtype_name(dtype));
}

void fallback_layer(OpCall& call) {
  // The device the op ran on: its first tensor's place, else its Place argument.
  Place device = CPUPlace();
  bool found = false;
  for (const Value& v : call.inputs) {
    if (!v.is_list && v.tensor.defined()) {
      device = v.tensor.place();
      found = true;
      break;
    }
    if (v.is_list && !v.list.empty()) {
      device = v.list[0].place();
      found = true;
      break;
    }
  }
  for (AttrValue& a : call.attrs) {
    if (auto* p = std::get_if<Place>(&a)) {
      if (!found) device = *p;
      *p = CPUPlace();
    }
  }
  warn_once(call, device);
  for (Value& v : call.inputs) {
    v.tensor = to_place(v.tensor, CPUPlace());
    for (Tensor& t : v.list) t = to_place(t, CPUPlace());
  }
  call_next(call, Layer::kFallback);
  for (Value& v : call.outputs) {
    v.tensor = to_place(v.tensor, device);
    for (Tensor& t : v.list) t = to_place(t, device);
  }
}

const bool registered = [] {
  set_layer(Layer::kFallback, fallback_layer);
  return true;
}();

}  // namespace
}  // namespace oar::dispatch
