// The autocast (AMP) dispatch layer. Note [AMP] in docs/notes/amp.md.
//
// oar.amp.auto_cast sets a per-thread state (level, low-precision dtype, op lists) and
// switches the amp dispatch layer (paddle_core/dispatch/dispatch.h) on for the thread.
// The layer asks the op's AmpOp::target() which dtype its floating inputs should have,
// casts those that need it (a differentiable cast, so gradients reach float32
// parameters) and continues below itself with the cast inputs.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "paddle_core/dispatch/kernel_registry.h"

namespace oar::amp {

enum class Level : int8_t { kO0 = 0, kO1 = 1, kO2 = 2 };

/// An op's autocast category: white runs in low precision, black in float32, gray
/// follows its inputs (O1) or the level (O2).
enum class Category : uint8_t { kGray = 0, kWhite = 1, kBlack = 2 };
/// The category op `op`'s definition declares (its `amp:` key); kGray for any other
/// name. Defined in the generated oar_generated/amp_table.cc.
Category default_category(std::string_view op);
/// The ops whose definitions declare `category`, sorted (oar.amp.white_list()).
std::vector<std::string> default_ops(Category category);

/// The calling thread's autocast state.
struct State {
  Level level = Level::kO0;
  DataType dtype = DataType::BFLOAT16;  // FLOAT16 or BFLOAT16
  /// oar.amp's custom lists (any names, as Paddle accepts), applied over the defaults:
  /// black wins, then white, then the op's default_category.
  std::unordered_set<std::string> white, black;
  uint64_t generation = 0;  // changes with every set_state (AmpOp's cache key)
};

const State& state();
/// Replaces this thread's state; level kO0 turns autocast off.
void set_state(Level level, DataType dtype, std::vector<std::string> white,
               std::vector<std::string> black);

/// The autocast decision for one op, with its list membership cached per state.
class AmpOp {
 public:
  AmpOp(const char* op, const char* kernel) : op_(op), kernel_(kernel) {}
  /// The dtype the op's floating inputs (float32/float16/bfloat16; float64 is never
  /// touched) should be cast to, or UNDEFINED when none needs a cast. `dtypes` are
  /// the inputs' dtypes (UNDEFINED for absent optional inputs); `place` picks the
  /// backend whose kernels decide whether the op can run in low precision.
  DataType target(const Place& place, std::span<const DataType> dtypes);
  DataType target(const Place& place, std::initializer_list<DataType> dtypes) {
    return target(place, std::span<const DataType>(dtypes.begin(), dtypes.size()));
  }

 private:
  // Category's values, widened for the cache word.
  enum Kind : uint64_t { kGray = 0, kWhite = 1, kBlack = 2 };
  Kind kind();
  const char* op_;
  const char* kernel_;
  std::atomic<uint64_t> cached_{~uint64_t{0}};  // (generation << 2) | kind
};

/// The float dtype of a tensor list for AmpOp::target: float32 if any element is
/// float32, else the first low-precision one, else UNDEFINED.
template <typename TensorList>
DataType list_dtype(const TensorList& ts) {
  DataType r = DataType::UNDEFINED;
  for (const auto& t : ts) {
    if (!t.defined()) continue;
    const DataType d = t.dtype();
    if (d == DataType::FLOAT32) return d;
    if ((d == DataType::FLOAT16 || d == DataType::BFLOAT16) && r == DataType::UNDEFINED) r = d;
  }
  return r;
}

/// Whether autocast may cast a tensor of dtype `d`.
inline bool castable(DataType d) {
  return d == DataType::FLOAT32 || d == DataType::FLOAT16 || d == DataType::BFLOAT16;
}

}  // namespace oar::amp
