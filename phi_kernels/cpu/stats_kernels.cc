// Kernels of stats.yaml's reductions: all/any, var/std, logsumexp, p_norm (the scans are in
// scan_kernels.cc). Inputs are viewed as [outer, reduce, inner] (reduce.h); float/half
// accumulate in double for var/std, rows run in parallel, and exp sums use SLEEF vectors.
#include <cmath>
#include <limits>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/cpu/reduce.h"
#include "phi_kernels/cpu/vec_math.h"
#include "phi_kernels/funcs/softmax_rows.h"

namespace oar::phi {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

// Calls fn(o, i) for every kept position (outer x inner), in parallel.
template <typename Fn>
void for_each_kept(const ReduceShape& rs, Fn&& fn) {
  const int64_t cost = rs.outer * rs.reduce * rs.inner;
  parallel_for(
      rs.outer * rs.inner,
      [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) fn(t / rs.inner, t % rs.inner);
      },
      cost);
}

// out[k] = sum over r of f(x[a, r, i], k), k = a * inner + i, in double, for a reduction over a
// middle axis (inner > 1): rows are walked in memory order into per-column sums, where a walk
// down each column touches one cache line per element (norm of [1024, 1024] over axis 0 took
// 6.6 ms against 0.18 over axis 1). Split over the pool by columns.
template <typename T, typename F>
void column_sums(const ReduceShape& rs, const T* p, double* out, F f) {
  const int64_t inner = rs.inner, R = rs.reduce;
  parallel_for(
      rs.outer * inner,
      [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e;) {
      const int64_t a = t / inner, i0 = t % inner, i1 = std::min(inner, i0 + (e - t));
      double* acc = out + a * inner;
      std::fill(acc + i0, acc + i1, 0.0);
      for (int64_t r = 0; r < R; ++r) {
        const T* row = p + (a * R + r) * inner;
        for (int64_t i = i0; i < i1; ++i)
          acc[i] += f(static_cast<double>(static_cast<OpMath<T>>(row[i])), a * inner + i);
      }
      t += i1 - i0;
    }
      },
      rs.outer * R * inner);
}

// ---- all / any
template <typename T, bool kAll>
void BoolReduce(const DenseTensor& x, const std::vector<int64_t>& axis, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), kAll ? "all" : "any");
  bool* o = out->alloc<bool>();
  if (out->numel() == 0) return;
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* p = rs.data.data<T>();
  for_each_kept(rs, [&](int64_t a, int64_t i) {
    bool r = kAll;
    for (int64_t k = 0; k < rs.reduce; ++k) {
      const bool v = static_cast<OpMath<T>>(p[(a * rs.reduce + k) * rs.inner + i]) != OpMath<T>(0);
      if (kAll ? !v : v) {
        r = !kAll;
        break;
      }
    }
    o[a * rs.inner + i] = r;
  });
}
template <typename T>
void AllKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool, DenseTensor* out) {
  BoolReduce<T, true>(x, axis, out);
}
template <typename T>
void AnyKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool, DenseTensor* out) {
  BoolReduce<T, false>(x, axis, out);
}

// Sum over a row of f(x) in double; long single rows split into parallel chunks.
template <typename T, typename F>
double row_sum(const T* p, int64_t n, int64_t stride, F f, bool parallel) {
  auto part = [&](int64_t b, int64_t e) {
    double acc = 0;
    if (stride == 1) {
#pragma omp simd reduction(+ : acc)
      for (int64_t r = b; r < e; ++r) acc += f(static_cast<double>(static_cast<OpMath<T>>(p[r])));
    } else {
      for (int64_t r = b; r < e; ++r) {
        acc += f(static_cast<double>(static_cast<OpMath<T>>(p[r * stride])));
      }
    }
    return acc;
  };
  if (!parallel || n < 4 * kParallelGrain) return part(0, n);
  double partial[64] = {};
  const int64_t chunks = std::min<int64_t>(64, n / kParallelGrain);
  const int64_t len = (n + chunks - 1) / chunks;
  parallel_for(
      chunks,
      [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) partial[c] = part(c * len, std::min(n, (c + 1) * len));
      },
      n);
  double s = 0;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c];
  return s;
}

