#include "distributed/collective/process_group.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "distributed/collective/store.h"

namespace oar::dist {

using Clock = std::chrono::steady_clock;

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "SUM";
    case ReduceOp::kMax:
      return "MAX";
    case ReduceOp::kMin:
      return "MIN";
    case ReduceOp::kProd:
      return "PROD";
    case ReduceOp::kAvg:
      return "AVG";
  }
  return "?";
}

bool Task::is_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Task::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout.count() > 0) {
    if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
      throw CommError(detail::str_cat(op_, ": task.wait timed out after ", timeout.count() / 1000.0,
                                      " s (the op is still running)"),
                      true);
    }
  } else {
    cv_.wait(lock, [&] { return done_; });
  }
  if (error_) std::rethrow_exception(error_);
}

void Task::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

namespace {

std::string shape_str(const DenseTensor& t) {
  std::ostringstream os;
  os << dtype_name(t.dtype()) << "[";
  for (int i = 0; i < t.rank(); ++i) os << (i ? ", " : "") << t.dims()[i];
  os << "]";
  return os.str();
}

void check_contiguous(const char* op, const char* arg, const DenseTensor& t) {
  OAR_ENFORCE(t.initialized(), InvalidArgument, op, ": ", arg, " has no memory");
  // A 0-size tensor has nothing to lay out (DenseTensor::is_contiguous says no for some).
  OAR_ENFORCE(t.numel() == 0 || t.is_contiguous(), InvalidArgument, op, ": ", arg,
              " must be contiguous, got strides of ", shape_str(t));
}

void check_chunks(const char* op, const DenseTensor& whole, const DenseTensor& part, int n, const char* whole_name,
                  const char* part_name) {
  OAR_ENFORCE(whole.dtype() == part.dtype(), InvalidType, op, ": ", whole_name, " and ", part_name,
              " must share a dtype, got ", dtype_name(whole.dtype()), " and ", dtype_name(part.dtype()));
  OAR_ENFORCE(whole.numel() == part.numel() * n, InvalidArgument, op, ": ", whole_name, " ", shape_str(whole),
              " must hold ", n, " chunks shaped like ", part_name, " ", shape_str(part));
}

void check_reduce_op(const char* op, ReduceOp r, const DenseTensor& t) {
  OAR_ENFORCE(r != ReduceOp::kAvg || is_floating(t.dtype()), InvalidArgument, op,
              ": ReduceOp.AVG needs a floating-point tensor, got ", dtype_name(t.dtype()));
  OAR_ENFORCE(static_cast<int>(r) >= 0 && static_cast<int>(r) <= 4, InvalidArgument, op, ": unknown reduce op ",
              static_cast<int>(r));
}

// The debug check's descriptor of one rank's call: op, dtype, shape, root, reduce op.
constexpr int kMaxDescDims = 8;
constexpr int kDescLen = 5 + kMaxDescDims;

}  // namespace

void ProcessGroup::check_place(const char* op, const char* arg, const DenseTensor& t) const {
  OAR_ENFORCE(t.place().is_cpu(), InvalidArgument, op, ": the ", backend(), " backend works on CPU tensors, ", arg,
              " is on ", t.place().str());
}

void ProcessGroup::check_tensor(const char* op, const char* arg, const DenseTensor& t) const {
  check_contiguous(op, arg, t);
  check_place(op, arg, t);
}

