// Note [All-reduce transport] (docs/notes/distributed.md): one thread per rank does the
// sends, the receives and the reduction, over nonblocking sockets and poll(2).
#include "distributed/collective/tcp_ring.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "distributed/collective/store.h"
#include "distributed/collective/tcp_store.h"

namespace oar::dist {
namespace {

using Clock = std::chrono::steady_clock;

// At most this many bytes received from all peers together: one exchange with each peer,
// then the reduction (a latency of one message). Above it, the ring (reduce-scatter, then
// all-gather: 2 (n - 1) messages of 1/n of the data each, the reduction overlapping them).
constexpr size_t kDirectLimit = size_t(1) << 20;
// The ring's receive staging: received bytes wait here until reduced into the output.
constexpr size_t kRingCap = size_t(1) << 20;
// Reduce once this much has arrived (or nothing else can move): cache-sized pieces.
constexpr size_t kReduceGrain = size_t(64) << 10;
constexpr uint32_t kMagic = 0x4f524e47;  // "ORNG": the first bytes a member sends on connecting

std::string errno_text(int e) { return std::strerror(e); }

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// Blocking I/O of a small header during setup, bounded by the deadline.
bool io_all(int fd, void* buf, size_t n, bool out, Clock::time_point deadline) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(out ? POLLOUT : POLLIN), 0};
    if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0) return false;
    ssize_t k = out ? ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : ::recv(fd, p, n, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

void set_options(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

TcpRing::TcpRing(Store& store, const std::string& prefix, int rank, int size, const std::string& host,
                 std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout), fds_(size, -1) {
  if (size == 1) return;
  const char* what = "all-reduce connections";
  int lfd = -1;
  try {
    sockaddr_in addr = resolve_ipv4(host, 0, what);
    lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(addr);
    if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(lfd, size) != 0 ||
        ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw CommError(detail::str_cat(what, ": cannot listen on ", host, ": ", errno_text(errno)), false);
    }
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
    store.set(prefix + std::to_string(rank), detail::str_cat(ip, ":", ntohs(addr.sin_port)));
    const auto deadline = Clock::now() + timeout;
    // Lower ranks listen before they publish: connecting needs no retry.
    for (int peer = 0; peer < rank; ++peer) {
      std::string where = store.get(prefix + std::to_string(peer), std::chrono::milliseconds(remaining_ms(deadline)));
      size_t colon = where.rfind(':');
      sockaddr_in to = resolve_ipv4(where.substr(0, colon), std::stoi(where.substr(colon + 1)), what);
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      fds_[peer] = fd;
      uint32_t hello[2] = {kMagic, static_cast<uint32_t>(rank)};
      if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
        throw CommError(
            detail::str_cat(what, ": cannot connect to rank ", peer, " at ", where, ": ", errno_text(errno)), false);
      }
      set_options(fd);
      if (!io_all(fd, hello, sizeof(hello), true, deadline)) {
        throw CommError(detail::str_cat(what, ": rank ", peer, " at ", where, " did not take the connection"), true);
      }
    }
    for (int accepted = rank + 1; accepted < size; ++accepted) {
      pollfd pfd{lfd, POLLIN, 0};
      if (::poll(&pfd, 1, remaining_ms(deadline)) <= 0) {
        std::vector<int> missing;
        for (int r = rank + 1; r < size; ++r) {
          if (fds_[r] < 0) missing.push_back(r);
        }
        throw CommError(
            detail::str_cat(what, ": ranks ", missing, " did not connect within ", timeout.count() / 1000.0, " s"),
            true);
      }
      int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) throw CommError(detail::str_cat(what, ": accept: ", errno_text(errno)), false);
      set_options(fd);
      uint32_t hello[2] = {0, 0};
      if (!io_all(fd, hello, sizeof(hello), false, deadline) || hello[0] != kMagic || hello[1] <= uint32_t(rank) ||
          hello[1] >= uint32_t(size) || fds_[hello[1]] >= 0) {
        ::close(fd);
        throw CommError(detail::str_cat(what, ": an unexpected connection on ", host, " (not a member of this group)"),
                        false);
      }
      fds_[hello[1]] = fd;
    }
    ::close(lfd);
  } catch (...) {
    if (lfd >= 0) ::close(lfd);
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    throw;
  }
}

TcpRing::~TcpRing() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void TcpRing::fail(const char* op, int peer, const std::string& why, bool timed_out) const {
  throw CommError(detail::str_cat(op, ": ", why, " (group rank ", peer, ")"), timed_out);
}

