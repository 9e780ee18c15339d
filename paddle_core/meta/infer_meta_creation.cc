#include "paddle_core/meta/infer_meta_creation.h"

#include <cmath>
#include <limits>

#include "paddle_core/meta/shape_operand.h"

namespace oar {
namespace {

bool is_int_or_float(DataType t) {
  return t == DataType::INT32 || t == DataType::INT64 || is_floating(t);
}

// Paddle's range size: sign of step must point from start to end.
template <typename T>
int64_t range_size(T start, T end, T step) {
  OAR_ENFORCE(step != T(0), InvalidArgument, "arange: step must not be 0");
  OAR_ENFORCE(!(start < end && step < T(0)) && !(start > end && step > T(0)), InvalidArgument,
              "arange: step ", step, " moves away from end (start ", start, ", end ", end,
              "); use a step of the other sign");
  if constexpr (std::is_integral_v<T>) {
    // In uint64: end - start of two int64s (and -step) can overflow int64, which is undefined
    // and gave wrong sizes (arange(-2**63, 2**63 - 1, 2**62) had 0 elements).
    using U = uint64_t;
    const U span = end > start ? U(end) - U(start) : U(start) - U(end);
    const U s = step > 0 ? U(step) : U(0) - U(step);
    const U n = span / s + (span % s != 0 ? 1 : 0);
    OAR_ENFORCE(n <= U(std::numeric_limits<int64_t>::max()), InvalidArgument, "arange: [", start, ", ", end,
                ") with step ", step, " holds ", n, " elements, more than int64 counts");
    return static_cast<int64_t>(n);
  } else {
    OAR_ENFORCE(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
                InvalidArgument, "arange: start, end and step must be finite, got ", start, ", ",
                end, ", ", step);
    // The count as a double first: (end - start) / step can be past int64 (or inf), and
    // casting that to an integer is undefined.
    const double n = std::ceil(std::abs((static_cast<double>(end) - start) / step));
    OAR_ENFORCE(n < 9223372036854775808.0, InvalidArgument, "arange: [", start, ", ", end, ") with step ", step,
                " holds ", n, " elements, more than int64 counts");
    return static_cast<int64_t>(n);
  }
}

void check_float_dtype(DataType dtype, const char* op) {
  OAR_ENFORCE(is_floating(dtype), InvalidType, op,
              ": dtype must be float16, bfloat16, float32 or float64, got ",
              dtype == DataType::UNDEFINED ? "None" : dtype_name(dtype));
}

}  // namespace

DataType arange_dtype(const Scalar& start, const Scalar& end, const Scalar& step, DataType dtype) {
  if (dtype != DataType::UNDEFINED) return dtype;
  const bool ints = !start.is_float() && !end.is_float() && !step.is_float();
  return ints ? DataType::INT64 : default_float_dtype();
}

void ArangeInferMeta(const Scalar& start, const Scalar& end, const Scalar& step, DataType dtype,
                     const Place& place, DenseTensor* out) {
  const DataType t = arange_dtype(start, end, step, dtype);
  OAR_ENFORCE(is_int_or_float(t), InvalidType,
              "arange: dtype must be int32, int64 or a float type, got ", dtype_name(t));
  int64_t n = 0;
  if (is_integral(t)) {
    n = range_size<int64_t>(start.to<int64_t>(), end.to<int64_t>(), step.to<int64_t>());
  } else {
    // The bounds are first rounded to the output type, as Paddle does.
    n = visit_dtype(t, "arange", [&](auto tag) -> int64_t {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<OpMath<T>> && !std::is_same_v<T, bool>) {
        auto r = [](const Scalar& s) {
          return static_cast<double>(static_cast<OpMath<T>>(s.to<T>()));
        };
        return range_size<double>(r(start), r(end), r(step));
      } else {
        return 0;
      }
    });
  }
  out->set_dtype(t);
  out->set_dims(Dims{n});
}

void LinspaceInferMeta(double start, double stop, int64_t num, DataType dtype, const Place& place,
                       DenseTensor* out) {
  OAR_ENFORCE(num > 0, InvalidArgument, "linspace: num must be positive, got ", num);
  const DataType t = dtype == DataType::UNDEFINED ? default_float_dtype() : dtype;
  OAR_ENFORCE(is_int_or_float(t), InvalidType,
              "linspace: dtype must be int32, int64 or a float type, got ", dtype_name(t));
  out->set_dtype(t);
  out->set_dims(Dims{num});
}

