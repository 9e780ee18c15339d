// The float uniform and gaussian kernels draw in blocks (Note [Batched draws],
// phi_kernels/cpu/random_kernels.cc) and must give, bit for bit, what the standard library's
// distributions give one draw at a time from the same std::mt19937_64: Paddle's CPU streams.
// Sizes around the block (1024 draws, 1024 normal pairs), odd sizes that drop a pair's last
// value, several seeds and parameters; an op given a seed draws from a fresh engine of it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "oar_generated/ops_api.h"
#include "paddle_core/tensor/generator.h"

namespace oar {
namespace {

const std::vector<int64_t> kSizes = {0, 1, 2, 3, 7, 1023, 1024, 1025, 2047, 2048, 2049, 5000};

std::vector<float> floats(const Tensor& t) {
  DenseTensor c = contiguous(t.dense());
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << " at " << i << ": " << got[i] << " against " << want[i];
  }
}

TEST(RandomStreams, UniformFloatIsTheStandardDistribution) {
  for (int64_t seed : {1, 42, 987654321}) {
    for (auto [lo, hi] : std::vector<std::pair<float, float>>{{0.0f, 1.0f}, {-3.0f, 2.5f}, {1e-3f, 7.0f}}) {
      for (int64_t n : kSizes) {
        std::mt19937_64 engine(static_cast<uint64_t>(seed));
        std::uniform_real_distribution<float> dist(lo, hi);
        std::vector<float> want(static_cast<size_t>(n));
        for (float& v : want) v = dist(engine);
        const Tensor got = ops::uniform({n}, DataType::FLOAT32, lo, hi, seed);
        expect_same_bits(floats(got), want, "uniform seed " + std::to_string(seed) + " n " + std::to_string(n));
      }
    }
  }
}

TEST(RandomStreams, GaussianFloatIsTheStandardDistribution) {
  for (int64_t seed : {1, 42, 987654321}) {
    for (auto [mean, stddev] : std::vector<std::pair<float, float>>{{0.0f, 1.0f}, {0.5f, 2.0f}, {-1.0f, 0.02f}}) {
      for (int64_t n : kSizes) {
        std::mt19937_64 engine(static_cast<uint64_t>(seed));
        std::normal_distribution<float> dist(mean, stddev);
        std::vector<float> want(static_cast<size_t>(n));
        for (float& v : want) v = dist(engine);
        const Tensor got = ops::gaussian({n}, mean, stddev, seed, DataType::FLOAT32);
        expect_same_bits(floats(got), want, "gaussian seed " + std::to_string(seed) + " n " + std::to_string(n));
      }
    }
  }
}

/// The state word the Mersenne Twister tempers into `want` (the tempering's inverse).
uint64_t untemper(uint64_t y) {
  y ^= y >> 43;
  y ^= (y << 37) & 0xfff7eee000000000ull;
  uint64_t z = y;
  for (int i = 0; i < 4; ++i) z = y ^ ((z << 17) & 0x71d67fffeda60000ull);
  y = z;
  for (int i = 0; i < 3; ++i) z = y ^ ((z >> 29) & 0x5555555555555555ull);
  return z;
}

/// Draws whose conversion to float is hard: around 2^24, 2^53 (where the AVX2 conversion
/// shifts) and 2^64 (clamped below 1), exact ties and near-ties at float's rounding bit with
/// the tie broken only by bits the shift folds into its sticky bit, the top bit set or not.
std::vector<uint64_t> edge_draws() {
  std::vector<uint64_t> v = {0,
                             1,
                             2,
                             (1ull << 24) - 1,
                             1ull << 24,
                             (1ull << 24) + 1,
                             (1ull << 53) - 1,
                             1ull << 53,
                             (1ull << 53) + 1,
                             1ull << 63,
                             (1ull << 63) + 1,
                             ~0ull,
                             ~0ull - (1ull << 39),
                             ~0ull << 40,
                             ~0ull << 41};
  for (int shift : {29, 30, 38, 39, 40}) {  // (2^24 + odd) << shift: a tie at float's rounding bit
    for (uint64_t mant : {(1ull << 24) + 1, (1ull << 24) + 3, (1ull << 25) - 1}) {
      const uint64_t tie = mant << shift;
      if (tie >> shift != mant) continue;
      for (uint64_t low : {0ull, 1ull, 1ull << 10, 1ull << 11, (1ull << 11) - 1}) v.push_back(tie + low);
      v.push_back(tie - 1);
    }
  }
  std::mt19937_64 bits(7);
  while (v.size() < 2 * 312) v.push_back(bits() >> (bits() % 64));  // every magnitude
  return v;
}

TEST(RandomStreams, EdgeDrawsConvertAsTheStandardDistributions) {
  // The global generator, set to a state whose next 624 draws are edge_draws(): uniform and
  // gaussian draw from it exactly as the std:: distributions do from the same state.
  const std::vector<uint64_t> draws = edge_draws();
  std::ostringstream state;
  for (size_t i = 0; i < 312; ++i) state << untemper(draws[i]) << ' ';
  state << 0;
  std::mt19937_64 check;
  std::istringstream(state.str()) >> check;
  for (size_t i = 0; i < 312; ++i) ASSERT_EQ(check(), draws[i]) << "untemper at " << i;

  Generator& gen = default_generator();
  const GeneratorState saved = gen.get_state();
  for (int64_t n : {int64_t{312}, int64_t{301}}) {
    gen.set_state({1, state.str()});
    std::mt19937_64 engine;
    std::istringstream(state.str()) >> engine;
    std::uniform_real_distribution<float> uniform(-2.0f, 3.0f);
    std::vector<float> want(static_cast<size_t>(n));
    for (float& v : want) v = uniform(engine);
    expect_same_bits(floats(ops::uniform({n}, DataType::FLOAT32, -2.0f, 3.0f, 0)), want, "uniform of edge draws");

    gen.set_state({1, state.str()});
    std::istringstream(state.str()) >> engine;
    std::normal_distribution<float> normal(0.5f, 2.0f);
    want.assign(static_cast<size_t>(n / 3), 0.0f);  // the pairs the 312 draws give, and fewer
    for (float& v : want) v = normal(engine);
    expect_same_bits(floats(ops::gaussian({n / 3}, 0.5f, 2.0f, 0, DataType::FLOAT32)), want, "gaussian of edge draws");
  }
  gen.set_state(saved);
}

}  // namespace
}  // namespace oar