ProcessGroup::ProcessGroup(GroupInfo info, std::shared_ptr<Store> store)
    : info_(std::move(info)), store_(std::move(store)) {
  OAR_ENFORCE(info_.rank >= 0 && info_.rank < size(), InvalidArgument, "ProcessGroup '", info_.name, "': rank ",
              info_.rank, " is outside [0, ", size(), ")");
  // A checked rendezvous before any backend connects: every member announces itself
  // with the group it thinks it joins, so a mismatch is an error naming both sides and a
  // missing member is a timeout naming its rank, whatever the backend.
  const std::string prefix = "pg/" + info_.name + "/join/";
  std::ostringstream me;
  me << detail::str_cat(info_.ranks);
  const std::string key = prefix + std::to_string(info_.ranks[info_.rank]);
  OAR_ENFORCE(!store_->check(key), InvalidArgument, "ProcessGroup '", info_.name, "': global rank ",
              info_.ranks[info_.rank], " joined twice (two processes started with the same rank?)");
  store_->set(key, me.str());
  std::vector<std::string> keys;
  for (int r : info_.ranks) keys.push_back(prefix + std::to_string(r));
  auto deadline = Clock::now() + info_.timeout;
  for (int r : info_.ranks) {
    std::string theirs;
    try {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      theirs = store_->get(prefix + std::to_string(r), std::max(left, std::chrono::milliseconds(1)));
    } catch (const CommError& e) {
      if (!e.timed_out()) throw;
      std::vector<int> missing;
      for (int q : info_.ranks) {
        if (!store_->check(prefix + std::to_string(q))) missing.push_back(q);
      }
      throw CommError(
          detail::str_cat("init of process group '", info_.name, "' (ranks ", info_.ranks, ") timed out after ",
                          info_.timeout.count() / 1000.0, " s: ranks that never arrived: ", missing,
                          " (did they start? is the world size the same on every rank?)"),
          true);
    }
    OAR_ENFORCE(theirs == me.str(), InvalidArgument, "process group '", info_.name, "': rank ", info_.ranks[info_.rank],
                " was started for ranks ", me.str(), " but rank ", r, " for ", theirs,
                " (world size or new_group ranks differ between processes)");
  }
  worker_ = std::thread([this] { worker_loop(); });
  watchdog_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      watchdog_cv_.wait_for(lock, std::chrono::milliseconds(250));
      lock.unlock();
      watchdog_tick();
      lock.lock();
    }
  });
}

ProcessGroup::~ProcessGroup() { shutdown(); }

void ProcessGroup::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // The worker has stopped: no lane is added now. Each lane finishes what it holds (every
  // wait is bounded by the group's timeout) before the backend's buffers go away.
  for (auto& [key, lane] : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
  if (watchdog_.joinable()) watchdog_.join();
}

std::shared_ptr<Task> ProcessGroup::submit(Op op, bool sync_op) {
  auto task = std::make_shared<Task>(op.kind);
  bool inline_run = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    OAR_ENFORCE(!stopping_, PreconditionNotMet, op.kind, ": process group '", info_.name,
                "' was destroyed (destroy_process_group)");
    if (!broken_.empty())
      throw CommError(op.kind + ": process group '" + info_.name + "' is unusable after an earlier failure: " + broken_,
                      false);
    op.seq = ++seq_;
    prepare(op);
    // A sync op with nothing ahead of it runs on the caller's thread: two thread hand-offs
    // fewer, which is most of a small all-reduce's latency on a busy machine.
    inline_run = sync_op && queue_.empty() && !busy_;
    if (inline_run) {
      busy_ = true;
      running_seq_ = op.seq;
      running_since_ = op.started = Clock::now();
    } else {
      queue_.emplace_back(std::move(op), task);
    }
  }
  if (inline_run) {
    execute(op, task);
  } else {
    cv_.notify_all();
  }
  if (sync_op) task->wait();
  return task;
}

void ProcessGroup::worker_loop() {
  while (true) {
    std::pair<Op, std::shared_ptr<Task>> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Stopping waits for an op a caller runs inline too: it may still add to a lane.
      cv_.wait(lock, [&] { return !busy_ && (stopping_ || !queue_.empty()); });
      if (queue_.empty()) break;  // stopping, and everything queued has run
      item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      running_seq_ = item.first.seq;
      running_since_ = item.first.started = Clock::now();
    }
    execute(item.first, item.second);
  }
  std::lock_guard<std::mutex> lock(mu_);
  worker_done_ = true;
  for (auto& [key, lane] : lanes_) lane->cv.notify_all();
}

