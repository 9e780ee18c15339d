// ProcessGroupXccl: the backend over the plugin ABI's collectives (the ccl_* slots of
// backends/include/oar/device_ext.h, after Paddle's XCCL), for tensors on a custom device.
// It is the shape a CUDA backend's NCCL group takes too: a communicator made from a
// unique id that rank 0 publishes in the store, and every op queued on the group's own
// stream of its device, the task completing when that stream has passed the op. See
// Note [Communication] and Note [Group streams] below.
//
// The group's timeout bounds a task's wait for its op (Note [Task completion]). A plugin
// reports a failed transfer (a dead peer, its own timeout) through the communicator's
// async error (ABI 1.3) or the stream's synchronize, with its message; the base class
// turns either into an error naming the op, the group and the missing ranks.
// On either failure the group calls the plugin's ccl_comm_abort (ABI 1.2, optional), so a
// transfer stuck on a peer stops holding the stream past the group's timeout: later work
// on that stream runs, and the process exits cleanly. A plugin without it keeps the stream
// until its own timeout.
// CPU tensors (the OAR_DIST_DEBUG check's descriptors, a user's CPU tensor) are staged
// through device memory.
#include <glog/logging.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "backends/runtime/device_manager.h"
#include "backends/runtime/streams.h"
#include "distributed/collective/process_group.h"
#include "distributed/collective/store.h"

namespace oar::dist {
namespace {

using backends::check_status;
using backends::DeviceManager;

OAR_DataType ccl_dtype(DataType t, const char* op) {
  OAR_ENFORCE(static_cast<int>(t) >= 0 && static_cast<int>(t) <= static_cast<int>(DataType::FLOAT64), InvalidType, op,
              ": the xccl backend has no collectives for ", dtype_name(t));
  static_assert(static_cast<int>(DataType::FLOAT64) == OAR_DTYPE_FLOAT64 &&
                    static_cast<int>(DataType::BFLOAT16) == OAR_DTYPE_BFLOAT16,
                "Oar's DataType and the ABI's OAR_DataType number the types alike");
  return static_cast<OAR_DataType>(t);
}

OAR_ReduceOp ccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return OAR_REDUCE_SUM;
    case ReduceOp::kMax:
      return OAR_REDUCE_MAX;
    case ReduceOp::kMin:
      return OAR_REDUCE_MIN;
    case ReduceOp::kProd:
      return OAR_REDUCE_PROD;
    case ReduceOp::kAvg:
      return OAR_REDUCE_AVG;
  }
  return OAR_REDUCE_SUM;
}

size_t count(const DenseTensor& t) { return t.initialized() ? static_cast<size_t>(t.numel()) : 0; }

// What a task waits for (Note [Task completion]): `wait` blocks until the op has run on
// the device (a helper thread calls it: it may outlive the group after a timeout, so it
// holds no communicator); `check`, if set, then reports a failed transfer from the
// waiting thread.
struct OpEnd {
  std::function<void()> wait;
  std::function<void()> check;
};

