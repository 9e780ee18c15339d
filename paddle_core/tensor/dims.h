// Dims: a small inline array of int64 used for shapes and strides (no heap traffic
// on the op hot path). Rank is limited to kMaxRank, as in Paddle.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "paddle_core/base/errors.h"

namespace oar {

constexpr int kMaxRank = 9;

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v) { assign(v.begin(), v.end()); }
  explicit Dims(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }
  template <typename It> Dims(It b, It e) { assign(b, e); }
  static Dims filled(int n, int64_t v) {
    Dims d;
    d.resize(n, v);
    return d;
  }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* data() const { return d_; }
  int64_t* data() { return d_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + n_; }
  int64_t back() const { return d_[n_ - 1]; }

  void resize(int n, int64_t v = 0) {
    check_rank(n);
    for (int i = n_; i < n; ++i) d_[i] = v;
    n_ = n;
  }
  void push_back(int64_t v) {
    check_rank(n_ + 1);
    d_[n_++] = v;
  }
  void insert(int pos, int64_t v) {
    check_rank(n_ + 1);
    for (int i = n_; i > pos; --i) d_[i] = d_[i - 1];
    d_[pos] = v;
    ++n_;
  }
  void erase(int pos) {
    for (int i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
    --n_;
  }
  /// Product of all entries (1 for rank 0). It wraps modulo 2^64 (computed unsigned: a signed
  /// overflow is undefined behaviour) for a shape whose count passes int64; such shapes are
  /// metadata only (shape inference, stride-0 views) and checked::product rejects them where
  /// memory is requested or a kernel loops over the count.
  int64_t numel() const {
    uint64_t p = 1;
    for (int i = 0; i < n_; ++i) p *= static_cast<uint64_t>(d_[i]);
    return static_cast<int64_t>(p);
  }
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

  bool operator==(const Dims& o) const {
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
      if (d_[i] != o.d_[i]) return false;
    return true;
  }
  bool operator!=(const Dims& o) const { return !(*this == o); }

 private:
  template <typename It> void assign(It b, It e) {
    n_ = 0;
    for (; b != e; ++b) push_back(static_cast<int64_t>(*b));
  }
  static void check_rank(int n) {
    OAR_ENFORCE(n <= kMaxRank, Unimplemented, "tensors of rank ", n,
                " are not supported (the maximum rank is ", kMaxRank, ")");
  }
  int64_t d_[kMaxRank] = {};
  int n_ = 0;
};

inline std::ostream& operator<<(std::ostream& os, const Dims& d) {
  os << '[';
  for (int i = 0; i < d.size(); ++i) os << (i ? ", " : "") << d[i];
  return os << ']';
}

/// Row-major strides of a contiguous tensor of shape `dims`.
inline Dims contiguous_strides(const Dims& dims) {
  Dims s = Dims::filled(dims.size(), 1);
  int64_t acc = 1;
  for (int i = dims.size() - 1; i >= 0; --i) {
    s[i] = acc;
    // Only a 0-size tensor's product can pass int64 (a non-empty tensor's bytes are checked
    // first, e.g. [0, 2**62, 2**62]); it addresses no element, so its strides saturate
    // instead of overflowing (undefined behaviour, UBSan).
    if (__builtin_mul_overflow(acc, dims[i] > 0 ? dims[i] : 1, &acc)) acc = INT64_MAX;
  }
  return s;
}

/// Wraps a possibly negative axis into [0, rank); throws OutOfRange naming `op`.
inline int wrap_axis(int64_t axis, int rank, const char* op) {
  int64_t r = rank == 0 ? 1 : rank;
  OAR_ENFORCE(axis >= -r && axis < r, OutOfRange, op, ": axis ", axis,
              " is out of range for a tensor of rank ", rank, " (expected [", -r, ", ", r - 1,
              "])");
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

}  // namespace oar
