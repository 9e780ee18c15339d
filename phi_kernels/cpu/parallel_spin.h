// The pool's adaptive spin and wake grain (Note [Thread pool], "The spin adapts"): how long a
// worker stays awake after a region, and how many futex calls the wake grain's safety term
// counts, follow what the regions offered to a worker earned. Pure logic (no clock, no
// threads) so that tests can feed it outcomes; parallel_pool.cc owns one under its lock.
#pragma once

#include <algorithm>
#include <cstdint>

namespace oar::phi::parallel_detail {

/// What one region that was offered to the workers earned, measured by its caller.
/// worker_chunks: chunks a worker ran; work_ns: the caller's time running its own chunks;
/// wait_ns: its time waiting afterwards for the chunks a worker had started.
struct RegionOutcome {
  int64_t worker_chunks = 0;
  int64_t work_ns = 0;
  int64_t wait_ns = 0;
};

class SpinPolicy {
 public:
  /// The default policy: the spin moves between kMinNs and kMaxNs. A fixed policy
  /// (OAR_PARALLEL_SPIN_US set) keeps `fixed_ns` and the full safety term.
  static constexpr int64_t kMinNs = 50000, kMaxNs = 400000;
  /// Paid regions in a row before the spin doubles (missed ones in a row before it halves);
  /// regions (offered or run alone) after a late one during which it does not grow again
  /// and streams do not wake the workers.
  static constexpr int kGrowAfter = 4, kHoldAfterLate = 64;
  /// The wake grain's safety term (futex calls a region must outlast): the full one at the
  /// floor of the spin, down to kMinSafety at its ceiling.
  static constexpr int64_t kFullSafety = 20, kMinSafety = 4;

  SpinPolicy() = default;
  explicit SpinPolicy(int64_t fixed_ns) : spin_ns_(fixed_ns), min_ns_(fixed_ns), max_ns_(fixed_ns), fixed_(true) {}

  enum class Verdict { kPaid, kMissed, kLate };
  /// Late: the caller waited longer for a worker's chunk than it worked itself, so the
  /// region took longer than one thread alone would have (a preempted worker: a busy
  /// machine). Missed: the worker took nothing (it arrived after the caller claimed every
  /// chunk). Paid: the worker ran chunks and finished in time.
  static Verdict judge(const RegionOutcome& o) {
    if (o.wait_ns > o.work_ns) return Verdict::kLate;
    return o.worker_chunks > 0 ? Verdict::kPaid : Verdict::kMissed;
  }

  /// Records one offered region; returns true when spin_ns() or safety() changed. A late
  /// region drops the spin to its floor and holds it there for kHoldAfterLate regions;
  /// kGrowAfter paid ones in a row double it (up to kMaxNs), kGrowAfter missed ones in a
  /// row halve it (a worker that is awake but takes nothing is not running: a busy
  /// machine).
  bool record(const RegionOutcome& o) {
    if (fixed_) {
      ++counts_[static_cast<int>(judge(o))];
      return false;
    }
    const int64_t before = spin_ns_;
    const Verdict v = judge(o);
    ++counts_[static_cast<int>(v)];
    switch (v) {
      case Verdict::kLate:
        spin_ns_ = min_ns_;
        paid_ = missed_ = 0;
        hold_ = kHoldAfterLate;
        break;
      case Verdict::kPaid:
        missed_ = 0;
        if (hold_ > 0) {
          alone();
        } else if (++paid_ >= kGrowAfter) {
          spin_ns_ = std::min(spin_ns_ * 2, max_ns_);
          paid_ = 0;
        }
        break;
      case Verdict::kMissed:
        paid_ = 0;
        alone();
        if (++missed_ >= kGrowAfter) {
          spin_ns_ = std::max(spin_ns_ / 2, min_ns_);
          missed_ = 0;
        }
        break;
    }
    return spin_ns_ != before;
  }

  /// A region the caller ran alone (the workers asleep, the region under the wake grain):
  /// it counts towards the hold after a late region.
  void alone() {
    if (hold_ > 0) --hold_;
  }
  /// Whether a stream of small regions may wake the sleeping workers (Note [Thread pool],
  /// "Streams"): not while held after a late region.
  bool streams() const { return hold_ == 0; }

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
  /// Regions recorded so far, by verdict (kPaid, kMissed, kLate).
  int64_t count(Verdict v) const { return counts_[static_cast<int>(v)]; }

 private:
  int64_t spin_ns_ = kMinNs, min_ns_ = kMinNs, max_ns_ = kMaxNs;
  int paid_ = 0, missed_ = 0, hold_ = 0;
  bool fixed_ = false;
  int64_t counts_[3] = {};
};

}  // namespace oar::phi::parallel_detail