void TcpRing::exchange(int to, const char* send, size_t send_len, int from, char* recv, size_t recv_len,
                       const ReduceFn* reduce, size_t elem_size, size_t ring_cap, bool received_first, const char* op) {
  const int sfd = fds_[to], rfd = fds_[from];
  // With `reduce`, bytes land in the scratch ring [0, cap) and are reduced into recv;
  // otherwise straight into recv.
  const size_t cap = reduce ? std::min(ring_cap, recv_len) : recv_len;
  char* land = reduce ? scratch_.data() : recv;
  size_t sent = 0, got = 0, done = 0;  // done: bytes reduced (== got without reduce)
  auto deadline = Clock::now() + timeout_;
  while (sent < send_len || done < recv_len) {
    bool moved = false;
    if (sent < send_len) {
      ssize_t k = ::send(sfd, send + sent, send_len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) {
        sent += static_cast<size_t>(k);
        moved = true;
      } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        fail(op, to, "sending failed: " + errno_text(errno) + " (did the peer exit?)", false);
      }
    }
    const size_t room = cap - (got - done);
    if (got < recv_len && room > 0) {
      const size_t pos = reduce ? got % cap : got;
      const size_t want = std::min({recv_len - got, room, cap - pos});
      ssize_t k = ::recv(rfd, land + pos, want, MSG_DONTWAIT);
      if (k > 0) {
        got += static_cast<size_t>(k);
        moved = true;
      } else if (k == 0) {
        fail(op, from, "the peer closed its connection (did it exit?)", false);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        fail(op, from, "receiving failed: " + errno_text(errno), false);
      }
    }
    if (!reduce) {
      done = got;
    } else {
      size_t ready = (got - done) / elem_size * elem_size;
      if (ready > 0 && (ready >= kReduceGrain || got == recv_len || !moved)) {
        while (ready > 0) {  // cap and done are multiples of elem_size: pieces hold whole elements
          const size_t pos = done % cap, len = std::min(ready, cap - pos);
          char* out = recv + done;
          const char* in = land + pos;
          (*reduce)(out, received_first ? in : out, received_first ? out : in, len / elem_size);
          done += len;
          ready -= len;
        }
        moved = true;
      }
    }
    if (moved) {
      deadline = Clock::now() + timeout_;
      continue;
    }
    pollfd pfds[2];
    nfds_t n = 0;
    short rev = got < recv_len ? POLLIN : 0, sev = sent < send_len ? POLLOUT : 0;
    if (sfd == rfd) {
      pfds[n++] = {sfd, static_cast<short>(rev | sev), 0};
    } else {
      if (sev) pfds[n++] = {sfd, sev, 0};
      if (rev) pfds[n++] = {rfd, rev, 0};
    }
    int rc = ::poll(pfds, n, remaining_ms(deadline));
    if (rc < 0 && errno != EINTR) fail(op, from, "poll failed: " + errno_text(errno), false);
    if (rc == 0) {
      const int peer = got < recv_len ? from : to;
      fail(op, peer,
           detail::str_cat("no progress for ", timeout_.count() / 1000.0, " s (", got, " of ", recv_len,
                           " bytes received, ", sent, " of ", send_len, " sent): timed out"),
           true);
    }
  }
}

void TcpRing::all_reduce(void* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op) {
  if (size_ == 1 || bytes == 0) return;
  char* p = static_cast<char*>(data);
  if (bytes * (size_ - 1) <= kDirectLimit) {
    all_reduce_direct(p, bytes, elem_size, fn, op);
  } else {
    all_reduce_ring(p, bytes, elem_size, fn, op);
  }
}

// Every member sends its data to every other and reduces all of them in rank order
// (x0 op x1 op ...), so every member computes the same bits.
void TcpRing::all_reduce_direct(char* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op) {
  const int n = size_;
  const bool keep_own = rank_ >= 2;  // the output is written before this rank's term is used
  const size_t need = bytes * (n - 1 + (keep_own ? 1 : 0));
  if (scratch_.size() < need) scratch_.resize(need);
  auto slot = [&](int r) { return scratch_.data() + bytes * (r < rank_ ? r : r - 1); };
  for (int step = 1; step < n; ++step) {
    const int to = (rank_ + step) % n, from = (rank_ - step + n) % n;
    exchange(to, data, bytes, from, slot(from), bytes, nullptr, elem_size, 0, false, op);
  }
  char* own = data;
  if (keep_own) {
    own = scratch_.data() + bytes * (n - 1);
    std::memcpy(own, data, bytes);
  }
  const size_t count = bytes / elem_size;
  const char* acc = rank_ == 0 ? data : slot(0);
  for (int r = 1; r < n; ++r) {
    fn(data, acc, r == rank_ ? own : slot(r), count);
    acc = data;
  }
}

// Ring reduce-scatter, then ring all-gather. Chunk c (elements [count c / n, count (c+1) / n))
// is reduced along the ring and finished on member c, which passes it on: every member ends
// with the same bits.
void TcpRing::all_reduce_ring(char* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op) {
  reduce_scatter(data, bytes, elem_size, fn, op);
  const int n = size_, next = (rank_ + 1) % n, prev = (rank_ - 1 + n) % n;
  const size_t count = bytes / elem_size;
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = (rank_ - s + n) % n, recv_c = (rank_ - s - 1 + n) % n;
    exchange(next, data + chunk_offset(count, send_c) * elem_size, chunk_length(count, send_c) * elem_size, prev,
             data + chunk_offset(count, recv_c) * elem_size, chunk_length(count, recv_c) * elem_size, nullptr,
             elem_size, 0, false, op);
  }
}

void TcpRing::reduce_scatter(void* data_, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op) {
  if (size_ == 1 || bytes == 0) return;
  char* data = static_cast<char*>(data_);
  const int n = size_, next = (rank_ + 1) % n, prev = (rank_ - 1 + n) % n;
  const size_t count = bytes / elem_size;
  const size_t cap = std::max(kRingCap / elem_size, size_t(1)) * elem_size;
  if (scratch_.size() < cap) scratch_.resize(cap);
  // Step s sends the chunk this member finished reducing at step s - 1; after n - 1 steps
  // it holds chunk `rank` reduced over every member.
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = (rank_ - s - 1 + 2 * n) % n, recv_c = (rank_ - s - 2 + 2 * n) % n;
    exchange(next, data + chunk_offset(count, send_c) * elem_size, chunk_length(count, send_c) * elem_size, prev,
             data + chunk_offset(count, recv_c) * elem_size, chunk_length(count, recv_c) * elem_size, &fn, elem_size,
             cap, prev < rank_, op);
  }
}

}  // namespace oar::dist
