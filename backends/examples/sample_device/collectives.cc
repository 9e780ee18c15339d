// The sample device's collectives (the ABI's ccl_* slots, after Paddle's XCCL group):
// ranks in different processes meet in one POSIX shared-memory segment whose name is the
// unique id. Data really moves: each step copies a chunk from a rank's device arena into
// its slot of the segment, a barrier, then every rank reads the slots it needs into its
// own arena (reducing on the way), and a second barrier frees the slots for the next
// chunk. Point-to-point messages go through one mailbox per ordered pair of ranks.
//
// Every call checks its arguments at once (an error comes back with a message for
// get_last_error_message) and queues the transfer on the given stream, so it runs after
// the kernels queued before it. A transfer that fails on the stream (a peer that exited,
// or one that did not arrive within SAMPLE_DEVICE_CCL_TIMEOUT_S, default 1800 s) is
// reported by the stream's next synchronize_stream, marks the communicator broken (later
// calls fail at once), and tells the other ranks, which fail too instead of waiting. A
// dead peer is noticed within ~20 ms: waiting ranks check that the pids in the segment
// are still alive. One stream at a time per communicator, as with NCCL.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sample_device.h"

namespace sample {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kIdSize = 64;
constexpr size_t kMaxRanks = 64;
constexpr size_t kSlotBytes = size_t(4) << 20;  // what one collective step moves per rank
constexpr size_t kMailBytes = size_t(1) << 20;  // one point-to-point chunk per ordered pair
constexpr char kIdPrefix[] = "/oar_sample_ccl.";

struct alignas(64) RankCell {
  std::atomic<uint64_t> phase;  // barriers this rank has entered
  std::atomic<int32_t> pid;     // 0 until the rank attached
  std::atomic<uint64_t> desc;   // the rank's current collective: kind, dtype, op, root
  std::atomic<uint64_t> count;  // ... and its element count (checked across ranks)
};
struct alignas(64) Mailbox {     // one per ordered pair (src, dst)
  std::atomic<uint64_t> posted;  // chunks the sender has written
  std::atomic<uint64_t> taken;   // chunks the receiver has read
  std::atomic<uint64_t> bytes;   // size of the last chunk posted
};
struct Header {
  std::atomic<uint32_t> nranks;      // set by the first rank to attach
  std::atomic<int32_t> failed_rank;  // 0: none; r + 1: rank r gave up on the communicator
  RankCell ranks[kMaxRanks];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory atomics must be lock-free");

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct Layout {
  size_t mail_off, slots_off, maildata_off, bytes;
  explicit Layout(size_t n) {
    mail_off = round_up(sizeof(Header), 4096);
    slots_off = round_up(mail_off + n * n * sizeof(Mailbox), 4096);
    maildata_off = slots_off + n * kSlotBytes;
    bytes = maildata_off + n * n * kMailBytes;
  }
};

struct Comm {
  std::string name;
  size_t nranks = 0, rank = 0;
  char* base = nullptr;
  size_t bytes = 0;
  std::chrono::milliseconds timeout{0};
  uint64_t phase = 0;  // barriers entered; touched only by the stream running this comm's work
  uint64_t ops = 0;    // ops issued, for messages
  std::mutex mu;
  std::string error;                 // the first failure: the communicator is unusable after it
  std::atomic<bool> aborted{false};  // ccl_comm_abort: waits give up at once

  ~Comm() {
    if (base != nullptr) munmap(base, bytes);
  }
  Header* header() const { return reinterpret_cast<Header*>(base); }
  RankCell& cell(size_t r) const { return header()->ranks[r]; }
  char* slot(size_t r) const { return base + Layout(nranks).slots_off + r * kSlotBytes; }
  Mailbox& box(size_t src, size_t dst) const {
    return reinterpret_cast<Mailbox*>(base + Layout(nranks).mail_off)[src * nranks + dst];
  }
  char* mail(size_t src, size_t dst) const {
    return base + Layout(nranks).maildata_off + (src * nranks + dst) * kMailBytes;
  }
  std::string broken() {
    std::lock_guard<std::mutex> lock(mu);
    return error;
  }
  // Records the first failure and tells the other ranks.
  std::string fail(std::string why) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.empty()) error = why;
    int32_t none = 0;
    header()->failed_rank.compare_exchange_strong(none, static_cast<int32_t>(rank) + 1);
    return why;
  }
};

