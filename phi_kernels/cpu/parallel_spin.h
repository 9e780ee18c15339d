// The pool's adaptive spin and wake grain (Note [Thread pool], "The spin adapts"): how long a
// worker stays awake after a region, how many futex calls the wake grain's safety term
// counts, and whether a stream of small regions may wake the workers, follow what the
// regions offered to a worker earned. Pure logic (no clock, no threads) so that tests can
// feed it outcomes; parallel_pool.cc owns one under its lock.
#pragma once

#include <algorithm>
#include <cstdint>

namespace oar::phi::parallel_detail {

/// What one region that was offered to the workers earned, measured by its caller.
/// worker_chunks / caller_chunks: the chunks each ran; work_ns: the caller's time running
/// its own chunks; wait_ns: its time waiting afterwards for the chunks a worker had started.
struct RegionOutcome {
  int64_t worker_chunks = 0;
  int64_t caller_chunks = 0;
  int64_t work_ns = 0;
  int64_t wait_ns = 0;
};

class SpinPolicy {
 public:
  /// The default policy: the spin moves between kMinNs and kMaxNs. A fixed policy
  /// (OAR_PARALLEL_SPIN_US set) keeps `fixed_ns` and the full safety term.
  static constexpr int64_t kMinNs = 50000, kMaxNs = 400000;
  /// Paid regions in a row before the spin doubles (missed ones in a row before it halves).
  static constexpr int kGrowAfter = 4;
  /// The balance loses 1/kDecay of itself at every region (offered or run alone).
  static constexpr int64_t kDecay = 64;
  /// The wake grain's safety term (futex calls a region must outlast): the full one at the
  /// floor of the spin, down to kMinSafety at its ceiling.
  static constexpr int64_t kFullSafety = 20, kMinSafety = 4;
  /// How much longer than its own work the caller must wait for a region to be late.
  static constexpr int64_t kLateSlackNs = 50000;

  SpinPolicy() = default;
  explicit SpinPolicy(int64_t fixed_ns) : spin_ns_(fixed_ns), min_ns_(fixed_ns), max_ns_(fixed_ns), fixed_(true) {}

  /// What a region saved the caller against running it alone: the worker's chunks at the
  /// caller's own rate per chunk, less the caller's wait for them. Negative when a worker
  /// held the caller up (preempted inside its chunk); 0 when either side ran nothing.
  static int64_t gain(const RegionOutcome& o) {
    if (o.worker_chunks <= 0 || o.caller_chunks <= 0) return 0;
    return o.worker_chunks * o.work_ns / o.caller_chunks - o.wait_ns;
  }

  enum class Verdict { kPaid, kMissed, kLate };
  /// Late: the caller waited for a worker's chunk longer than it worked itself, by more
  /// than kLateSlackNs (a worker preempted inside its chunk: a hog or a busy machine).
  /// Paid: a worker ran chunks and the caller waited no longer than it worked. Missed:
  /// the rest, regions that did not pay: the worker took nothing (it arrived after the
  /// caller claimed every chunk), or its chunk ended up to kLateSlackNs after the caller's.
  static Verdict judge(const RegionOutcome& o) {
    if (o.wait_ns > o.work_ns + kLateSlackNs) return Verdict::kLate;
    return o.worker_chunks > 0 && o.wait_ns <= o.work_ns ? Verdict::kPaid : Verdict::kMissed;
  }

  /// Records one offered region; returns true when spin_ns() or safety() changed. Its
  /// gain joins the balance (a sum that decays by 1/kDecay per region, so it weighs the
  /// last ~kDecay regions by the time they saved or lost). While the balance is negative
  /// the spin stays at its floor; else kGrowAfter paid regions in a row double it (up to
  /// kMaxNs), and kGrowAfter missed ones in a row halve it (a worker that is awake but
  /// takes nothing is not running: a busy machine).
  bool record(const RegionOutcome& o) {
    const Verdict v = judge(o);
    ++counts_[static_cast<int>(v)];
    if (fixed_) return false;
    const int64_t before = spin_ns_;
    decay();
    balance_ += gain(o);
    if (balance_ < 0) {
      spin_ns_ = min_ns_;
      paid_ = missed_ = 0;
    } else if (v == Verdict::kPaid) {
      missed_ = 0;
      if (++paid_ >= kGrowAfter) {
        spin_ns_ = std::min(spin_ns_ * 2, max_ns_);
        paid_ = 0;
      }
    } else {
      paid_ = 0;
      if (++missed_ >= kGrowAfter) {
        spin_ns_ = std::max(spin_ns_ / 2, min_ns_);
        missed_ = 0;
      }
    }
    return spin_ns_ != before;
  }
  /// A region the caller ran alone (the workers asleep, the region under the wake grain):
  /// the balance decays, so a loss is forgotten after some hundred regions.
  void alone() { decay(); }
  /// Whether a stream of small regions may wake the sleeping workers (Note [Thread pool],
  /// "Streams"): not while offered regions lose more than they save.
  bool streams() const { return balance_ >= 0; }

  /// How long a worker stays awake after a region.
  int64_t spin_ns() const { return spin_ns_; }
  /// Futex calls the wake grain's safety term counts: kFullSafety at the floor of the
  /// spin, scaled down by how far the spin has grown (wakes have been paying), never
  /// under kMinSafety.
  int64_t safety() const {
    if (fixed_ || spin_ns_ <= min_ns_) return kFullSafety;
    return std::max(kMinSafety, kFullSafety * min_ns_ / spin_ns_);
  }
  bool fixed() const { return fixed_; }
  int64_t balance_ns() const { return balance_; }
  /// Regions recorded so far, by verdict (kPaid, kMissed, kLate).
  int64_t count(Verdict v) const { return counts_[static_cast<int>(v)]; }

 private:
  void decay() {
    // towards 0; a remainder under kDecay goes at once (integer division would keep it)
    balance_ = (balance_ > -kDecay && balance_ < kDecay) ? 0 : balance_ - balance_ / kDecay;
  }
  int64_t spin_ns_ = kMinNs, min_ns_ = kMinNs, max_ns_ = kMaxNs;
  int64_t balance_ = 0;
  int paid_ = 0, missed_ = 0;
  bool fixed_ = false;
  int64_t counts_[3] = {};
};

}  // namespace oar::phi::parallel_detail
