// ProcessGroup: the one interface every communication backend implements (Gloo on CPU,
// xccl over the plugin ABI's collectives; NCCL will be one more subclass of xccl's shape). Reshard, the
// DataParallel reducer and the Python API call only this. See Note [Communication] in
// docs/notes/distributed.md.
//
// Ranks in arguments are ranks *within the group* (0..size-1); ranks() maps them to
// global ranks. Every collective is issued in the same order on every member. Each call
// returns a Task: done already when sync_op is true, otherwise running on the group's
// worker thread. A failed or timed-out op fails its task with an error naming the op, the
// group and the ranks that never reached it (Note [Dead peers]).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::dist {

class Store;

enum class ReduceOp : int { kSum = 0, kMax = 1, kMin = 2, kProd = 3, kAvg = 4 };
const char* reduce_op_name(ReduceOp op);

/// The outcome of one call. Completed tasks keep their error; wait() rethrows it.
class Task {
 public:
  explicit Task(std::string op) : op_(std::move(op)) {}
  bool is_completed() const;
  /// Blocks until the op finished (rethrowing its error), or throws a Timeout error naming
  /// the op after `timeout` (<= 0: wait as long as the op's own timeout allows).
  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  const std::string& op() const { return op_; }

  /// Called once by the backend when the op ends (error null on success).
  void finish(std::exception_ptr error);

 private:
  std::string op_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

struct GroupInfo {
  int rank = 0;            // this process's rank in the group
  std::vector<int> ranks;  // global rank of each group rank
  std::string name;        // "default" or "group_<id>": prefixes the group's store keys
  std::chrono::milliseconds timeout{std::chrono::seconds(1800)};
  bool debug_check = false;  // compare shapes/dtypes across ranks before each collective
  Place place;               // a device backend's device (the CPU for gloo)
};

/// A backend subclass connects its transport in its constructor (after the base's checked
/// rendezvous), implements run(), and calls shutdown() first in its destructor (the worker
/// thread calls run(), which must not outlive the subclass).
class ProcessGroup {
 public:
  ProcessGroup(GroupInfo info, std::shared_ptr<Store> store);
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return info_.rank; }
  int size() const { return static_cast<int>(info_.ranks.size()); }
  const std::vector<int>& ranks() const { return info_.ranks; }
  const std::string& name() const { return info_.name; }
  std::chrono::milliseconds timeout() const { return info_.timeout; }
  virtual const char* backend() const = 0;

  /// In place: every rank ends with the reduction of all ranks' `t`.
  std::shared_ptr<Task> all_reduce(DenseTensor t, ReduceOp op, bool sync_op = true);
  /// `out` holds size() copies of `in`'s shape, rank r's data at [r].
  std::shared_ptr<Task> all_gather(DenseTensor out, DenseTensor in, bool sync_op = true);
  /// `in` holds size() chunks shaped like `out`; rank r receives the reduction of chunk r.
  std::shared_ptr<Task> reduce_scatter(DenseTensor out, DenseTensor in, ReduceOp op, bool sync_op = true);
  std::shared_ptr<Task> broadcast(DenseTensor t, int root, bool sync_op = true);
  /// In place on `root`; other ranks' `t` is left as it was.
  std::shared_ptr<Task> reduce(DenseTensor t, int root, ReduceOp op, bool sync_op = true);
  /// `in` (read on root only) holds size() chunks shaped like `out`.
  std::shared_ptr<Task> scatter(DenseTensor out, DenseTensor in, int root, bool sync_op = true);
  /// `in` and `out` hold size() equal chunks; chunk r of `in` goes to rank r.
  std::shared_ptr<Task> alltoall(DenseTensor out, DenseTensor in, bool sync_op = true);
  std::shared_ptr<Task> send(DenseTensor t, int dst, bool sync_op = true);
  std::shared_ptr<Task> recv(DenseTensor t, int src, bool sync_op = true);
  std::shared_ptr<Task> barrier();

  /// Waits for queued async ops and stops the worker; later calls fail.
  void shutdown();