#if OAR_VEC
// sum(x) and sum((x - mean)^2) of a contiguous float/double row, in double: 4 accumulators,
// then single vectors and the tail through masked loads (rows of 49 added their last
// 17 elements one at a time: a 2-norm of 4K such rows took 3x torch's time).
template <typename T>
double vec_sum(const T* p, int64_t n, double mean, bool squares) {
  constexpr int L = vec::kD;
  vec::D a[4] = {vec::set1(0.0), vec::set1(0.0), vec::set1(0.0), vec::set1(0.0)};
  const vec::D m = vec::set1(mean);
  auto add = [&](vec::D* acc, vec::D v) {
    if (squares) {
      v = vec::sub(v, m);
      *acc = vec::fmadd(v, v, *acc);
    } else {
      *acc = vec::add(*acc, v);
    }
  };
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    for (int k = 0; k < 4; ++k) add(&a[k], vec::widen(p + i + k * L));
  }
  for (; i + L <= n; i += L) add(&a[0], vec::widen(p + i));
  if (i < n) {  // masked loads (a tail stored to a buffer and loaded whole stalled the loads)
    static constexpr double kOnes[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    vec::D v = vec::widen_first(p + i, n - i);
    if (squares) {  // the padding's lanes must add 0, not mean^2
      v = vec::mul(vec::sub(v, m), vec::load_first(kOnes, n - i));
      a[1] = vec::fmadd(v, v, a[1]);
    } else {
      a[1] = vec::add(a[1], v);
    }
  }
  return vec::hsum(vec::add(vec::add(a[0], a[1]), vec::add(a[2], a[3])));
}
// vec_sum of one contiguous row, split into parallel chunks when it is the only row (`split`).
template <typename T>
double row_vec_sum(const T* row, int64_t R, double mean, bool sq, bool split) {
  if (!split || R < 4 * kParallelGrain) return vec_sum(row, R, mean, sq);
  double part[64] = {};
  const int64_t chunks = std::min<int64_t>(64, R / kParallelGrain), len = (R + chunks - 1) / chunks;
  parallel_for(
      chunks,
      [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) part[c] = vec_sum(row + c * len, std::min(R, (c + 1) * len) - c * len, mean, sq);
      },
      R);
  double t = 0;
  for (int64_t c = 0; c < chunks; ++c) t += part[c];
  return t;
}
#endif

// ---- var / std: two passes (mean, then squared deviations) in double
template <typename T, bool kStd>
void VarStd(const DenseTensor& x, const std::vector<int64_t>& axis, bool unbiased, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), kStd ? "std" : "var");
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* p = rs.data.data<T>();
  const int64_t R = rs.reduce;
  const double denom = static_cast<double>(R) - (unbiased ? 1.0 : 0.0);
  const bool one_row = rs.outer * rs.inner == 1;
#if OAR_VEC
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (rs.inner == 1) {  // contiguous rows (single long rows split into parallel chunks)
      auto chunked = [&](const T* row, double mean, bool sq) { return row_vec_sum(row, R, mean, sq, one_row); };
      parallel_for(
          rs.outer,
          [&](int64_t a0, int64_t a1) {
        for (int64_t a = a0; a < a1; ++a) {
          const T* row = p + a * R;
          const double mean = chunked(row, 0.0, false) / R;
          const double ss = chunked(row, mean, true);
          const double var = denom > 0 ? ss / denom : std::numeric_limits<double>::quiet_NaN();
          o[a] = static_cast<T>(kStd ? std::sqrt(var) : var);
        }
          },
          one_row ? 0 : rs.outer * R);
      return;
    }
  }
#endif
  if (rs.inner > 1) {  // two passes in row order: the column means, then the squared deviations
    std::vector<double> mean(static_cast<size_t>(out->numel())), ss(mean.size());
    column_sums(rs, p, mean.data(), [](double v, int64_t) { return v; });
    for (double& m : mean) m /= static_cast<double>(R);
    column_sums(rs, p, ss.data(), [&mean](double v, int64_t k) { return (v - mean[k]) * (v - mean[k]); });
    for (size_t k = 0; k < ss.size(); ++k) {
      const double var = denom > 0 ? ss[k] / denom : std::numeric_limits<double>::quiet_NaN();
      o[k] = static_cast<T>(static_cast<OpMath<T>>(kStd ? std::sqrt(var) : var));
    }
    return;
  }
  for_each_kept(rs, [&](int64_t a, int64_t i) {
    const T* row = p + a * R * rs.inner + i;
    const double mean = row_sum(
                            row, R, rs.inner, [](double v) { return v; }, one_row) /
                        R;
    const double ss = row_sum(
        row, R, rs.inner, [mean](double v) { return (v - mean) * (v - mean); }, one_row);
    const double var = denom > 0 ? ss / denom : std::numeric_limits<double>::quiet_NaN();
    o[a * rs.inner + i] = static_cast<T>(static_cast<OpMath<T>>(kStd ? std::sqrt(var) : var));
  });
}
template <typename T>
void VarKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool unbiased, bool,
               DenseTensor* out) {
  VarStd<T, false>(x, axis, unbiased, out);
}
template <typename T>
void StdKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool unbiased, bool,
               DenseTensor* out) {
  VarStd<T, true>(x, axis, unbiased, out);
}