struct Handle {
  std::shared_ptr<Comm> comm;
};

Comm* comm_of(OAR_CCLComm c) { return c == nullptr ? nullptr : reinterpret_cast<Handle*>(c)->comm.get(); }

// A process is gone when /proc has no entry for it or it is a zombie.
bool alive(int32_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close == nullptr || close[1] == '\0' || (close[2] != 'Z' && close[2] != 'X');
}

std::string ranks_str(const std::vector<size_t>& rs) {
  std::string s = "[";
  for (size_t i = 0; i < rs.size(); ++i) s += (i ? ", " : "") + std::to_string(rs[i]);
  return s + "]";
}

// Waits until ready() (which may make progress) is true; "" then, else why not: a peer
// that exited, one that gave up, or the timeout. `pending` names the ranks still awaited.
std::string wait_until(Comm& c, const std::string& what, const std::function<bool()>& ready,
                       const std::function<std::vector<size_t>()>& pending) {
  const auto start = Clock::now();
  auto next_check = start + std::chrono::milliseconds(20);
  int sleep_us = 0;
  for (uint64_t spin = 0;; ++spin) {
    if (ready()) return "";
    if (c.aborted.load(std::memory_order_relaxed)) {
      return c.fail("sample ccl " + what + " (rank " + std::to_string(c.rank) +
                    "): the communicator was aborted (ccl_comm_abort) while waiting for ranks " + ranks_str(pending()));
    }
    if (spin < 64) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us + 20, 1000);
    const auto now = Clock::now();
    if (now < next_check) continue;
    next_check = now + std::chrono::milliseconds(20);
    const std::string prefix =
        "sample ccl " + what + " (rank " + std::to_string(c.rank) + " of " + std::to_string(c.nranks) + "): ";
    for (size_t r : pending()) {
      const int32_t pid = c.cell(r).pid.load(std::memory_order_acquire);
      if (pid != 0 && !alive(pid)) {
        return c.fail(prefix + "peer rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
                      ") exited while this rank waited for it");
      }
    }
    const int32_t failed = c.header()->failed_rank.load(std::memory_order_acquire);
    if (failed != 0 && static_cast<size_t>(failed - 1) != c.rank) {
      return c.fail(prefix + "peer rank " + std::to_string(failed - 1) +
                    " gave up on the communicator (its error says why); waiting for ranks " + ranks_str(pending()));
    }
    if (now - start >= c.timeout) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.1f", std::chrono::duration<double>(c.timeout).count());
      return c.fail(prefix + "timed out after " + secs + " s (SAMPLE_DEVICE_CCL_TIMEOUT_S) waiting for ranks " +
                    ranks_str(pending()));
    }
  }
}

std::string barrier(Comm& c, const std::string& what) {
  const uint64_t p = ++c.phase;
  c.cell(c.rank).phase.store(p, std::memory_order_release);
  auto behind = [&] {
    std::vector<size_t> rs;
    for (size_t r = 0; r < c.nranks; ++r) {
      if (c.cell(r).phase.load(std::memory_order_acquire) < p) rs.push_back(r);
    }
    return rs;
  };
  return wait_until(
      c, what, [&] { return behind().empty(); }, behind);
}

// ---- queued operations
enum Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll };
const char* const kKindNames[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all"};

struct Coll {
  Kind kind;
  const char* send;  // private views of device memory (null when count is 0)
  char* recv;
  size_t count;
  OAR_DataType dtype;
  OAR_ReduceOp op;
  size_t root;
};

struct P2P {
  bool is_send;
  const char* src;
  char* dst;
  size_t bytes;
  size_t peer;
  size_t done = 0;
  bool finished = false;
};

struct Item {
  std::shared_ptr<Comm> comm;
  bool p2p;
  Coll coll;
  P2P pp;
  std::string what;  // "all_reduce #3", for messages
};

void cp(char* dst, const char* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

std::string describe(uint64_t desc, uint64_t count) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s of %llu elements (dtype %d, op %d, root %d)", kKindNames[(desc >> 24) & 0xff],
                static_cast<unsigned long long>(count), static_cast<int>(desc & 0xff),
                static_cast<int>((desc >> 8) & 0xff), static_cast<int>((desc >> 16) & 0xff));
  return buf;
}

