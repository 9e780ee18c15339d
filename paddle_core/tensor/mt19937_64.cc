#include "paddle_core/tensor/mt19937_64.h"

#include <algorithm>
#include <istream>
#include <ostream>

// Note [The engine]: Paddle's CPU streams are std::mt19937_64 draws, and libstdc++ makes
// them one at a time: its state update (the twist) runs serially and branches on each
// word's low bit, which random bits mispredict half the time: about 3.4 ns a draw on the
// Xeon of stop 62, most of rand's cost. This engine is the same algorithm (the MT19937-64
// parameters, libstdc++'s seeding, text form and draw order; the C++ tests compare all four
// with std::mt19937_64) written so the compiler vectorizes it: the twist is branch-free,
// and fill() tempers a run of state words in one loop. This file is built with the kernels'
// flags (x86-64-v3, -O3; paddle_core/CMakeLists.txt): 0.5-0.6 ns a draw.

namespace oar {
namespace {

constexpr size_t kN = MersenneTwister64::kStateSize;
constexpr size_t kM = 156;
constexpr uint64_t kUpper = ~uint64_t{0} << 31;
constexpr uint64_t kLower = ~kUpper;

/// One word of the twist: far ^ (y >> 1) ^ (y odd ? a : 0), y = lo's upper 33 bits and hi's
/// lower 31.
inline uint64_t mix(uint64_t lo, uint64_t hi, uint64_t far) {
  const uint64_t y = (lo & kUpper) | (hi & kLower);
  return far ^ (y >> 1) ^ ((uint64_t{0} - (y & 1)) & 0xb5026f5aa96619e9ull);
}

}  // namespace

void MersenneTwister64::seed(uint64_t s) {
  state_[0] = s;
  for (size_t i = 1; i < kN; ++i) {
    const uint64_t prev = state_[i - 1];
    state_[i] = 6364136223846793005ull * (prev ^ (prev >> 62)) + i;
  }
  pos_ = kN;
}

void MersenneTwister64::seed(std::seed_seq& seq) {
  uint32_t words[2 * kN];
  seq.generate(words, words + 2 * kN);
  bool zero = true;
  for (size_t i = 0; i < kN; ++i) {
    state_[i] = uint64_t{words[2 * i]} | (uint64_t{words[2 * i + 1]} << 32);
    // All-zero state bits (word 0's low 31 do not count) would stay zero forever.
    zero = zero && (i == 0 ? (state_[0] & kUpper) == 0 : state_[i] == 0);
  }
  if (zero) state_[0] = uint64_t{1} << 63;
  pos_ = kN;
}

void MersenneTwister64::twist() {
  // Word k reads words k + 1 and k + m before they change (the first loop) or long after
  // (the second), so each loop vectorizes as written.
  for (size_t k = 0; k < kN - kM; ++k) state_[k] = mix(state_[k], state_[k + 1], state_[k + kM]);
  for (size_t k = kN - kM; k < kN - 1; ++k) state_[k] = mix(state_[k], state_[k + 1], state_[k + kM - kN]);
  state_[kN - 1] = mix(state_[kN - 1], state_[0], state_[kM - 1]);
  pos_ = 0;
}

void MersenneTwister64::fill(uint64_t* out, int64_t n) {
  while (n > 0) {
    if (pos_ >= kN) twist();
    const size_t k = std::min(kN - pos_, static_cast<size_t>(n));
    const uint64_t* s = state_ + pos_;
    for (size_t i = 0; i < k; ++i) out[i] = temper(s[i]);
    out += k;
    n -= static_cast<int64_t>(k);
    pos_ += k;
  }
}

void MersenneTwister64::discard(uint64_t n) {
  while (n > 0) {
    if (pos_ >= kN) twist();
    const uint64_t k = std::min<uint64_t>(kN - pos_, n);
    pos_ += k;
    n -= k;
  }
}

bool operator==(const MersenneTwister64& a, const MersenneTwister64& b) {
  return a.pos_ == b.pos_ && std::equal(a.state_, a.state_ + kN, b.state_);
}

std::ostream& operator<<(std::ostream& os, const MersenneTwister64& e) {
  const auto flags = os.flags();
  const auto fill = os.fill();
  os.flags(std::ios_base::dec | std::ios_base::fixed | std::ios_base::left);
  os.fill(' ');
  for (size_t i = 0; i < kN; ++i) os << e.state_[i] << ' ';
  os << e.pos_;
  os.flags(flags);
  os.fill(fill);
  return os;
}

std::istream& operator>>(std::istream& is, MersenneTwister64& e) {
  const auto flags = is.flags();
  is.flags(std::ios_base::dec | std::ios_base::skipws);
  MersenneTwister64 read;
  for (size_t i = 0; i < kN; ++i) is >> read.state_[i];
  is >> read.pos_;
  if (!is.fail() && read.pos_ > kN) is.setstate(std::ios_base::failbit);
  if (!is.fail()) e = read;
  is.flags(flags);
  return is;
}

}  // namespace oar