// ---- logsumexp: max, then sum of exp(x - max) on contiguous float/double rows
// (vec::exp_nonpos, 0.89 ulp and twice SLEEF's speed, for float; SLEEF for double)
template <typename M>
M sum_exp_shifted(const M* p, int64_t n, M m) {
#if OAR_VEC
  using V = typename vec::Of<M>::type;
  constexpr int L = vec::Of<M>::lanes;
  auto vexp = [](V v) {
    if constexpr (std::is_same_v<M, float>)
      return vec::exp_nonpos(v);
    else
      return OAR_SLEEF_D(exp, u10)(v);
  };
  V acc0 = vec::set1(M(0)), acc1 = acc0;
  const V vm = vec::set1(m);
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    acc0 = vec::add(acc0, vexp(vec::sub(vec::load(p + i), vm)));
    acc1 = vec::add(acc1, vexp(vec::sub(vec::load(p + i + L), vm)));
  }
  for (; i + L <= n; i += L) acc0 = vec::add(acc0, vexp(vec::sub(vec::load(p + i), vm)));
  if (i < n) {  // pad with -inf: exp(-inf) = 0
    alignas(64) M buf[L];
    for (int k = 0; k < L; ++k) buf[k] = i + k < n ? p[i + k] : -std::numeric_limits<M>::infinity();
    acc1 = vec::add(acc1, vexp(vec::sub(vec::load(buf), vm)));
  }
  return vec::hsum(vec::add(acc0, acc1));
#else
  M s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(p[i] - m);
  return s;
#endif
}

template <typename T>
void LogsumexpKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis, bool,
                     DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "logsumexp");
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* p = rs.data.data<T>();
  using M = OpMath<T>;
  const int64_t R = rs.reduce;
  const M ninf = -std::numeric_limits<M>::infinity();
  if (rs.inner == 1 && std::is_same_v<T, M>) {  // contiguous float/double rows
    const M* pm = reinterpret_cast<const M*>(p);
    auto one = [&](const M* row, int64_t n) -> M {
      // row_max skips NaN; a finite max carries a NaN into the sum (exp(NaN - m) is NaN),
      // so only an infinite max needs the scan for one. (A scalar max-and-NaN loop here ran
      // at one element per vmaxss latency: 2x torch on Intel; Note [Scalar max loops].)
      const M m = row_max<true>(Row<M>{row, n, 1});
      if (std::isinf(m)) {  // all -inf or NaN (or empty), or a +inf present
        for (int64_t r = 0; r < n; ++r)
          if (row[r] != row[r]) return std::numeric_limits<M>::quiet_NaN();
        return m;
      }
      return m + std::log(sum_exp_shifted(row, n, m));
    };
    if (rs.outer == 1 && R >= 4 * kParallelGrain) {  // one long row: per-chunk max and sum
      const int64_t chunks = std::min<int64_t>(64, R / kParallelGrain), len = (R + chunks - 1) / chunks;
      M part[64];
      parallel_for(
          chunks,
          [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t b = c * len;
          part[c] = one(pm + b, std::min(R, b + len) - b);
        }
          },
          R);
      M m = ninf;
      for (int64_t c = 0; c < chunks; ++c) m = std::isnan(part[c]) || part[c] > m ? part[c] : m;
      if (std::isnan(m) || std::isinf(m)) {
        o[0] = static_cast<T>(m);
        return;
      }
      double s = 0;
      for (int64_t c = 0; c < chunks; ++c) s += std::exp(static_cast<double>(part[c] - m));
      o[0] = static_cast<T>(m + static_cast<M>(std::log(s)));
      return;
    }
    parallel_for(
        rs.outer,
        [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) o[a] = static_cast<T>(one(pm + a * R, R));
        },
        rs.outer * R);
    return;
  }
  for_each_kept(rs, [&](int64_t a, int64_t i) {
    const T* row = p + a * R * rs.inner + i;
    M m = ninf;
    bool nan = false;
    for (int64_t r = 0; r < R; ++r) {
      const M v = static_cast<M>(row[r * rs.inner]);
      m = v > m ? v : m;
      nan = nan || v != v;
    }
    M res;
    if (nan) {
      res = std::numeric_limits<M>::quiet_NaN();
    } else if (std::isinf(m)) {
      res = m;
    } else {
      double s = 0;
      for (int64_t r = 0; r < R; ++r) s += std::exp(static_cast<double>(static_cast<M>(row[r * rs.inner]) - m));
      res = m + static_cast<M>(std::log(s));
    }
    o[a * rs.inner + i] = static_cast<T>(res);
  });
}

