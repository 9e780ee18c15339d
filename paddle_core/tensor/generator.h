// Random number generation: one counter-based engine (Philox4x32-10) and the
// Generator that hands out disjoint ranges of its counter space.
//
// Why Philox and not std::mt19937_64: a Philox stream is a pure function of
// (key, counter), so the whole state is two 64-bit integers (seed, offset), trivially
// saved and restored, and a kernel can draw element i from counter `offset + i / k`
// on any thread: the numbers do not depend on the thread count, and CUDA kernels can
// produce the very same streams (curand uses the same engine). A Mersenne twister
// has 2.5 KB of state that must be advanced serially.
//
// Protocol for random kernels: compute how many 128-bit blocks (4 x uint32) the
// output needs, call `reserve(blocks)` once (under the generator's mutex), then fill
// the output in parallel, element block b drawing philox(key, offset + b).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace oar {

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
struct Philox4x32 {
  using Block = std::array<uint32_t, 4>;
  /// The 4 random words of block `counter` in stream `key`.
  static inline Block block(uint64_t key, uint64_t counter) {
    uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
    uint32_t c2 = 0, c3 = 0;
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int r = 0; r < 10; ++r) {
      const uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return {c0, c1, c2, c3};
  }
};

/// Where a kernel draws from: stream `key`, blocks [offset, offset + reserved).
struct PhiloxRange {
  uint64_t key = 0;
  uint64_t offset = 0;
};

/// The serializable state of a Generator.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

/// A thread-safe source of Philox ranges. Copying is not allowed (it owns a mutex).
class Generator {
 public:
  /// A generator seeded with `seed`.
  explicit Generator(uint64_t seed);
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  /// Restarts the stream from `seed` (offset 0): oar.seed.
  void manual_seed(uint64_t seed);
  /// The seed the stream started from.
  uint64_t seed() const;
  /// Reserves `blocks` consecutive Philox blocks for one kernel call.
  PhiloxRange reserve(uint64_t blocks);
  GeneratorState get_state() const;
  void set_state(const GeneratorState& state);

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The global CPU generator random ops use (seeded nondeterministically at startup,
/// like Paddle's; oar.seed(s) makes runs reproducible).
Generator& default_generator();

/// The range a random op draws `blocks` blocks from: the global generator when
/// `seed` is 0, else a private stream of that seed (same numbers on every call).
inline PhiloxRange philox_range_for(int64_t seed, uint64_t blocks) {
  if (seed != 0) return PhiloxRange{static_cast<uint64_t>(seed), 0};
  return default_generator().reserve(blocks);
}

}  // namespace oar