// Runs one op (busy_ is set: no other op runs meanwhile), then frees the group for the next.
void ProcessGroup::execute(Op& op, const std::shared_ptr<Task>& task) {
  Deferred rest;
  std::exception_ptr error = guarded(op, [&] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_.empty()) {
        throw CommError("process group '" + info_.name + "' is unusable after an earlier failure: " + broken_, false);
      }
    }
    if (info_.debug_check && op.kind != "send" && op.kind != "recv") check_across_ranks(op);
    rest = run(op);
  });
  bool deferred = false, queued = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued = !queue_.empty() || stopping_;
    running_seq_ = 0;
    busy_ = false;
    if (rest && !error) {
      // Point-to-point ops complete on their lane's thread, so the next op (an irecv after
      // an isend) can be posted while this one waits for its peer.
      // Collectives (an xccl stream's wait) share one lane, in issue order: key (recv, -1).
      const bool p2p = op.kind == "send" || op.kind == "recv";
      auto& lane = lanes_[{op.kind == "send", p2p ? op.peer : -1}];
      if (!lane) {
        lane = std::make_unique<Lane>();
        lane->thread = std::thread([this, l = lane.get()] { completion_loop(l); });
      }
      lane->queue.push_back({std::move(op), std::move(rest), task});
      lane->cv.notify_all();
      deferred = true;
    }
  }
  // The worker may wait for busy_ to clear; waking it for nothing costs a context switch
  // per op, which is most of a small op's time on a loaded machine.
  if (queued) cv_.notify_all();
  if (!deferred) task->finish(error);
}

void ProcessGroup::completion_loop(Lane* lane) {
  auto& queue = lane->queue;
  while (true) {
    Completion c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      lane->cv.wait(lock, [&] { return worker_done_ || !queue.empty(); });
      if (queue.empty()) return;
      c = std::move(queue.front());
      queue.pop_front();
    }
    c.task->finish(guarded(c.op, c.rest));
  }
}

std::exception_ptr ProcessGroup::guarded(const Op& op, const std::function<void()>& fn) {
  std::exception_ptr error;
  bool fatal = true;
  try {
    fn();
    return nullptr;
  } catch (const CommError& e) {
    error = e.message().find("unusable after") != std::string::npos
                ? std::current_exception()
                : std::make_exception_ptr(CommError(diagnose(op, e.message()), e.timed_out()));
  } catch (const Error& e) {
    // Argument errors (the debug check, a reduce op a dtype lacks) are raised alike on every
    // rank before any byte moves: the group stays usable.
    if (e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kInvalidType) {
      error = std::current_exception();
      fatal = false;
    } else {
      error = std::make_exception_ptr(CommError(diagnose(op, e.what()), false));
    }
  } catch (const std::exception& e) {
    std::string cause = e.what();
    bool timed_out = cause.find("imed out") != std::string::npos;
    error = std::make_exception_ptr(CommError(diagnose(op, cause), timed_out));
  }
  if (fatal) {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.empty()) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        broken_ = e.what();
      }
    }
  }
  return error;
}

// Note [Dead peers]: when an op fails (a peer closed its connection, or the op timed
// out), this rank records in the store the op it reached, then reads what the other
// members recorded. Members still alive record their op too: on their own failure, or
// from the watchdog once an op has run for a second. Those that recorded nothing, or an
// earlier op, are the ones that never arrived: dead, or stuck elsewhere.
std::string ProcessGroup::diagnose(const Op& op, const std::string& cause) {
  std::ostringstream msg;
  msg << std::fixed << std::setprecision(2) << op.kind << " on process group '" << info_.name << "' (global ranks "
      << detail::str_cat(info_.ranks) << ", op #" << op.seq << ")";
  const bool p2p = op.kind == "send" || op.kind == "recv";
  const int peer = p2p && op.peer >= 0 && op.peer < size() ? info_.ranks[op.peer] : -1;
  if (p2p) msg << (op.kind == "send" ? " to rank " : " from rank ") << peer;
  msg << " failed on rank " << info_.ranks[info_.rank] << " after "
      << std::chrono::duration<double>(Clock::now() - op.started).count() << " s: " << cause << ". ";
  if (p2p) {
    // Only the peer takes part, and point-to-point op numbers differ between ranks: the
    // survey of the others (and a record they would compare collectives against) is moot.
    msg << "Rank " << peer << " exited, was killed, or never posted the matching "
        << (op.kind == "send" ? "recv" : "send") << " (see its log, e.g. workerlog." << peer << ").";
    return msg.str();
  }
  const std::string prefix = "pg/" + info_.name + "/reached/";
  try {
    store_->set(prefix + std::to_string(info_.ranks[info_.rank]), std::to_string(op.seq));
    auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(info_.timeout, std::chrono::seconds(2));
    std::vector<int> missing;
    std::map<int, std::string> behind;
    while (true) {
      missing.clear();
      behind.clear();
      for (int r : info_.ranks) {
        std::string key = prefix + std::to_string(r);
        if (!store_->check(key)) {
          missing.push_back(r);
          continue;
        }
        std::string v = store_->get(key, std::chrono::milliseconds(1000));
        if (std::stoull(v) < op.seq) behind[r] = v;
      }
      if ((missing.empty() && behind.empty()) || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (missing.empty() && behind.empty()) {
      msg << "Every rank reached this op; the failure is in the transport.";
    } else {
      if (!missing.empty()) {
        msg << "Ranks that did not arrive: " << detail::str_cat(missing)
            << " (exited, killed, or stuck before their first slow op: see their logs, e.g. workerlog.N).";
      }
      for (const auto& [r, v] : behind) {
        msg << " Rank " << r << " is stuck at op #" << v << ", behind this op (ops issued in a different order?).";
      }
    }
  } catch (const std::exception& e) {
    msg << "Could not ask the store which ranks arrived (" << e.what()
        << "); the store lives in rank 0's process, so rank 0 may be the one that died.";
  }
  return msg.str();
}

void ProcessGroup::watchdog_tick() {
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_seq_ == 0 || running_seq_ == reported_seq_) return;
    if (Clock::now() - running_since_ < std::chrono::seconds(1)) return;
    seq = reported_seq_ = running_seq_;
  }
  try {
    store_->set("pg/" + info_.name + "/reached/" + std::to_string(info_.ranks[info_.rank]), std::to_string(seq));
  } catch (const std::exception&) {
    // The store is gone with rank 0; the op's own error will say so.
  }
}