std::string run_collective(Comm& c, const Coll& o, const std::string& what) {
  const size_t esz = dtype_size(o.dtype), n = c.nranks, me = c.rank;
  const bool split = o.kind == kReduceScatter || o.kind == kAllToAll;
  const size_t per = kSlotBytes / esz / (split ? n : 1);  // elements per step
  const uint64_t desc = static_cast<uint64_t>(o.dtype) | (static_cast<uint64_t>(o.op) << 8) |
                        (static_cast<uint64_t>(o.root & 0xff) << 16) | (static_cast<uint64_t>(o.kind) << 24);
  c.cell(me).desc.store(desc, std::memory_order_relaxed);  // published by the first barrier
  c.cell(me).count.store(o.count, std::memory_order_relaxed);
  for (size_t off = 0, step = 0; step == 0 || off < o.count; off += per, ++step) {
    const size_t k = std::min(per, o.count - off), bytes = k * esz;
    char* mine = c.slot(me);
    switch (o.kind) {
      case kAllReduce:
      case kReduce:
      case kAllGather:
        cp(mine, o.send + off * esz, bytes);
        break;
      case kBroadcast:
        if (me == o.root) cp(mine, o.recv + off * esz, bytes);
        break;
      case kReduceScatter:
      case kAllToAll:
        for (size_t d = 0; d < n; ++d) cp(mine + d * bytes, o.send + (d * o.count + off) * esz, bytes);
        break;
    }
    if (std::string e = barrier(c, what); !e.empty()) return e;
    if (step == 0) {
      for (size_t q = 0; q < n; ++q) {
        const uint64_t d = c.cell(q).desc.load(std::memory_order_relaxed);
        const uint64_t cnt = c.cell(q).count.load(std::memory_order_relaxed);
        if (d != desc || cnt != o.count) {
          return c.fail("sample ccl " + what + ": rank " + std::to_string(q) + " called " + describe(d, cnt) +
                        " but rank " + std::to_string(me) + " " + describe(desc, o.count));
        }
      }
    }
    std::vector<const char*> srcs(n);
    switch (o.kind) {
      case kAllReduce:
      case kReduce:
        if (o.kind == kAllReduce || me == o.root) {
          for (size_t q = 0; q < n; ++q) srcs[q] = c.slot(q);
          reduce_into(o.recv + off * esz, srcs, k, o.dtype, o.op);
        }
        break;
      case kBroadcast:
        if (me != o.root) cp(o.recv + off * esz, c.slot(o.root), bytes);
        break;
      case kAllGather:
        for (size_t q = 0; q < n; ++q) cp(o.recv + (q * o.count + off) * esz, c.slot(q), bytes);
        break;
      case kReduceScatter:
        for (size_t q = 0; q < n; ++q) srcs[q] = c.slot(q) + me * bytes;
        reduce_into(o.recv + off * esz, srcs, k, o.dtype, o.op);
        break;
      case kAllToAll:
        for (size_t q = 0; q < n; ++q) cp(o.recv + (q * o.count + off) * esz, c.slot(q) + me * bytes, bytes);
        break;
    }
    if (std::string e = barrier(c, what); !e.empty()) return e;
  }
  return "";
}

// One non-blocking pass: moves what the mailbox allows; true once the message is done.
bool progress(Comm& c, P2P& p, std::string* err) {
  while (!p.finished) {
    if (p.is_send) {
      Mailbox& m = c.box(c.rank, p.peer);
      if (m.posted.load(std::memory_order_acquire) != m.taken.load(std::memory_order_acquire)) return false;
      const size_t k = std::min(kMailBytes, p.bytes - p.done);
      cp(c.mail(c.rank, p.peer), p.src + p.done, k);
      m.bytes.store(k, std::memory_order_relaxed);
      m.posted.fetch_add(1, std::memory_order_release);
      p.done += k;
    } else {
      Mailbox& m = c.box(p.peer, c.rank);
      if (m.posted.load(std::memory_order_acquire) == m.taken.load(std::memory_order_relaxed)) return false;
      const size_t k = m.bytes.load(std::memory_order_relaxed), want = std::min(kMailBytes, p.bytes - p.done);
      if (k != want) {
        *err = "rank " + std::to_string(p.peer) + " sent a message that does not match this recv of " +
               std::to_string(p.bytes) + " bytes (a chunk of " + std::to_string(k) + " bytes where " +
               std::to_string(want) + " were expected)";
        return true;
      }
      cp(p.dst + p.done, c.mail(p.peer, c.rank), k);
      m.taken.fetch_add(1, std::memory_order_release);
      p.done += k;
    }
    p.finished = p.done == p.bytes;
  }
  return true;
}

