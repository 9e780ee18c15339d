// The CPU random engine: the 64-bit Mersenne Twister, draw for draw and state for state
// the standard library's std::mt19937_64 (Note [The engine] in mt19937_64.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <random>

namespace oar {

/// MT19937-64 with std::mt19937_64's seeding, draws and text form, so Paddle's seeded
/// streams (a std::mt19937_64 seeded through std::seed_seq) reproduce exactly. It meets
/// UniformRandomBitGenerator, so the std:: distributions draw from it as they would from
/// std::mt19937_64; fill() gives a block of raw draws at a fraction of their cost.
class MersenneTwister64 {
 public:
  using result_type = uint64_t;
  static constexpr size_t kStateSize = 312;
  static constexpr uint64_t kDefaultSeed = 5489u;

  MersenneTwister64() { seed(kDefaultSeed); }
  explicit MersenneTwister64(uint64_t s) { seed(s); }
  explicit MersenneTwister64(std::seed_seq& seq) { seed(seq); }

  /// std::mt19937_64::seed(s): the state from the MT initialization recurrence.
  void seed(uint64_t s);
  /// std::mt19937_64::seed(seq): the state from seq.generate's words.
  void seed(std::seed_seq& seq);

  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }

  /// The next draw.
  uint64_t operator()() {
    if (pos_ >= kStateSize) twist();
    return temper(state_[pos_++]);
  }
  /// out[0, n) = the next n draws, the same as n calls of operator().
  void fill(uint64_t* out, int64_t n);
  /// Skips the next n draws.
  void discard(uint64_t n);

  friend bool operator==(const MersenneTwister64& a, const MersenneTwister64& b);
  /// std::mt19937_64's text form: the 312 state words, then the position, space-separated.
  friend std::ostream& operator<<(std::ostream& os, const MersenneTwister64& e);
  /// Reads the text form; sets failbit on anything else (a position past 312 included).
  friend std::istream& operator>>(std::istream& is, MersenneTwister64& e);

 private:
  static uint64_t temper(uint64_t z) {
    z ^= (z >> 29) & 0x5555555555555555ull;
    z ^= (z << 17) & 0x71d67fffeda60000ull;
    z ^= (z << 37) & 0xfff7eee000000000ull;
    return z ^ (z >> 43);
  }
  /// The next 312 state words (the recurrence over the whole state); pos_ = 0.
  void twist();

  uint64_t state_[kStateSize];
  size_t pos_ = kStateSize;
};

}  // namespace oar