void ProcessGroup::check_across_ranks(const Op& op) {
  static const char* kKinds[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                 "reduce",     "scatter",    "alltoall",       "barrier"};
  const DenseTensor* t = op.tensors.empty() ? nullptr : &op.tensors.back();
  if (op.kind == "scatter") t = &op.tensors.front();  // the input is read on the root only
  DenseTensor mine(Dims({kDescLen}), DataType::INT64);
  int64_t* d = mine.alloc<int64_t>();
  std::fill(d, d + kDescLen, -1);
  d[0] = std::find(std::begin(kKinds), std::end(kKinds), op.kind) - std::begin(kKinds);
  d[3] = op.peer;
  d[4] = static_cast<int64_t>(op.reduce);
  if (t != nullptr) {
    d[1] = static_cast<int64_t>(t->dtype());
    d[2] = t->rank();
    for (int i = 0; i < std::min(t->rank(), kMaxDescDims); ++i) d[5 + i] = t->dims()[i];
  }
  DenseTensor all(Dims({static_cast<int64_t>(size()) * kDescLen}), DataType::INT64);
  const int64_t* a = all.alloc<int64_t>();
  if (Deferred rest = run(Op{"all_gather", {all, mine}, ReduceOp::kSum, -1, op.seq, op.stream, op.started})) rest();
  auto describe = [&](const int64_t* x) {
    std::ostringstream os;
    os << kKinds[std::min<int64_t>(x[0], 7)];
    if (x[1] >= 0) {
      os << "(" << dtype_name(static_cast<DataType>(x[1])) << "[";
      for (int i = 0; i < std::min<int64_t>(x[2], kMaxDescDims); ++i) os << (i ? ", " : "") << x[5 + i];
      os << "])";
    }
    if (x[3] >= 0) os << " root " << x[3];
    if (x[0] == 0 || x[0] == 2 || x[0] == 4) os << " op " << reduce_op_name(static_cast<ReduceOp>(x[4]));
    return os.str();
  };
  for (int r = 1; r < size(); ++r) {
    if (!std::equal(a, a + kDescLen, a + r * kDescLen)) {
      OAR_THROW(InvalidArgument, op.kind, " on process group '", info_.name,
                "': ranks disagree (OAR_DIST_DEBUG "
                "check): rank ",
                info_.ranks[0], " calls ", describe(a), " but rank ", info_.ranks[r], " calls ",
                describe(a + r * kDescLen));
    }
  }
}

