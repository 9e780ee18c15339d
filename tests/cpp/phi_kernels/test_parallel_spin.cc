// The pool's adaptive spin (SpinPolicy, Note [Thread pool] "The spin adapts"), fed made-up
// region outcomes: no clock, no threads, so every step is deterministic.
#include <gtest/gtest.h>

#include <cstdint>

#include "phi_kernels/cpu/parallel_spin.h"

namespace oar::phi::parallel_detail {
namespace {

using P = SpinPolicy;
const RegionOutcome kPaid{1, 40000, 2000};     // the worker ran a chunk, the caller waited 2 us
const RegionOutcome kMissed{0, 80000, 0};      // the caller ran both chunks
const RegionOutcome kLate{1, 40000, 3000000};  // the worker was preempted inside its chunk

TEST(SpinPolicy, JudgesOutcomes) {
  EXPECT_EQ(P::judge(kPaid), P::Verdict::kPaid);
  EXPECT_EQ(P::judge(kMissed), P::Verdict::kMissed);
  EXPECT_EQ(P::judge(kLate), P::Verdict::kLate);
  // the boundary: waiting as long as it worked is still paid, one ns more is late
  EXPECT_EQ(P::judge({1, 5000, 5000}), P::Verdict::kPaid);
  EXPECT_EQ(P::judge({1, 5000, 5001}), P::Verdict::kLate);
  // a worker that took every chunk while the caller waited: as slow as one thread
  EXPECT_EQ(P::judge({2, 0, 70000}), P::Verdict::kLate);
  EXPECT_EQ(P::judge({0, 0, 0}), P::Verdict::kMissed);
}

TEST(SpinPolicy, StartsAtTheFloorWithTheFullSafety) {
  P p;
  EXPECT_FALSE(p.fixed());
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
  EXPECT_EQ(p.safety(), P::kFullSafety);
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
}

TEST(SpinPolicy, SafetyFollowsTheSpin) {
  P p;
  for (int i = 0; i < P::kGrowAfter; ++i) p.record(kPaid);
  EXPECT_EQ(p.spin_ns(), 2 * P::kMinNs);
  EXPECT_EQ(p.safety(), P::kFullSafety / 2);
  for (int i = 0; i < P::kGrowAfter; ++i) p.record(kPaid);
  EXPECT_EQ(p.safety(), P::kFullSafety / 4);
}

TEST(SpinPolicy, ALateRegionDropsToTheFloorAndHolds) {
  P p;
  for (int i = 0; i < 3 * P::kGrowAfter; ++i) p.record(kPaid);
  ASSERT_GT(p.spin_ns(), P::kMinNs);
  EXPECT_TRUE(p.record(kLate));
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
  EXPECT_EQ(p.safety(), P::kFullSafety);
  // held: kHoldAfterLate regions (paid or missed) pass before paid ones count again
  for (int i = 0; i < P::kHoldAfterLate; ++i) EXPECT_FALSE(p.record(i % 2 ? kPaid : kMissed));
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
  for (int i = 0; i < P::kGrowAfter - 1; ++i) EXPECT_FALSE(p.record(kPaid));
  EXPECT_TRUE(p.record(kPaid));
  EXPECT_EQ(p.spin_ns(), 2 * P::kMinNs);
  // a late region during the hold restarts it
  EXPECT_TRUE(p.record(kLate));
  for (int i = 0; i < P::kHoldAfterLate / 2; ++i) p.record(kPaid);
  EXPECT_FALSE(p.record(kLate));  // already at the floor: nothing changes, the hold restarts
  for (int i = 0; i < P::kHoldAfterLate; ++i) p.record(kPaid);
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
  EXPECT_EQ(p.count(P::Verdict::kLate), 3);
}

TEST(SpinPolicy, StreamsWakeExceptDuringTheHold) {
  P p;
  EXPECT_TRUE(p.streams());
  p.record(kLate);
  EXPECT_FALSE(p.streams());
  // regions run alone count towards the hold as offered ones do
  for (int i = 0; i < P::kHoldAfterLate - 1; ++i) {
    if (i % 3) {
      p.alone();
    } else {
      p.record(kPaid);
    }
    EXPECT_FALSE(p.streams()) << i;
  }
  p.alone();
  EXPECT_TRUE(p.streams());
  p.alone();  // past the hold: nothing changes
  EXPECT_TRUE(p.streams());
  EXPECT_EQ(p.spin_ns(), P::kMinNs);
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
    EXPECT_EQ(p.count(P::Verdict::kPaid) + p.count(P::Verdict::kMissed) + p.count(P::Verdict::kLate), 100);
  }
}

}  // namespace
}  // namespace oar::phi::parallel_detail
