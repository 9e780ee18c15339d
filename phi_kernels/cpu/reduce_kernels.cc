// Reduction kernels: sum, mean, prod, max, min, argmax, argmin, sum_to.
#include <cmath>
#include <limits>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/include/reduce.h"

namespace oar::phi {

ReduceShape make_reduce_shape(const DenseTensor& x, const std::vector<int>& axes) {
  ReduceShape rs;
  const int r = x.rank();
  bool block = true;
  for (size_t k = 1; k < axes.size(); ++k) block = block && axes[k] == axes[k - 1] + 1;
  if (axes.empty()) {
    rs.data = contiguous(x);
    rs.outer = x.numel();
    return rs;
  }
  if (block) {
    rs.data = contiguous(x);
    for (int i = 0; i < axes.front(); ++i) rs.outer *= x.dims()[i];
    for (int i = axes.front(); i <= axes.back(); ++i) rs.reduce *= x.dims()[i];
    for (int i = axes.back() + 1; i < r; ++i) rs.inner *= x.dims()[i];
    return rs;
  }
  // Permute kept axes first, reduced axes last, then make it contiguous.
  Dims d, s;
  for (int i = 0; i < r; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      d.push_back(x.dims()[i]);
      s.push_back(x.strides()[i]);
      rs.outer *= x.dims()[i];
    }
  }
  for (int a : axes) {
    d.push_back(x.dims()[a]);
    s.push_back(x.strides()[a]);
    rs.reduce *= x.dims()[a];
  }
  DenseTensor v = x;
  v.set_view(d, s, x.offset());
  rs.data = contiguous(v);
  return rs;
}

namespace {

template <typename T> using SumAcc = std::conditional_t<
    std::is_integral_v<T>, int64_t, std::conditional_t<std::is_same_v<T, double>, double, float>>;

template <typename T>
void SumKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis,
               DataType, bool, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "sum");
  visit_dtype(out->dtype(), "sum", [&](auto tag) {
    using Out = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<Out, bool>) {
      sum_kernel<T, SumAcc<Out>, Out>(x, axes, out, false);
    } else if constexpr (std::is_same_v<Out, bool>) {
      sum_kernel<T, int64_t, Out>(x, axes, out, false);
    } else {
      sum_kernel<T, SumAcc<Out>, Out>(x, axes, out, false);
    }
  });
}

template <typename T>
void MeanKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis,
                bool, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "mean");
  sum_kernel<T, SumAcc<T>, T>(x, axes, out, true);
}

template <typename T>
void SumToKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& shape,
                 DenseTensor* out) {
  std::vector<int> axes;
  const int lead = x.rank() - static_cast<int>(shape.size());
  for (int i = 0; i < x.rank(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && x.dims()[i] != 1)) axes.push_back(i);
  }
  if (axes.empty()) {
    out->alloc();
    copy_into(x, out);
    return;
  }
  sum_kernel<T, SumAcc<T>, T>(x, axes, out, false);
}

template <typename T>
void ProdKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis,
                bool, DataType, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), "prod");
  visit_dtype(out->dtype(), "prod", [&](auto tag) {
    using Out = typename decltype(tag)::type;
    using Acc = SumAcc<Out>;  // prod(x, dtype=float64) multiplies in float64 (Paddle casts first)
    reduce_kernel<T, Acc, Out>(x, axes, out, Acc(1), [](Acc a, Acc b) { return a * b; },
                               [](Acc a, int64_t) { return a; });
  });
}

template <typename T, bool kMax>
void MinMaxKernel(const DeviceContext&, const DenseTensor& x, const std::vector<int64_t>& axis,
                  bool, DenseTensor* out) {
  auto axes = meta::reduce_axes(axis, x.rank(), kMax ? "max" : "min");
  for (int a : axes) {
    OAR_ENFORCE(x.dims()[a] > 0, InvalidArgument, kMax ? "max" : "min",
                ": cannot reduce over axis ", a, " of size 0 (input shape ", x.dims(), ")");
  }
  using M = OpMath<T>;
  M init;
  if constexpr (std::is_floating_point_v<M>) {
    init = kMax ? -std::numeric_limits<M>::infinity() : std::numeric_limits<M>::infinity();
  } else {
    init = kMax ? std::numeric_limits<M>::lowest() : std::numeric_limits<M>::max();
  }
  reduce_kernel<T, M, T>(
      x, axes, out, init,
      [](M a, M b) {
        if constexpr (std::is_floating_point_v<M>) {
          if (a != a || b != b) return std::numeric_limits<M>::quiet_NaN();
        }
        return kMax ? (b > a ? b : a) : (b < a ? b : a);
      },
      [](M a, int64_t) { return a; });
}
template <typename T>
void MaxKernel(const DeviceContext& c, const DenseTensor& x, const std::vector<int64_t>& axis,
               bool k, DenseTensor* out) {
  MinMaxKernel<T, true>(c, x, axis, k, out);
}
template <typename T>
void MinKernel(const DeviceContext& c, const DenseTensor& x, const std::vector<int64_t>& axis,
               bool k, DenseTensor* out) {
  MinMaxKernel<T, false>(c, x, axis, k, out);
}

template <typename T, bool kMax>
void ArgKernel(const DenseTensor& x, int64_t axis, bool flatten, DenseTensor* out) {
  std::vector<int> axes;
  if (flatten || x.rank() == 0) {
    for (int i = 0; i < x.rank(); ++i) axes.push_back(i);
  } else {
    axes.push_back(wrap_axis(axis, x.rank(), "argmax"));
  }
  ReduceShape rs = make_reduce_shape(x, axes);
  const T* p = rs.data.data<T>();
  using M = OpMath<T>;
  std::vector<int64_t> res(rs.outer * rs.inner);
  for (int64_t a = 0; a < rs.outer; ++a) {
    for (int64_t i = 0; i < rs.inner; ++i) {
      int64_t best = 0;
      M bv = static_cast<M>(p[a * rs.reduce * rs.inner + i]);
      for (int64_t r = 1; r < rs.reduce; ++r) {
        M v = static_cast<M>(p[(a * rs.reduce + r) * rs.inner + i]);
        bool better = kMax ? v > bv : v < bv;
        if constexpr (std::is_floating_point_v<M>) better = better || (v != v && bv == bv);
        if (better) {
          bv = v;
          best = r;
        }
      }
      res[a * rs.inner + i] = best;
    }
  }
  visit_dtype(out->dtype(), "argmax", [&](auto tag) {
    using Out = typename decltype(tag)::type;
    Out* o = out->alloc<Out>();
    for (size_t k = 0; k < res.size(); ++k) o[k] = static_cast<Out>(res[k]);
  });
}
template <typename T>
void ArgMaxKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool, bool flatten,
                  DataType, DenseTensor* out) {
  ArgKernel<T, true>(x, axis, flatten, out);
}
template <typename T>
void ArgMinKernel(const DeviceContext&, const DenseTensor& x, int64_t axis, bool, bool flatten,
                  DataType, DenseTensor* out) {
  ArgKernel<T, false>(x, axis, flatten, out);
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(sum, CPU, SumKernel, OAR_ALL_TYPES)
OAR_REGISTER_KERNEL(mean, CPU, MeanKernel, OAR_FLOAT_TYPES)
OAR_REGISTER_KERNEL(sum_to, CPU, SumToKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(prod, CPU, ProdKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(max, CPU, MaxKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(min, CPU, MinKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(argmax, CPU, ArgMaxKernel, OAR_NUMERIC_TYPES)
OAR_REGISTER_KERNEL(argmin, CPU, ArgMinKernel, OAR_NUMERIC_TYPES)
