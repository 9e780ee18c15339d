// MersenneTwister64 must be std::mt19937_64 in every observable way (Note [The engine],
// paddle_core/tensor/mt19937_64.cc): seeding by integer and by seed_seq, draws one at a time
// and in blocks of every size across the twist, discard, the text form read and written both
// ways, and a std:: distribution drawing from it.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <vector>

#include "paddle_core/tensor/mt19937_64.h"

namespace oar {
namespace {

std::string text(const MersenneTwister64& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::string text(const std::mt19937_64& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

TEST(MersenneTwister64, SeedsAsTheStandardEngine) {
  EXPECT_EQ(text(MersenneTwister64()), text(std::mt19937_64()));
  for (uint64_t s : {uint64_t{0}, uint64_t{1}, uint64_t{42}, uint64_t{5489}, ~uint64_t{0}, uint64_t{1} << 63}) {
    EXPECT_EQ(text(MersenneTwister64(s)), text(std::mt19937_64(s))) << "seed " << s;
    std::seed_seq a{s}, b{s};
    EXPECT_EQ(text(MersenneTwister64(a)), text(std::mt19937_64(b))) << "seed_seq{" << s << "}";
  }
  std::seed_seq a{3u, 1u, 4u, 1u, 5u}, b{3u, 1u, 4u, 1u, 5u};
  EXPECT_EQ(text(MersenneTwister64(a)), text(std::mt19937_64(b)));
}

TEST(MersenneTwister64, DrawsAsTheStandardEngineOneAtATimeAndInBlocks) {
  // Block sizes that start and end at every kind of place relative to the 312-word twist.
  const std::vector<int64_t> blocks = {1, 0, 2, 311, 312, 313, 5, 624, 1000, 3, 2049, 7};
  for (uint64_t s : {uint64_t{7}, uint64_t{123456789}}) {
    std::mt19937_64 want(s);
    MersenneTwister64 got(s);
    for (int round = 0; round < 3; ++round) {
      for (int64_t n : blocks) {
        std::vector<uint64_t> block(static_cast<size_t>(n) + 1, 0xdeadbeef);
        got.fill(block.data(), n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(block[i], want()) << "seed " << s << " block " << n << " at " << i;
        EXPECT_EQ(block[n], 0xdeadbeef) << "fill wrote past its end";
        for (int i = 0; i < 3; ++i) ASSERT_EQ(got(), want());
      }
    }
    EXPECT_EQ(text(got), text(want));
  }
}

TEST(MersenneTwister64, DiscardsAsTheStandardEngine) {
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{311}, uint64_t{312}, uint64_t{313}, uint64_t{10000}}) {
    std::mt19937_64 want(99);
    MersenneTwister64 got(99);
    want.discard(n);
    got.discard(n);
    EXPECT_EQ(got(), want()) << "discard " << n;
    EXPECT_EQ(text(got), text(want));
  }
}

TEST(MersenneTwister64, TextFormIsTheStandardEnginesBothWays) {
  std::mt19937_64 std_engine(2024);
  MersenneTwister64 engine(2024);
  for (int i = 0; i < 500; ++i) std_engine(), engine();
  ASSERT_EQ(text(engine), text(std_engine));

  // The standard engine's state read into this one, and this one's into the standard one:
  // both continue the same stream.
  MersenneTwister64 from_std;
  std::istringstream(text(std_engine)) >> from_std;
  std::mt19937_64 from_oar;
  std::istringstream(text(engine)) >> from_oar;
  EXPECT_TRUE(from_std == engine);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t want = std_engine();
    ASSERT_EQ(from_std(), want);
    ASSERT_EQ(from_oar(), want);
  }
  EXPECT_FALSE(from_std == engine);
}

TEST(MersenneTwister64, RejectsTextThatIsNotAState) {
  const std::string good = text(MersenneTwister64(5));
  const std::string cut = good.substr(0, good.size() / 2);
  const std::string past = good.substr(0, good.rfind(' ')) + " 313";
  for (const std::string& bad : {std::string(), std::string("not a state"), cut, past}) {
    MersenneTwister64 e(8);
    const std::string before = text(e);
    std::istringstream is(bad);
    is >> e;
    EXPECT_TRUE(is.fail()) << bad.substr(0, 40);
    EXPECT_EQ(text(e), before) << "a failed read changed the engine";
  }
  MersenneTwister64 e;
  std::istringstream is(good.substr(0, good.rfind(' ')) + " 312");
  is >> e;
  EXPECT_FALSE(is.fail()) << "position 312 (a twist due) is a state";
}

TEST(MersenneTwister64, StandardDistributionsDrawTheSameValues) {
  std::mt19937_64 want_engine(31337);
  MersenneTwister64 engine(31337);
  std::uniform_int_distribution<int64_t> ints(-5, 1000000);
  // One normal distribution each: a distribution keeps the second value of its last pair.
  std::normal_distribution<double> normals(1.0, 2.0), want_normals(1.0, 2.0);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_EQ(ints(engine), ints(want_engine));
    ASSERT_EQ(normals(engine), want_normals(want_engine));
  }
  std::vector<int> a(100), b(100);
  for (int i = 0; i < 100; ++i) a[i] = b[i] = i;
  std::shuffle(a.begin(), a.end(), engine);
  std::shuffle(b.begin(), b.end(), want_engine);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace oar
