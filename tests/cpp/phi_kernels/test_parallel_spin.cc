// The pool's adaptive spin (SpinPolicy, Note [Thread pool] "The spin adapts"), fed made-up
// region outcomes: no clock, no threads, so every step is deterministic.
#include <gtest/gtest.h>

#include <cstdint>

#include "phi_kernels/cpu/parallel_spin.h"

namespace oar::phi::parallel_detail {
namespace {

using P = SpinPolicy;
// {worker chunks, caller chunks, caller's work, caller's wait}
const RegionOutcome kPaid{1, 1, 40000, 2000};     // the worker ran a chunk, the caller waited 2 us
const RegionOutcome kMissed{0, 2, 80000, 0};      // the caller ran both chunks
const RegionOutcome kLate{1, 1, 40000, 3000000};  // the worker was preempted inside its chunk

TEST(SpinPolicy, JudgesOutcomes) {
  EXPECT_EQ(P::judge(kPaid), P::Verdict::kPaid);
  EXPECT_EQ(P::judge(kMissed), P::Verdict::kMissed);
  EXPECT_EQ(P::judge(kLate), P::Verdict::kLate);
  // the boundaries: waiting as long as it worked is still paid, one ns more did not pay,
  // and more than the slack over its work is late
  EXPECT_EQ(P::judge({1, 1, 5000, 5000}), P::Verdict::kPaid);
  EXPECT_EQ(P::judge({1, 1, 5000, 5001}), P::Verdict::kMissed);
  EXPECT_EQ(P::judge({1, 1, 5000, 5000 + P::kLateSlackNs}), P::Verdict::kMissed);
  EXPECT_EQ(P::judge({1, 1, 5000, 5001 + P::kLateSlackNs}), P::Verdict::kLate);
  // a worker that took every chunk while the caller waited: no faster than one thread
  EXPECT_EQ(P::judge({2, 0, 0, 30000}), P::Verdict::kMissed);
  EXPECT_EQ(P::judge({2, 0, 0, 70000}), P::Verdict::kLate);
  EXPECT_EQ(P::judge({0, 0, 0, 0}), P::Verdict::kMissed);
}

TEST(SpinPolicy, GainIsTheWorkersChunksAtTheCallersRateLessTheWait) {
  EXPECT_EQ(P::gain(kPaid), 38000);
  EXPECT_EQ(P::gain(kMissed), 0);
  EXPECT_EQ(P::gain(kLate), 40000 - 3000000);
  EXPECT_EQ(P::gain({3, 1, 10000, 5000}), 25000);  // 4 chunks: the worker ran 3
  EXPECT_EQ(P::gain({1, 3, 30000, 0}), 10000);
  EXPECT_EQ(P::gain({2, 0, 0, 70000}), 0);  // no rate to judge by
}

TEST(SpinPolicy, StartsAtTheFloorWithTheFullSafety) {
  P p;
  EXPECT_FALSE(p.fixed());
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
  EXPECT_EQ(p.safety(), P::kFullSafety);
  EXPECT_TRUE(p.streams());
  EXPECT_EQ(p.balance_ns(), 0);
}

TEST(SpinPolicy, PaidRegionsDoubleTheSpinUpToTheCeiling) {
  P p;
  int64_t expect = P::kMinNs;
  for (int step = 0; step < 6; ++step) {
    for (int i = 0; i < P::kGrowAfter - 1; ++i) {
      EXPECT_FALSE(p.record(kPaid));
      EXPECT_EQ(p.spin_ns(), expect);
    }
    const int64_t next = std::min(expect * 2, P::kMaxNs);
    EXPECT_EQ(p.record(kPaid), next != expect) << step;
    expect = next;
    EXPECT_EQ(p.spin_ns(), expect);
  }
  EXPECT_EQ(p.spin_ns(), P::kMaxNs);
  // the safety term shrinks as the spin grows: 20 x 50/100 = 10, 50/200 -> 5, then the floor 4
  EXPECT_EQ(p.safety(), P::kMinSafety);
  EXPECT_EQ(p.count(P::Verdict::kPaid), 6 * P::kGrowAfter);
  EXPECT_GT(p.balance_ns(), 0);
}

TEST(SpinPolicy, SafetyFollowsTheSpin) {
  P p;
  for (int i = 0; i < P::kGrowAfter; ++i) p.record(kPaid);
  EXPECT_EQ(p.spin_ns(), 2 * P::kMinNs);
  EXPECT_EQ(p.safety(), P::kFullSafety / 2);
  for (int i = 0; i < P::kGrowAfter; ++i) p.record(kPaid);
  EXPECT_EQ(p.safety(), P::kFullSafety / 4);
}

TEST(SpinPolicy, ALossDropsToTheFloorUntilPaidRegionsRepayIt) {
  P p;
  for (int i = 0; i < 3 * P::kGrowAfter; ++i) p.record(kPaid);
  ASSERT_EQ(p.spin_ns(), 8 * P::kMinNs);
  EXPECT_TRUE(p.record(kLate));  // 2.96 ms lost against ~0.4 ms saved so far
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
  EXPECT_EQ(p.safety(), P::kFullSafety);
  EXPECT_FALSE(p.streams());
  EXPECT_LT(p.balance_ns(), 0);
  // paid regions repay the loss (and the balance decays): the spin stays at its floor
  // until the balance is back at 0, then grows again
  int paid = 0;
  while (p.balance_ns() < 0) {
    EXPECT_FALSE(p.record(kPaid));
    EXPECT_EQ(p.spin_ns(), P::kMinNs);
    ASSERT_LT(++paid, 200);
  }
  EXPECT_GT(paid, 10);  // not forgotten at once
  EXPECT_TRUE(p.streams());
  // the region that brought the balance back was the first paid one in a row
  for (int i = 0; i < P::kGrowAfter - 2; ++i) EXPECT_FALSE(p.record(kPaid));
  EXPECT_TRUE(p.record(kPaid));
  EXPECT_EQ(p.spin_ns(), 2 * P::kMinNs);
  EXPECT_EQ(p.count(P::Verdict::kLate), 1);
}

TEST(SpinPolicy, ASmallLossAmongPaidRegionsKeepsTheSpin) {
  // a worker that is now and then 0.1 ms late (an interrupt) among regions that each save
  // 38 us: the balance stays positive and the spin at its ceiling
  P p;
  for (int i = 0; i < 5 * P::kGrowAfter; ++i) p.record(kPaid);
  ASSERT_EQ(p.spin_ns(), P::kMaxNs);
  for (int round = 0; round < 20; ++round) {
    EXPECT_EQ(P::judge({1, 1, 40000, 140000}), P::Verdict::kLate);
    p.record({1, 1, 40000, 140000});
    for (int i = 0; i < 30; ++i) p.record(kPaid);
    EXPECT_EQ(p.spin_ns(), P::kMaxNs) << round;
  }
}

TEST(SpinPolicy, RegionsRunAloneForgetALoss) {
  P p;
  p.record(kLate);
  EXPECT_FALSE(p.streams());
  int alone = 0;
  while (!p.streams()) {
    p.alone();
    ASSERT_LT(++alone, 5000);
  }
  EXPECT_GT(alone, P::kDecay);  // a 2.96 ms loss lasts several hundred regions
  EXPECT_EQ(p.balance_ns(), 0);
  p.alone();
  EXPECT_EQ(p.balance_ns(), 0);
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
}

TEST(SpinPolicy, AHogKeepsTheSpinAtItsFloor) {
  // a worker preempted for a 3 ms slice once in 30 regions, saving 38 us in the rest
  P p;
  int64_t at_floor = 0, total = 0;
  for (int round = 0; round < 50; ++round) {
    p.record(kLate);
    for (int i = 0; i < 29; ++i) {
      p.record(kPaid);
      at_floor += p.spin_ns() == P::kMinNs;
      ++total;
    }
  }
  EXPECT_EQ(at_floor, total);
  EXPECT_FALSE(p.streams());
}

TEST(SpinPolicy, MissedRegionsInARowHalveTheSpin) {
  P p;
  for (int i = 0; i < 3 * P::kGrowAfter; ++i) p.record(kPaid);
  ASSERT_EQ(p.spin_ns(), 8 * P::kMinNs);
  // a paid region between missed ones restarts their count
  for (int i = 0; i < P::kGrowAfter - 1; ++i) p.record(kMissed);
  p.record(kPaid);
  for (int i = 0; i < P::kGrowAfter - 1; ++i) EXPECT_FALSE(p.record(kMissed));
  EXPECT_EQ(p.spin_ns(), 8 * P::kMinNs);
  EXPECT_TRUE(p.record(kMissed));
  EXPECT_EQ(p.spin_ns(), 4 * P::kMinNs);
  for (int i = 0; i < 10 * P::kGrowAfter; ++i) p.record(kMissed);
  EXPECT_EQ(p.spin_ns(), P::kMinNs);  // never under the floor
  EXPECT_EQ(p.safety(), P::kFullSafety);
}

TEST(SpinPolicy, AFixedSpinNeverMoves) {
  for (int64_t fixed : {int64_t{0}, int64_t{50000}, int64_t{300000}}) {
    P p(fixed);
    EXPECT_TRUE(p.fixed());
    for (int i = 0; i < 100; ++i) EXPECT_FALSE(p.record(i % 7 ? kPaid : (i % 2 ? kLate : kMissed)));
    EXPECT_EQ(p.spin_ns(), fixed);
    EXPECT_EQ(p.safety(), P::kFullSafety);
    EXPECT_TRUE(p.streams());
    EXPECT_EQ(p.count(P::Verdict::kPaid) + p.count(P::Verdict::kMissed) + p.count(P::Verdict::kLate), 100);
  }
}

}  // namespace
}  // namespace oar::phi::parallel_detail
