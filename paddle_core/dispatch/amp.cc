#include "paddle_core/dispatch/amp.h"

namespace oar::amp {
namespace {

State& mutable_state() {
  thread_local State s;
  return s;
}

std::atomic<uint64_t> next_generation{1};

}  // namespace

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
  detail::tls_level = level;
}

AmpOp::Kind AmpOp::kind() {
  const State& s = state();
  const uint64_t c = cached_.load(std::memory_order_relaxed);
  if ((c >> 2) == s.generation) return static_cast<Kind>(c & 3);
  Kind k = s.black.count(op_) ? kBlack : s.white.count(op_) ? kWhite : kGray;
  cached_.store((s.generation << 2) | k, std::memory_order_relaxed);
  return k;
}

DataType AmpOp::target(const Place& place, std::initializer_list<DataType> dtypes) {
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
    const bool has_kernel = kernel_ == nullptr ||
        KernelRegistry::instance().find(kernel_, place.type(), s.dtype) != nullptr;
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

}  // namespace oar::amp