// Runs a batch (one call, or a group): collectives in order, consecutive send/recv
// progressed together so that a pair of ranks can exchange messages in one group.
std::string run_items(std::vector<Item>& items) {
  for (size_t i = 0; i < items.size();) {
    Comm& c = *items[i].comm;
    if (std::string b = c.broken(); !b.empty()) {
      return "sample ccl " + items[i].what + ": the communicator is unusable after an earlier failure: " + b;
    }
    if (!items[i].p2p) {
      if (std::string e = run_collective(c, items[i].coll, items[i].what); !e.empty()) return e;
      ++i;
      continue;
    }
    size_t j = i;
    while (j < items.size() && items[j].p2p) ++j;
    std::string err;
    auto done = [&] {
      bool all = true;
      for (size_t k = i; k < j && err.empty(); ++k) all = progress(*items[k].comm, items[k].pp, &err) && all;
      return all || !err.empty();
    };
    auto pending = [&] {
      std::vector<size_t> peers;
      for (size_t k = i; k < j; ++k) {
        if (!items[k].pp.finished) peers.push_back(items[k].pp.peer);
      }
      return peers;
    };
    if (std::string e = wait_until(c, items[i].what, done, pending); !e.empty()) return e;
    if (!err.empty()) return c.fail("sample ccl " + items[i].what + ": " + err);
    i = j;
  }
  return "";
}

// ccl_group_start/end: calls between them are queued as one batch.
thread_local int t_group_depth = 0;
thread_local std::vector<Item> t_group;
thread_local OAR_Stream t_group_stream = nullptr;

void launch(OAR_Stream stream, std::vector<Item> items) {
  stream_enqueue(stream, [items = std::move(items)]() mutable { return run_items(items); });
}

OAR_Status submit(OAR_Stream stream, Item item) {
  if (t_group_depth == 0) {
    launch(stream, {std::move(item)});
    return OAR_SUCCESS;
  }
  if (t_group.empty()) t_group_stream = stream;
  if (stream != t_group_stream) {
    return fail(OAR_ERROR_INVALID_ARGUMENT, "sample ccl " + item.what + ": every call of a group must use one stream");
  }
  t_group.push_back(std::move(item));
  return OAR_SUCCESS;
}

// ---- argument checks: each failure names the call and the argument
struct Call {
  const char* name;
  Comm* comm = nullptr;
  int device = -1;
  OAR_Status status = OAR_SUCCESS;

  bool bad(OAR_Status s, const std::string& why) {
    if (status == OAR_SUCCESS) status = fail(s, std::string("sample ccl ") + name + ": " + why);
    return false;
  }
  bool start(OAR_CCLComm c, OAR_Stream stream, OAR_DataType dtype) {
    comm = comm_of(c);
    if (comm == nullptr) return bad(OAR_ERROR_INVALID_ARGUMENT, "comm is null");
    if (stream == nullptr) return bad(OAR_ERROR_INVALID_ARGUMENT, "stream is null");
    if (dtype_size(dtype) == 0) return bad(OAR_ERROR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(dtype));
    if (std::string b = comm->broken(); !b.empty()) {
      return bad(OAR_ERROR_DEVICE, "the communicator is unusable after an earlier failure: " + b);
    }
    return true;
  }
  bool reduce_op(OAR_ReduceOp op, OAR_DataType dtype) {
    if (op < OAR_REDUCE_SUM || op > OAR_REDUCE_PROD) {
      return bad(OAR_ERROR_INVALID_ARGUMENT, "unknown reduce op " + std::to_string(op));
    }
    if (op == OAR_REDUCE_AVG && dtype == OAR_DTYPE_BOOL) {
      return bad(OAR_ERROR_INVALID_ARGUMENT, "OAR_REDUCE_AVG is not defined for OAR_DTYPE_BOOL");
    }
    return true;
  }
  bool rank(const char* arg, size_t r, bool other) {
    if (r >= comm->nranks || (other && r == comm->rank)) {
      return bad(OAR_ERROR_INVALID_ARGUMENT, std::string(arg) + " " + std::to_string(r) + " is not " +
                                                 (other ? "another" : "a") + " rank of the communicator (" +
                                                 std::to_string(comm->nranks) + " ranks, this one " +
                                                 std::to_string(comm->rank) + ")");
    }
    return true;
  }
  // The plugin's view of `bytes` of device memory at p; all of a call's buffers on one device.
  bool view(const char* arg, const void* p, size_t bytes, char** out) {
    *out = nullptr;
    if (bytes == 0) return true;
    const int d = device_of(p, bytes);
    char where[64];
    std::snprintf(where, sizeof(where), "%p", p);
    if (d < 0) {
      return bad(OAR_ERROR_INVALID_ARGUMENT, std::string(arg) + " (" + where + ", " + std::to_string(bytes) +
                                                 " bytes) is not memory of a sample device");
    }
    if (device >= 0 && d != device) {
      return bad(OAR_ERROR_INVALID_ARGUMENT, std::string(arg) + " is on sample:" + std::to_string(d) +
                                                 ", another buffer on sample:" + std::to_string(device));
    }
    device = d;
    *out = device_view(d, p, bytes);
    return true;
  }
  Item item(Kind kind) {
    Item it{};
    it.what = std::string(kKindNames[kind]) + " #" + std::to_string(++comm->ops);
    return it;
  }
};