// ---- p_norm: (sum |x|^p)^(1/p); p = inf / -inf: max / min |x|; p = 0: count of nonzeros
template <typename T>
void PNormKernel(const DeviceContext&, const DenseTensor& x, double p, const std::vector<int64_t>& axis, bool,
                 DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "norm");
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* data = rs.data.data<T>();
  const int64_t R = rs.reduce;
  const bool one_row = rs.outer * rs.inner == 1;
#if OAR_VEC
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (p == 2 && rs.inner == 1) {  // contiguous rows: var's vector sum of squares, in double
      parallel_for(
          rs.outer,
          [&](int64_t a0, int64_t a1) {
        for (int64_t a = a0; a < a1; ++a)
          o[a] = static_cast<T>(std::sqrt(row_vec_sum(data + a * R, R, 0.0, true, one_row)));
          },
          one_row ? 0 : rs.outer * R);
      return;
    }
  }
#endif
  if (rs.inner > 1 && !std::isinf(p)) {  // sums of |x|^p in row order (column_sums)
    std::vector<double> acc(static_cast<size_t>(out->numel()));
    if (p == 0) {
      column_sums(rs, data, acc.data(), [](double v, int64_t) { return v != 0 ? 1.0 : 0.0; });
    } else if (p == 1) {
      column_sums(rs, data, acc.data(), [](double v, int64_t) { return std::abs(v); });
    } else if (p == 2) {
      column_sums(rs, data, acc.data(), [](double v, int64_t) { return v * v; });
    } else {
      column_sums(rs, data, acc.data(), [p](double v, int64_t) { return std::pow(std::abs(v), p); });
    }
    for (size_t k = 0; k < acc.size(); ++k) {
      const double r = p == 0 || p == 1 ? acc[k] : p == 2 ? std::sqrt(acc[k]) : std::pow(acc[k], 1.0 / p);
      o[k] = static_cast<T>(static_cast<OpMath<T>>(r));
    }
    return;
  }
  for_each_kept(rs, [&](int64_t a, int64_t i) {
    const T* row = data + a * R * rs.inner + i;
    double r;
    if (std::isinf(p)) {
      r = p > 0 ? 0.0 : std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < R; ++k) {
        const double v = std::abs(static_cast<double>(static_cast<OpMath<T>>(row[k * rs.inner])));
        r = v != v ? v : (p > 0 ? std::max(r, v) : std::min(r, v));
        if (r != r) break;
      }
    } else if (p == 0) {
      r = row_sum(
          row, R, rs.inner, [](double v) { return v != 0 ? 1.0 : 0.0; }, one_row);
    } else if (p == 1) {
      r = row_sum(
          row, R, rs.inner, [](double v) { return std::abs(v); }, one_row);
    } else if (p == 2) {
      r = std::sqrt(row_sum(
          row, R, rs.inner, [](double v) { return v * v; }, one_row));
    } else {
      r = std::pow(row_sum(
                       row, R, rs.inner, [p](double v) { return std::pow(std::abs(v), p); }, one_row),
                   1.0 / p);
    }
    o[a * rs.inner + i] = static_cast<T>(static_cast<OpMath<T>>(r));
  });
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(all, CPU, AllKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(any, CPU, AnyKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(var, CPU, VarKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(std_dev, CPU, StdKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(logsumexp, CPU, LogsumexpKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(p_norm, CPU, PNormKernel, OAR_FLOAT_TYPES)
