// TcpRing: the Gloo backend's all-reduce over direct TCP connections between a group's
// members, run entirely on the calling thread (Note [All-reduce transport] in
// docs/notes/distributed.md says why Oar does not use Gloo's all-reduce).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace oar::dist {

class Store;

/// c[i] = a[i] op b[i] for n elements; c may alias a or b.
using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

class TcpRing {
 public:
  /// Connects every pair of members (a full mesh: rank r connects to the ranks below it and
  /// accepts the ranks above) through `store` keys under `prefix`. Listens on `host`.
  TcpRing(Store& store, const std::string& prefix, int rank, int size, const std::string& host,
          std::chrono::milliseconds timeout);
  ~TcpRing();
  TcpRing(const TcpRing&) = delete;
  TcpRing& operator=(const TcpRing&) = delete;

  /// In place: `data` (bytes long, elements of elem_size) ends as the reduction of every
  /// member's data, bitwise equal on every member. A peer that closes its connection, or no
  /// progress within the timeout, throws CommError naming `op` and the peer.
  void all_reduce(void* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op);
  /// In place: member r's chunk r of `data` (chunk_offset/chunk_length, in elements) ends as
  /// the reduction of every member's chunk r; the other chunks are left partly reduced.
  void reduce_scatter(void* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op);

  /// Chunk c of `count` elements split over the members: [count c / n, count (c + 1) / n).
  size_t chunk_offset(size_t count, int c) const { return count * static_cast<size_t>(c) / size_; }
  size_t chunk_length(size_t count, int c) const { return chunk_offset(count, c + 1) - chunk_offset(count, c); }

 private:
  /// Sends [send, send + send_len) to rank `to` while receiving recv_len bytes from rank
  /// `from`: into `recv` directly, or (reduce set) through the first ring_cap bytes of the
  /// scratch (a multiple of elem_size), each received piece reduced into `recv` as it lands.
  void exchange(int to, const char* send, size_t send_len, int from, char* recv, size_t recv_len,
                const ReduceFn* reduce, size_t elem_size, size_t ring_cap, bool received_first, const char* op);
  void all_reduce_direct(char* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op);
  void all_reduce_ring(char* data, size_t bytes, size_t elem_size, const ReduceFn& fn, const char* op);
  [[noreturn]] void fail(const char* op, int peer, const std::string& why, bool timed_out) const;

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::vector<int> fds_;       // fds_[peer], -1 for this rank
  std::vector<char> scratch_;  // kept across calls: fresh memory costs a page fault per 4 KiB
};

}  // namespace oar::dist