std::shared_ptr<Comm> shared(OAR_CCLComm c) { return reinterpret_cast<Handle*>(c)->comm; }

OAR_Status collective(const char* name, Kind kind, const void* send, void* recv, size_t count, size_t send_n,
                      size_t recv_n, OAR_DataType dtype, OAR_ReduceOp op, size_t root, OAR_CCLComm comm,
                      OAR_Stream stream) {
  Call call{name};
  char *s = nullptr, *r = nullptr;
  const bool reduces = kind == kAllReduce || kind == kReduce || kind == kReduceScatter;
  if (!call.start(comm, stream, dtype)) return call.status;
  if (reduces && !call.reduce_op(op, dtype)) return call.status;
  if ((kind == kBroadcast || kind == kReduce) && !call.rank("root", root, false)) return call.status;
  const size_t esz = dtype_size(dtype);
  if (kind != kBroadcast && !call.view("send", send, send_n * esz, &s)) return call.status;
  if (!call.view(kind == kBroadcast ? "buf" : "recv", recv, recv_n * esz, &r)) return call.status;
  Item it = call.item(kind);
  it.comm = shared(comm);
  it.p2p = false;
  it.coll = Coll{kind, s, r, count, dtype, reduces ? op : OAR_REDUCE_SUM, root};
  return submit(stream, std::move(it));
}

OAR_Status point_to_point(bool is_send, const void* buf, size_t count, OAR_DataType dtype, size_t peer,
                          OAR_CCLComm comm, OAR_Stream stream) {
  Call call{is_send ? "send" : "recv"};
  char* v = nullptr;
  if (!call.start(comm, stream, dtype) || !call.rank("peer", peer, true)) return call.status;
  const size_t bytes = count * dtype_size(dtype);
  if (!call.view(is_send ? "send" : "recv", buf, bytes, &v)) return call.status;
  Item it{};
  it.what = std::string(call.name) + " #" + std::to_string(++call.comm->ops);
  it.comm = shared(comm);
  it.p2p = true;
  it.pp = P2P{is_send, v, v, bytes, peer};
  return submit(stream, std::move(it));
}

// ---- the slots
OAR_Status s_get_unique_id_size(size_t* size) {
  if (size == nullptr) return fail(OAR_ERROR_INVALID_ARGUMENT, "sample ccl_get_unique_id_size: size is null");
  *size = kIdSize;
  return OAR_SUCCESS;
}

OAR_Status s_get_unique_id(void* id, size_t size) {
  if (id == nullptr || size < kIdSize) {
    return fail(OAR_ERROR_INVALID_ARGUMENT,
                "sample ccl_get_unique_id: needs a buffer of " + std::to_string(kIdSize) + " bytes");
  }
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  std::memset(id, 0, size);
  std::snprintf(static_cast<char*>(id), kIdSize, "%s%d.%llu.%08x%08x", kIdPrefix, static_cast<int>(getpid()),
                static_cast<unsigned long long>(counter++), rd(), rd());
  return OAR_SUCCESS;
}

