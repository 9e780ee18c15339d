// The fallback layer (Note [Dispatch layers], Note [Devices]): an op with no kernel for
// its device runs the CPU kernel instead, with its inputs copied to the host and its
// outputs copied back to the device, and a warning once per (op, device type, dtype).
// The generated kernel stage enters it on a kernel miss for a non-CPU place.
// FLAGS_enable_api_kernel_fallback=0 (Paddle's flag) turns the miss into an error.
#include <gflags/gflags.h>

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/fallback.h"

DEFINE_bool(enable_api_kernel_fallback, true,
            "An op with no kernel for its device runs its CPU kernel with copies (else: an error)");

namespace oar::dispatch {

bool fallback_allowed(const Place& place) { return can_fall_back(place) && FLAGS_enable_api_kernel_fallback; }

void warn_fallback(std::string_view op, DeviceType device, DataType dtype, std::string_view declined) {
  static std::mutex mu;
  static std::set<std::string> seen;
  const std::string key =
      std::string(op) + "/" + device_type_name(device) + "/" + dtype_name(dtype) + (declined.empty() ? "" : "/d");
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(key).second) return;
  if (declined.empty()) {
    std::fprintf(stderr, "oar: warning: %.*s has no %s kernel for %s; running its CPU kernel with copies\n",
                 static_cast<int>(op.size()), op.data(), device_type_name(device).c_str(), dtype_name(dtype));
  } else {
    std::fprintf(stderr,
                 "oar: warning: %.*s: the %s kernel for %s declined (%.*s); running its CPU kernel with copies\n",
                 static_cast<int>(op.size()), op.data(), device_type_name(device).c_str(), dtype_name(dtype),
                 static_cast<int>(declined.size()), declined.data());
  }
}

namespace {

DataType first_dtype(const OpCall& call) {
  for (const Value& v : call.inputs) {
    if (!v.is_list && v.tensor.defined()) return v.tensor.dtype();
    if (v.is_list && !v.list.empty()) return v.list[0].dtype();
  }
  for (const AttrValue& a : call.attrs)  // a creation op (uniform, full): the dtype it makes
    if (const auto* d = std::get_if<DataType>(&a)) return *d;
  return DataType::UNDEFINED;
}

[[noreturn]] void refuse(const OpCall& call, const Place& device) {
  std::string have;
  for (DataType t : KernelRegistry::instance().dtypes(call.op->name, device.type())) {
    have += (have.empty() ? "" : ", ") + std::string(dtype_name(t));
  }
  OAR_THROW(InvalidType, call.op->name, ": no kernel on ", device.str(), " for dtype ", dtype_name(first_dtype(call)),
            " (its kernels there: ", have.empty() ? "none" : have,
            ") and FLAGS_enable_api_kernel_fallback is off, so it does not run on the CPU");
}

/// `t` on `dst` (a copy through the devices' copy kernels and tables), or `t` itself.
Tensor to_place(const Tensor& t, const Place& dst) {
  if (!t.defined() || t.place() == dst) return t;
  DenseTensor out(t.dims(), t.dtype(), dst);
  out.alloc();
  copy_into(t.dense(), &out);
  return Tensor(std::move(out));
}

void warn_once(const OpCall& call, const Place& device) {
  warn_fallback(call.op->name, device.type(), first_dtype(call));
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
  if (!FLAGS_enable_api_kernel_fallback) refuse(call, device);
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
