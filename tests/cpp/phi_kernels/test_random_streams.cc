// The float uniform and gaussian kernels draw in blocks (Note [Batched draws],
// phi_kernels/cpu/random_kernels.cc) and must give, bit for bit, what the standard library's
// distributions give one draw at a time from the same std::mt19937_64: Paddle's CPU streams.
// Sizes around the block (1024 draws, 1024 normal pairs), odd sizes that drop a pair's last
// value, several seeds and parameters; an op given a seed draws from a fresh engine of it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "oar_generated/ops_api.h"

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

}  // namespace
}  // namespace oar