// Runs `end.wait` with a bound: the table's waits have none, so a helper thread makes the
// call and this one waits for it. On a timeout or a failed transfer it calls `abort` (the
// plugin's ccl_comm_abort), which frees a helper still blocked; without that slot the
// helper is left to the plugin's own timeout (as with NCCL's watchdog).
void wait_bounded(const Place& place, OpEnd end, std::chrono::milliseconds timeout,
                  const std::function<void()>& abort) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr error;
  };
  auto st = std::make_shared<State>();
  std::thread([st, blocking_wait = std::move(end.wait)] {
    std::exception_ptr error;
    try {
      blocking_wait();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(st->mu);
    st->done = true;
    st->error = error;
    st->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(st->mu);
  if (!st->cv.wait_for(lock, timeout, [&] { return st->done; })) {
    lock.unlock();
    abort();
    throw CommError(detail::str_cat("timed out after ", timeout.count() / 1000.0, " s waiting for ", place.str(),
                                    "'s stream to finish the op"),
                    true);
  }
  std::exception_ptr error = st->error;
  lock.unlock();
  if (!error && end.check) {
    try {
      end.check();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) {
    abort();  // a dead peer: the communicator's work on other streams fails at once too
    std::rethrow_exception(error);
  }
}

class ProcessGroupXccl : public ProcessGroup {
 public:
  ProcessGroupXccl(GroupInfo info, std::shared_ptr<Store> store)
      : ProcessGroup(std::move(info), store), place_(this->info().place) {
    OAR_ENFORCE(place_.is_custom(), InvalidArgument, "init of process group '", name(),
                "': the xccl backend runs on a custom device (oar.set_device('my_dev:0') before "
                "init_parallel_env), got ",
                place_.str());
    type_ = DeviceManager::device_type_of(place_);
    DeviceManager& dm = DeviceManager::instance();
    iface_ = &dm.interface(type_);
    OAR_ENFORCE(iface_->ccl_all_reduce != nullptr, InvalidArgument, "init of process group '", name(), "': device '",
                type_, "' has no collectives (its plugin leaves the ccl_* slots empty); use backend='gloo'");
    OAR_Device* dev = dm.device(place_);
    check_status(iface_->set_device(dev), type_, "set_device");
    size_t id_size = 0;
    check_status(iface_->ccl_get_unique_id_size(&id_size), type_, "ccl_get_unique_id_size");
    std::string id(id_size, '\0');
    const std::string key = "xccl/" + name() + "/unique_id";
    if (rank() == 0) {
      check_status(iface_->ccl_get_unique_id(id.data(), id_size), type_, "ccl_get_unique_id");
      this->store()->set(key, id);
    } else {
      try {
        id = this->store()->get(key, timeout());
      } catch (const CommError& e) {
        throw CommError(detail::str_cat("init of process group '", name(), "': the communicator id from rank ",
                                        ranks()[0], " did not arrive: ", e.message()),
                        e.timed_out());
      }
    }
    OAR_ENFORCE(id.size() == id_size, InvalidArgument, "init of process group '", name(), "': rank ", ranks()[0],
                " sent a communicator id of ", id.size(), " bytes, this rank expects ", id_size);
    check_status(iface_->ccl_comm_init_rank(size(), id.data(), id_size, rank(), &comm_), type_, "ccl_comm_init_rank");
    barrier_buf_ = DenseTensor(Dims({1}), DataType::INT32, place_);
    barrier_buf_.alloc();
  }
  ~ProcessGroupXccl() override {
    shutdown();
    if (comm_ != nullptr) iface_->ccl_destroy_comm(comm_);
    // The group's stream and events; a group that gave up on a peer keeps them (its stream
    // may still hold the stuck op, and destroying a stream waits for it).
    if (stream_ != nullptr && !aborted_->load()) {
      try {
        for (auto& [caller, ready] : ready_) backends::destroy_event(place_, ready);
        backends::destroy_event(place_, done_);
        backends::destroy_stream(place_, stream_);
      } catch (const std::exception& e) {
        LOG(WARNING) << "process group '" << name() << "': releasing its stream: " << e.what();
      }
    }
  }
  const char* backend() const override { return "xccl"; }

 protected:
  // The caller's stream; a point-to-point op is queued on the device right away, in the
  // order the caller issues it (Note [Group streams]).
  void prepare(Op& op) override {
    op.stream = backends::current_stream(place_);
    if (op.kind == "send" || op.kind == "recv") {
      Deferred rest = start(op);
      std::lock_guard<std::mutex> lock(started_mu_);
      started_[op.seq] = std::move(rest);
    }
  }

  void check_place(const char* op, const char* arg, const DenseTensor& t) const override {
    OAR_ENFORCE(t.place().is_cpu() || t.place() == place_, InvalidArgument, op, ": ", arg, " is on ", t.place().str(),
                " but process group '", name(), "' (xccl) communicates on ", place_.str());
  }

  // Note [Group streams]: each group queues its ops on a stream of its own (as NCCL's
  // process groups do), made to wait for the caller's stream first (the kernels that
  // produced the inputs). Ops with a result make the caller's stream wait for them, so its
  // later kernels read the result; a send does not, so nothing on the caller's stream
  // waits for a peer to receive. On the caller's stream itself, ops of different groups
  // queued behind one another: a pipeline's forward sends (one group) and backward
  // receives (another) deadlocked once a send had to wait for its receiver. A send or a
  // receive is queued when it is issued (prepare, on the caller's thread): queued later by
  // the group's worker, its wait for the caller's stream could land behind a wait the
  // caller issued afterwards for another group's receive.
  Deferred run(const Op& op) override {
    if (op.kind == "send" || op.kind == "recv") {
      std::lock_guard<std::mutex> lock(started_mu_);
      auto it = started_.find(op.seq);
      OAR_ENFORCE(it != started_.end(), Internal, "ProcessGroupXccl: ", op.kind, " #", op.seq, " was not started");
      Deferred rest = std::move(it->second);
      started_.erase(it);
      return rest;
    }
    return start(op);
  }

 private:
  OAR_Stream group_stream(OAR_Stream caller) {
    if (stream_ == nullptr) {
      // Non-blocking (Note [Non-blocking streams]): a host's blocking copy, say a received
      // size read by numpy(), must not wait for this group's pending send to a peer whose
      // host is waiting the same way.
      stream_ = backends::create_stream(place_, OAR_STREAM_NON_BLOCKING);
      done_ = backends::create_event(place_);
    }
    OAR_Event& ready = ready_[caller];  // one per caller stream: an event's records stay in order
    if (ready == nullptr) ready = backends::create_event(place_);
    backends::record_event(place_, caller, ready);
    backends::stream_wait_event(place_, stream_, ready);
    return stream_;
  }

  // Queues `op` on the group's stream; returns the wait for it.
  Deferred start(const Op& op) {
    const auto caller = static_cast<OAR_Stream>(op.stream != nullptr ? op.stream : backends::current_stream(place_));
    std::lock_guard<std::mutex> lock(stream_mu_);  // the caller's thread (p2p) and the worker's
    const OAR_Stream stream = group_stream(caller);
    // CPU tensors go through device copies, out and back.
    std::vector<DenseTensor> dev(op.tensors.size());
    std::vector<size_t> staged;
    for (size_t i = 0; i < op.tensors.size(); ++i) {
      const DenseTensor& t = op.tensors[i];
      if (!t.initialized() || !t.place().is_cpu()) {
        dev[i] = t;
        continue;
      }
      dev[i] = DenseTensor(t.dims(), t.dtype(), place_);
      dev[i].alloc();
      copy_into(t, &dev[i]);
      staged.push_back(i);
    }
    enqueue(op, dev, stream);
    if (op.kind != "send") {
      backends::record_event(place_, stream, done_);
      backends::stream_wait_event(place_, caller, done_);
    }
    return [dev, staged, out = op.tensors, place = place_, timeout = timeout(), abort = abort_fn(),
            end = end_of_op(stream)]() mutable {
      wait_bounded(place, std::move(end), timeout, abort);
      for (size_t i : staged) copy_into(dev[i], &out[i]);
    };
  }

  // Note [Task completion]: what a task waits for, on the host, once its op is queued on
  // `stream`. With the plugin's ccl_comm_get_async_error (ABI 1.3): an event recorded after
  // the op, then the communicator's error state, since an event does not report a failed
  // transfer (NCCL's work.wait() and ncclCommGetAsyncError). So a task ends with its own
  // op, not with the ops queued after it: waiting for a receive must not wait for a later
  // send whose receiver is waiting for this very wait. Without the slot: the whole stream,
  // whose synchronize reports the failure.
  OpEnd end_of_op(OAR_Stream stream) {
    const Place place = place_;
    OAR_Status (*async_error)(OAR_CCLComm) = iface_->ccl_comm_get_async_error;
    if (async_error == nullptr) return {[place, stream] { backends::synchronize_stream(place, stream); }, nullptr};
    // Released by whoever lets go last: the task, or its helper thread still waiting after a
    // timeout (the ABI lets a plugin free an event its stream has yet to reach).
    std::shared_ptr<OAR_Event_st> end(backends::create_event(place_), [place](OAR_Event e) {
      try {
        backends::destroy_event(place, e);
      } catch (const std::exception& err) {
        LOG(WARNING) << "process group: releasing an op's event: " << err.what();
      }
    });
    backends::record_event(place_, stream, end.get());
    return {[place, end] { backends::synchronize_event(place, end.get()); },
            [async_error, comm = comm_, type = type_] {
      check_status(async_error(comm), type, "ccl_comm_get_async_error");
            }};
  }

  void call(OAR_Status status, const char* slot) { check_status(status, type_, slot); }

  // Aborts the communicator once (ccl_comm_abort; nothing when the plugin lacks the slot,
  // a 1.0 or 1.1 table). Its status is ignored: the group is failing already.
  std::function<void()> abort_fn() {
    OAR_Status (*fn)(OAR_CCLComm) = iface_->ccl_comm_abort;
    if (fn == nullptr) return [] {};
    return [fn, comm = comm_, done = aborted_] {
      if (!done->exchange(true)) fn(comm);
    };
  }

  void enqueue(const Op& op, const std::vector<DenseTensor>& ts, OAR_Stream s) {
    const char* k = op.kind.c_str();
    auto ptr = [](const DenseTensor& t) { return t.initialized() ? t.raw_data() : nullptr; };
    if (op.kind == "all_reduce") {
      call(iface_->ccl_all_reduce(ptr(ts[0]), ptr(ts[0]), count(ts[0]), ccl_dtype(ts[0].dtype(), k), ccl_op(op.reduce),
                                  comm_, s),
           "ccl_all_reduce");
    } else if (op.kind == "all_gather") {
      call(iface_->ccl_all_gather(ptr(ts[1]), ptr(ts[0]), count(ts[1]), ccl_dtype(ts[1].dtype(), k), comm_, s),
           "ccl_all_gather");
    } else if (op.kind == "reduce_scatter") {
      call(iface_->ccl_reduce_scatter(ptr(ts[1]), ptr(ts[0]), count(ts[0]), ccl_dtype(ts[0].dtype(), k),
                                      ccl_op(op.reduce), comm_, s),
           "ccl_reduce_scatter");
    } else if (op.kind == "broadcast") {
      call(iface_->ccl_broadcast(ptr(ts[0]), count(ts[0]), ccl_dtype(ts[0].dtype(), k), op.peer, comm_, s),
           "ccl_broadcast");
    } else if (op.kind == "reduce") {
      call(iface_->ccl_reduce(ptr(ts[0]), ptr(ts[0]), count(ts[0]), ccl_dtype(ts[0].dtype(), k), ccl_op(op.reduce),
                              op.peer, comm_, s),
           "ccl_reduce");
    } else if (op.kind == "scatter") {
      scatter(op, ts, s);
    } else if (op.kind == "alltoall") {
      call(iface_->ccl_all_to_all(ptr(ts[1]), ptr(ts[0]), count(ts[1]) / size(), ccl_dtype(ts[1].dtype(), k), comm_, s),
           "ccl_all_to_all");
    } else if (op.kind == "send") {
      call(iface_->ccl_send(ptr(ts[0]), count(ts[0]), ccl_dtype(ts[0].dtype(), k), op.peer, comm_, s), "ccl_send");
    } else if (op.kind == "recv") {
      call(iface_->ccl_recv(ptr(ts[0]), count(ts[0]), ccl_dtype(ts[0].dtype(), k), op.peer, comm_, s), "ccl_recv");
    } else if (op.kind == "barrier") {
      call(iface_->ccl_all_reduce(barrier_buf_.raw_data(), barrier_buf_.raw_data(), 1, OAR_DTYPE_INT32, OAR_REDUCE_SUM,
                                  comm_, s),
           "ccl_all_reduce");
    } else {
      OAR_THROW(Internal, "ProcessGroupXccl: unknown op ", op.kind);
    }
  }

  // The ABI has no scatter: the root sends each rank its chunk in one group and copies
  // its own on the stream.
  void scatter(const Op& op, const std::vector<DenseTensor>& ts, OAR_Stream s) {
    const OAR_DataType dt = ccl_dtype(ts[0].dtype(), "scatter");
    const size_t n = count(ts[0]), bytes = n * size_of(ts[0].dtype());
    if (rank() != op.peer) {
      call(iface_->ccl_recv(ts[0].raw_data(), n, dt, op.peer, comm_, s), "ccl_recv");
      return;
    }
    char* in = static_cast<char*>(ts[1].raw_data());
    call(iface_->ccl_group_start(), "ccl_group_start");
    OAR_Status status = OAR_SUCCESS;
    for (int r = 0; r < size() && status == OAR_SUCCESS; ++r) {
      if (r != rank()) status = iface_->ccl_send(in + r * bytes, n, dt, r, comm_, s);
    }
    call(iface_->ccl_group_end(), "ccl_group_end");
    call(status, "ccl_send");
    backends::memcpy_async(place_, ts[0].raw_data(), place_, in + rank() * bytes, bytes, s);
  }

  Place place_;
  std::string type_;
  const OAR_DeviceInterface* iface_ = nullptr;
  OAR_CCLComm comm_ = nullptr;
  OAR_Stream stream_ = nullptr;                      // Note [Group streams]
  OAR_Event done_ = nullptr;                         // recorded on stream_ after an op with a result
  std::unordered_map<OAR_Stream, OAR_Event> ready_;  // per caller stream, recorded before each op
  std::mutex stream_mu_;                             // guards the three above and the queueing
  std::mutex started_mu_;
  std::unordered_map<uint64_t, Deferred> started_;  // p2p ops queued by prepare, by seq, until run
  std::shared_ptr<std::atomic<bool>> aborted_ = std::make_shared<std::atomic<bool>>(false);
  DenseTensor barrier_buf_;
};

const bool kRegistered = [] {
  register_backend("xccl", [](GroupInfo info, std::shared_ptr<Store> store, const std::string&) {
    return std::make_shared<ProcessGroupXccl>(std::move(info), std::move(store));
  });
  return true;
}();

}  // namespace
}  // namespace oar::dist