size_t timeout_ms() {
  const char* v = std::getenv("SAMPLE_DEVICE_CCL_TIMEOUT_S");
  const double s = v != nullptr && *v != '\0' ? std::strtod(v, nullptr) : 1800.0;
  return static_cast<size_t>(std::max(s, 0.001) * 1000);
}

OAR_Status s_comm_init_rank(size_t nranks, const void* id, size_t id_size, size_t rank, OAR_CCLComm* out) {
  const std::string call = "sample ccl_comm_init_rank: ";
  if (out == nullptr || id == nullptr) return fail(OAR_ERROR_INVALID_ARGUMENT, call + "id and comm must not be null");
  if (nranks == 0 || nranks > kMaxRanks || rank >= nranks) {
    return fail(OAR_ERROR_INVALID_ARGUMENT, call + "rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                                                " ranks (at most " + std::to_string(kMaxRanks) + ")");
  }
  const char* s = static_cast<const char*>(id);
  const std::string name(s, strnlen(s, std::min(id_size, kIdSize)));
  if (name.rfind(kIdPrefix, 0) != 0) {
    return fail(OAR_ERROR_INVALID_ARGUMENT, call + "the id did not come from ccl_get_unique_id");
  }
  auto c = std::make_shared<Comm>();
  c->name = name;
  c->nranks = nranks;
  c->rank = rank;
  c->timeout = std::chrono::milliseconds(timeout_ms());
  const Layout layout(nranks);
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return fail(OAR_ERROR_DEVICE, call + "shm_open(" + name + "): " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 ||
      (static_cast<size_t>(st.st_size) < layout.bytes && ftruncate(fd, static_cast<off_t>(layout.bytes)) != 0)) {
    close(fd);
    return fail(OAR_ERROR_DEVICE, call + "sizing " + name + ": " + std::strerror(errno));
  }
  void* p = mmap(nullptr, layout.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return fail(OAR_ERROR_DEVICE, call + "mmap of " + name + ": " + std::strerror(errno));
  c->base = static_cast<char*>(p);
  c->bytes = layout.bytes;
  uint32_t first = 0;
  if (!c->header()->nranks.compare_exchange_strong(first, static_cast<uint32_t>(nranks)) && first != nranks) {
    return fail(OAR_ERROR_INVALID_ARGUMENT, call + "rank " + std::to_string(rank) + " was given " +
                                                std::to_string(nranks) + " ranks, another rank " +
                                                std::to_string(first));
  }
  int32_t none = 0;
  if (!c->cell(rank).pid.compare_exchange_strong(none, static_cast<int32_t>(getpid()))) {
    return fail(OAR_ERROR_INVALID_ARGUMENT, call + "rank " + std::to_string(rank) + " joined twice (pids " +
                                                std::to_string(none) + " and " + std::to_string(getpid()) + ")");
  }
  auto missing = [&] {
    std::vector<size_t> rs;
    for (size_t r = 0; r < nranks; ++r) {
      if (c->cell(r).pid.load(std::memory_order_acquire) == 0) rs.push_back(r);
    }
    return rs;
  };
  std::string e = wait_until(
      *c, "comm_init_rank", [&] { return missing().empty(); }, missing);
  shm_unlink(name.c_str());  // every rank has it mapped (or gave up): the name is no longer needed
  if (!e.empty()) return fail(OAR_ERROR_DEVICE, e);
  *out = reinterpret_cast<OAR_CCLComm>(new Handle{std::move(c)});
  return OAR_SUCCESS;
}

OAR_Status s_destroy_comm(OAR_CCLComm comm) {
  if (comm == nullptr) return fail(OAR_ERROR_INVALID_ARGUMENT, "sample ccl_destroy_comm: comm is null");
  delete reinterpret_cast<Handle*>(comm);  // queued work keeps the communicator until it ran
  return OAR_SUCCESS;
}

OAR_Status s_comm_abort(OAR_CCLComm comm) {
  Comm* c = comm_of(comm);
  if (c == nullptr) return fail(OAR_ERROR_INVALID_ARGUMENT, "sample ccl_comm_abort: comm is null");
  c->aborted.store(true, std::memory_order_relaxed);
  c->fail("sample ccl (rank " + std::to_string(c->rank) + "): the communicator was aborted (ccl_comm_abort)");
  return OAR_SUCCESS;
}

// The communicator's first failure (a dead or aborted peer, a timeout, a mismatched call),
// without waiting for anything: what the streams running its work will report.
OAR_Status s_comm_get_async_error(OAR_CCLComm comm) {
  Comm* c = comm_of(comm);
  if (c == nullptr) return fail(OAR_ERROR_INVALID_ARGUMENT, "sample ccl_comm_get_async_error: comm is null");
  if (std::string e = c->broken(); !e.empty()) return fail(OAR_ERROR_DEVICE, e);
  return OAR_SUCCESS;
}

OAR_Status s_all_reduce(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_ReduceOp op,
                        OAR_CCLComm comm, OAR_Stream stream) {
  return collective("all_reduce", kAllReduce, send, recv, count, count, count, dtype, op, 0, comm, stream);
}
OAR_Status s_broadcast(void* buf, size_t count, OAR_DataType dtype, size_t root, OAR_CCLComm comm, OAR_Stream stream) {
  return collective("broadcast", kBroadcast, nullptr, buf, count, 0, count, dtype, OAR_REDUCE_SUM, root, comm, stream);
}
OAR_Status s_reduce(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_ReduceOp op, size_t root,
                    OAR_CCLComm comm, OAR_Stream stream) {
  Comm* c = comm_of(comm);
  const bool is_root = c != nullptr && c->rank == root;  // recv is written on the root only
  return collective("reduce", kReduce, send, recv, count, count, is_root ? count : 0, dtype, op, root, comm, stream);
}
OAR_Status s_all_gather(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_CCLComm comm,
                        OAR_Stream stream) {
  const size_t n = comm_of(comm) != nullptr ? comm_of(comm)->nranks : 0;
  return collective("all_gather", kAllGather, send, recv, count, count, n * count, dtype, OAR_REDUCE_SUM, 0, comm,
                    stream);
}
OAR_Status s_reduce_scatter(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_ReduceOp op,
                            OAR_CCLComm comm, OAR_Stream stream) {
  const size_t n = comm_of(comm) != nullptr ? comm_of(comm)->nranks : 0;
  return collective("reduce_scatter", kReduceScatter, send, recv, count, n * count, count, dtype, op, 0, comm, stream);
}
OAR_Status s_all_to_all(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_CCLComm comm,
                        OAR_Stream stream) {
  const size_t n = comm_of(comm) != nullptr ? comm_of(comm)->nranks : 0;
  return collective("all_to_all", kAllToAll, send, recv, count, n * count, n * count, dtype, OAR_REDUCE_SUM, 0, comm,
                    stream);
}
OAR_Status s_send(const void* send, size_t count, OAR_DataType dtype, size_t peer, OAR_CCLComm comm,
                  OAR_Stream stream) {
  return point_to_point(true, send, count, dtype, peer, comm, stream);
}
OAR_Status s_recv(void* recv, size_t count, OAR_DataType dtype, size_t peer, OAR_CCLComm comm, OAR_Stream stream) {
  return point_to_point(false, recv, count, dtype, peer, comm, stream);
}
OAR_Status s_group_start() {
  ++t_group_depth;
  return OAR_SUCCESS;
}
OAR_Status s_group_end() {
  if (t_group_depth == 0) return fail(OAR_ERROR_INVALID_ARGUMENT, "sample ccl_group_end: no ccl_group_start before it");
  if (--t_group_depth == 0 && !t_group.empty()) launch(t_group_stream, std::exchange(t_group, {}));
  return OAR_SUCCESS;
}

}  // namespace

void fill_collectives(OAR_DeviceInterface* t) {
  t->ccl_get_unique_id_size = s_get_unique_id_size;
  t->ccl_get_unique_id = s_get_unique_id;
  t->ccl_comm_init_rank = s_comm_init_rank;
  t->ccl_destroy_comm = s_destroy_comm;
  t->ccl_all_reduce = s_all_reduce;
  t->ccl_broadcast = s_broadcast;
  t->ccl_reduce = s_reduce;
  t->ccl_all_gather = s_all_gather;
  t->ccl_reduce_scatter = s_reduce_scatter;
  t->ccl_all_to_all = s_all_to_all;
  t->ccl_send = s_send;
  t->ccl_recv = s_recv;
  t->ccl_group_start = s_group_start;
  t->ccl_group_end = s_group_end;
  t->ccl_comm_abort = s_comm_abort;
  t->ccl_comm_get_async_error = s_comm_get_async_error;
}

}  // namespace sample