void EyeInferMeta(int64_t num_rows, int64_t num_columns, DataType dtype, const Place& place,
                  DenseTensor* out) {
  if (num_columns == -1) num_columns = num_rows;
  OAR_ENFORCE(num_rows >= 0 && num_columns >= 0, InvalidArgument,
              "eye: num_rows and num_columns must be non-negative, got ", num_rows, " and ",
              num_columns);
  out->set_dtype(dtype == DataType::UNDEFINED ? default_float_dtype() : dtype);
  out->set_dims(Dims{num_rows, num_columns});
}

void UniformInferMeta(const IntList& shape, DataType dtype, double min, double max, int64_t seed,
                      const Place& place, DenseTensor* out) {
  check_float_dtype(dtype, "uniform");
  OAR_ENFORCE(min <= max, InvalidArgument, "uniform: min (", min, ") must be <= max (", max, ")");
  OAR_ENFORCE(std::isfinite(min) && std::isfinite(max), InvalidArgument,
              "uniform: min and max must be finite, got ", min, " and ", max);
  out->set_dtype(dtype);
  out->set_dims(meta::shape_from(shape, "uniform"));
}

void GaussianInferMeta(const IntList& shape, double mean, double std, int64_t seed, DataType dtype,
                       const Place& place, DenseTensor* out) {
  check_float_dtype(dtype, "gaussian");
  OAR_ENFORCE(std >= 0.0, InvalidArgument, "gaussian: std must be >= 0, got ", std);
  out->set_dtype(dtype);
  out->set_dims(meta::shape_from(shape, "gaussian"));
}

void RandintInferMeta(int64_t low, int64_t high, const IntList& shape, DataType dtype,
                      const Place& place, DenseTensor* out) {
  OAR_ENFORCE(high > low, InvalidArgument, "randint: high (", high, ") must be greater than low (",
              low, ")");
  const DataType t = dtype == DataType::UNDEFINED ? DataType::INT64 : dtype;
  OAR_ENFORCE(t == DataType::INT32 || t == DataType::INT64, InvalidType,
              "randint: dtype must be int32 or int64, got ", dtype_name(t));
  if (t == DataType::INT32) {
    OAR_ENFORCE(low >= INT32_MIN && high - 1 <= INT32_MAX, InvalidArgument, "randint: range [",
                low, ", ", high, ") does not fit int32");
  }
  out->set_dtype(t);
  out->set_dims(meta::shape_from(shape, "randint"));
}

// The dyn_ random ops: the fixed-shape op's checks on the shape tensor's values (or hint);
// all dims dynamic (0, data_dependent) when neither is known.
void DynUniformInferMeta(const DenseTensor& shape, const IntList& hint, DataType dtype, double min, double max,
                         int64_t seed, const Place& place, DenseTensor* out) {
  std::vector<int64_t> s;
  const bool known = meta::shape_operand(shape, hint, "uniform", &s);
  UniformInferMeta(s, dtype, min, max, seed, place, out);
  if (!known) out->set_dims(Dims::filled(shape.numel(), 0));
}

void DynGaussianInferMeta(const DenseTensor& shape, const IntList& hint, double mean, double std, int64_t seed,
                          DataType dtype, const Place& place, DenseTensor* out) {
  std::vector<int64_t> s;
  const bool known = meta::shape_operand(shape, hint, "gaussian", &s);
  GaussianInferMeta(s, mean, std, seed, dtype, place, out);
  if (!known) out->set_dims(Dims::filled(shape.numel(), 0));
}

void DynRandintInferMeta(const DenseTensor& shape, const IntList& hint, int64_t low, int64_t high, DataType dtype,
                         const Place& place, DenseTensor* out) {
  std::vector<int64_t> s;
  const bool known = meta::shape_operand(shape, hint, "randint", &s);
  RandintInferMeta(low, high, s, dtype, place, out);
  if (!known) out->set_dims(Dims::filled(shape.numel(), 0));
}

void RandpermInferMeta(int64_t n, DataType dtype, const Place& place, DenseTensor* out) {
  OAR_ENFORCE(n >= 0, InvalidArgument, "randperm: n must be non-negative, got ", n);
  const DataType t = dtype == DataType::UNDEFINED ? DataType::INT64 : dtype;
  OAR_ENFORCE(is_int_or_float(t) && t != DataType::FLOAT16 && t != DataType::BFLOAT16, InvalidType,
              "randperm: dtype must be int32, int64, float32 or float64, got ", dtype_name(t));
  out->set_dtype(t);
  out->set_dims(Dims{n});
}

void CopyToInferMeta(const DenseTensor& x, const Place& place, DenseTensor* out) {
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
  out->set_place(place);
}

}  // namespace oar