 protected:
  /// What a backend runs for one op (one op at a time: on the worker thread, or on the
  /// caller's thread for a sync op with nothing queued before it).
  struct Op {
    std::string kind;                  // "all_reduce", ...
    std::vector<DenseTensor> tensors;  // [out, in] or [t]
    ReduceOp reduce = ReduceOp::kSum;
    int peer = -1;     // root, dst or src (group rank)
    uint64_t seq = 0;  // per-group count of ops issued
    void* stream = nullptr;  // a device backend's stream for the op (set by prepare)
    std::chrono::steady_clock::time_point started{};  // when it began to run (errors say how long)
  };
  /// Runs `op`, or starts it and returns the rest (a point-to-point op's wait for its peer),
  /// which the group runs on its completion thread while the worker goes on.
  using Deferred = std::function<void()>;
  virtual Deferred run(const Op& op) = 0;
  /// Runs on the caller's thread when an op is issued, before it is queued: a device
  /// backend records the caller's current stream in op.stream, so the op is ordered after
  /// the kernels the caller queued.
  virtual void prepare(Op& op) { (void)op; }
  /// Rejects a tensor this backend cannot reach, naming the op and the argument (the
  /// default: CPU tensors only).
  virtual void check_place(const char* op, const char* arg, const DenseTensor& t) const;

  const GroupInfo& info() const { return info_; }
  const std::shared_ptr<Store>& store() const { return store_; }

 private:
  std::shared_ptr<Task> submit(Op op, bool sync_op);
  void check_tensor(const char* op, const char* arg, const DenseTensor& t) const;
  void check_across_ranks(const Op& op);
  std::string diagnose(const Op& op, const std::string& cause);
  void worker_loop();
  void execute(Op& op, const std::shared_ptr<Task>& task);
  struct Lane;
  void completion_loop(Lane* lane);
  /// Runs fn; turns a failure into the error the task reports (Note [Dead peers]).
  std::exception_ptr guarded(const Op& op, const std::function<void()>& fn);
  /// Records in the store an op that has run for over a second (Note [Dead peers]).
  void watchdog_tick();

  GroupInfo info_;
  std::shared_ptr<Store> store_;
  uint64_t seq_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Op, std::shared_ptr<Task>>> queue_;
  bool stopping_ = false;
  bool busy_ = false;   // an op is running (on the worker, or inline on a caller's thread)
  std::string broken_;  // the first communication failure: the group is unusable after it
  uint64_t running_seq_ = 0, reported_seq_ = 0;
  std::chrono::steady_clock::time_point running_since_;
  std::thread worker_;
  struct Completion {
    Op op;
    Deferred rest;
    std::shared_ptr<Task> task;
  };
  // One completion lane (a FIFO and its thread, started on first use) per direction and
  // peer. Messages between two ranks in one direction complete in the order they were
  // posted, so a FIFO per pair only ever waits on what must come first anyway. A shared FIFO
  // made a task wait for unrelated transfers: a send's wait (until its receiver posts)
  // held back a recv the rank was waiting on while the receiver waited on that rank
  // (an interleaved pipeline deadlocked), and a recv from one peer held back a recv from
  // another whose sender depends on this rank (three ranks). Note [Completion lanes].
  struct Lane {
    std::deque<Completion> queue;
    std::condition_variable cv;
    std::thread thread;
  };
  std::map<std::pair<bool, int>, std::unique_ptr<Lane>> lanes_;  // (is send, peer or -1) -> lane
  bool worker_done_ = false;
  std::condition_variable watchdog_cv_;
  std::thread watchdog_;
};

/// A backend's constructor: connects the group's members through the store.
using ProcessGroupFactory = std::function<std::shared_ptr<ProcessGroup>(GroupInfo info, std::shared_ptr<Store> store,
                                                                        const std::string& hostname)>;
/// Registers a backend ("gloo", "xccl", "nccl") under a name; backends call it at init.
void register_backend(const std::string& name, ProcessGroupFactory factory);
/// Creates a group on a registered backend; throws naming the backend if there is none.
std::shared_ptr<ProcessGroup> create_process_group(const std::string& backend, GroupInfo info,
                                                   std::shared_ptr<Store> store, const std::string& hostname);

}  // namespace oar::dist
