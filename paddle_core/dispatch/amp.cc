#include "paddle_core/dispatch/amp.h"

#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/op_observer.h"

namespace oar::amp {
namespace {

State& mutable_state() {
  thread_local State s;
  return s;
}

std::atomic<uint64_t> next_generation{1};

thread_local OpObserver t_observer;
thread_local bool t_in_observer = false;  // ops the observer runs are not observed

}  // namespace

void set_op_observer(OpObserver fn) {
  t_observer = std::move(fn);
  dispatch::set_thread_active(dispatch::Layer::kAmp, state().level != Level::kO0 || t_observer);
}

bool has_op_observer() { return static_cast<bool>(t_observer); }

const State& state() { return mutable_state(); }

void set_state(Level level, DataType dtype, std::vector<std::string> white,
               std::vector<std::string> black) {
  OAR_ENFORCE(dtype == DataType::FLOAT16 || dtype == DataType::BFLOAT16, InvalidArgument,
              "auto_cast: dtype must be float16 or bfloat16, got ", dtype_name(dtype));
  State& s = mutable_state();
  s.level = level;
  s.dtype = dtype;
  s.white = {white.begin(), white.end()};
  s.black = {black.begin(), black.end()};
  s.generation = next_generation.fetch_add(1);
  dispatch::set_thread_active(dispatch::Layer::kAmp, level != Level::kO0 || t_observer);
}

AmpOp::Kind AmpOp::kind() {
  const State& s = state();
  const uint64_t c = cached_.load(std::memory_order_relaxed);
  if ((c >> 2) == s.generation) return static_cast<Kind>(c & 3);
  Kind k = s.black.count(op_) ? kBlack : s.white.count(op_) ? kWhite : static_cast<Kind>(default_category(op_));
  cached_.store((s.generation << 2) | k, std::memory_order_relaxed);
  return k;
}

DataType AmpOp::target(const Place& place, std::span<const DataType> dtypes) {
  const State& s = state();
  bool has32 = false, has_low = false;
  for (DataType d : dtypes) {
    has32 |= d == DataType::FLOAT32;
    has_low |= d == DataType::FLOAT16 || d == DataType::BFLOAT16;
  }
  if (!has32 && !has_low) return DataType::UNDEFINED;
  DataType to = DataType::UNDEFINED;
  const Kind k = kind();
  if (k == kBlack) {
    to = DataType::FLOAT32;
  } else if (k == kWhite || s.level == Level::kO2) {
    // Low precision only where the backend has the kernel (else the op stays float32).
    const bool has_kernel =
        kernel_ == nullptr || KernelRegistry::instance().find(kernel_, place.type(), s.dtype) != nullptr;
    to = has_kernel ? s.dtype : (has_low ? DataType::FLOAT32 : DataType::UNDEFINED);
  } else if (has32 && has_low) {
    to = DataType::FLOAT32;  // O1, an op on neither list with mixed inputs: float32
  }
  if (to == DataType::UNDEFINED) return to;
  for (DataType d : dtypes) {
    if (castable(d) && d != to) return to;
  }
  return DataType::UNDEFINED;
}

namespace {

Tensor cast_to(const Tensor& t, DataType to) {
  return t.defined() && castable(t.dtype()) && t.dtype() != to ? dispatch::cast(t, to) : t;
}

// The amp layer: the floating inputs of an op autocast handles get the dtype its
// AmpOp decides; then the call goes on below.
void amp_layer(dispatch::OpCall& call) {
  auto* amp_op = static_cast<AmpOp*>(call.op->amp);
  if (amp_op != nullptr && state().level != Level::kO0) {  // O0: on for an observer only
    std::vector<DataType> dtypes;
    dtypes.reserve(call.inputs.size());
    const Place* place = nullptr;
    for (const dispatch::Value& v : call.inputs) {
      if (v.is_list) {
        dtypes.push_back(list_dtype(v.list));
        if (place == nullptr && !v.list.empty()) place = &v.list[0].place();
      } else {
        dtypes.push_back(v.tensor.defined() ? v.tensor.dtype() : DataType::UNDEFINED);
        if (place == nullptr && v.tensor.defined()) place = &v.tensor.place();
      }
    }
    const DataType to = amp_op->target(place != nullptr ? *place : CPUPlace(), dtypes);
    if (to != DataType::UNDEFINED) {
      for (dispatch::Value& v : call.inputs) {
        if (v.is_list) {
          for (Tensor& t : v.list) t = cast_to(t, to);
        } else {
          v.tensor = cast_to(v.tensor, to);
        }
      }
    }
  }
  dispatch::call_next(call, dispatch::Layer::kAmp);
  if (OAR_UNLIKELY(t_observer != nullptr) && !t_in_observer) {
    t_in_observer = true;
    try {
      t_observer(call);
    } catch (...) {
      t_in_observer = false;
      throw;
    }
    t_in_observer = false;
  }
}

const bool registered = [] {
  dispatch::set_layer(dispatch::Layer::kAmp, amp_layer);
  return true;
}();

}  // namespace

}  // namespace oar::amp