std::shared_ptr<Task> ProcessGroup::all_reduce(DenseTensor t, ReduceOp op, bool sync_op) {
  check_tensor("all_reduce", "tensor", t);
  check_reduce_op("all_reduce", op, t);
  return submit(Op{"all_reduce", {t}, op}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::all_gather(DenseTensor out, DenseTensor in, bool sync_op) {
  check_tensor("all_gather", "tensor", in);
  check_tensor("all_gather", "output", out);
  check_chunks("all_gather", out, in, size(), "output", "tensor");
  return submit(Op{"all_gather", {out, in}}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::reduce_scatter(DenseTensor out, DenseTensor in, ReduceOp op, bool sync_op) {
  check_tensor("reduce_scatter", "tensor", in);
  check_tensor("reduce_scatter", "output", out);
  check_chunks("reduce_scatter", in, out, size(), "input", "output");
  check_reduce_op("reduce_scatter", op, in);
  return submit(Op{"reduce_scatter", {out, in}, op}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::broadcast(DenseTensor t, int root, bool sync_op) {
  check_tensor("broadcast", "tensor", t);
  OAR_ENFORCE(root >= 0 && root < size(), InvalidArgument, "broadcast: src ", root, " is not in group '", info_.name,
              "' of size ", size());
  return submit(Op{"broadcast", {t}, ReduceOp::kSum, root}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::reduce(DenseTensor t, int root, ReduceOp op, bool sync_op) {
  check_tensor("reduce", "tensor", t);
  check_reduce_op("reduce", op, t);
  OAR_ENFORCE(root >= 0 && root < size(), InvalidArgument, "reduce: dst ", root, " is not in group '", info_.name,
              "' of size ", size());
  return submit(Op{"reduce", {t}, op, root}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::scatter(DenseTensor out, DenseTensor in, int root, bool sync_op) {
  check_tensor("scatter", "tensor", out);
  OAR_ENFORCE(root >= 0 && root < size(), InvalidArgument, "scatter: src ", root, " is not in group '", info_.name,
              "' of size ", size());
  if (rank() == root) {
    check_tensor("scatter", "tensor_list", in);
    check_chunks("scatter", in, out, size(), "tensor_list", "tensor");
  }
  return submit(Op{"scatter", {out, in}, ReduceOp::kSum, root}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::alltoall(DenseTensor out, DenseTensor in, bool sync_op) {
  check_tensor("alltoall", "in_tensor_list", in);
  check_tensor("alltoall", "out_tensor_list", out);
  OAR_ENFORCE(in.numel() % size() == 0, InvalidArgument, "alltoall: the input ", shape_str(in), " does not split into ",
              size(), " equal chunks");
  check_chunks("alltoall", out, in, 1, "out_tensor_list", "in_tensor_list");
  return submit(Op{"alltoall", {out, in}}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::send(DenseTensor t, int dst, bool sync_op) {
  check_tensor("send", "tensor", t);
  OAR_ENFORCE(dst >= 0 && dst < size() && dst != rank(), InvalidArgument, "send: dst ", dst,
              " must be another rank of group '", info_.name, "' (size ", size(), ", this rank ", rank(), ")");
  return submit(Op{"send", {t}, ReduceOp::kSum, dst}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::recv(DenseTensor t, int src, bool sync_op) {
  check_tensor("recv", "tensor", t);
  OAR_ENFORCE(src >= 0 && src < size() && src != rank(), InvalidArgument, "recv: src ", src,
              " must be another rank of group '", info_.name, "' (size ", size(), ", this rank ", rank(), ")");
  return submit(Op{"recv", {t}, ReduceOp::kSum, src}, sync_op);
}

std::shared_ptr<Task> ProcessGroup::barrier() { return submit(Op{"barrier", {}}, true); }

namespace {
std::map<std::string, ProcessGroupFactory>& backends() {
  static std::map<std::string, ProcessGroupFactory> m;
  return m;
}
}  // namespace

void register_backend(const std::string& name, ProcessGroupFactory factory) { backends()[name] = std::move(factory); }

std::shared_ptr<ProcessGroup> create_process_group(const std::string& backend, GroupInfo info,
                                                   std::shared_ptr<Store> store, const std::string& hostname) {
  auto it = backends().find(backend);
  if (it == backends().end()) {
    std::string known;
    for (const auto& [k, v] : backends()) known += (known.empty() ? "" : ", ") + k;
    OAR_THROW(InvalidArgument, "init_parallel_env: no communication backend '", backend,
              "' in this build (have: ", known, ")");
  }
  return it->second(std::move(info), std::move(store), hostname);
}

}  // namespace oar::dist
