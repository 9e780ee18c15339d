// Scalar: a number passed to an op as an attribute (full's fill value, clip's bounds).
// It remembers whether it came in as bool, integer, float or complex so that integer
// values beyond 2^53 survive and the op can pick a dtype from it.
#pragma once

#include <cstdint>
#include <ostream>

#include "paddle_core/tensor/dtype.h"
#include "paddle_core/tensor/float_to_int.h"

namespace oar {

class Scalar {
 public:
  enum class Kind : int8_t { kBool, kInt, kFloat, kComplex };
  Scalar() : Scalar(0.0) {}
  // i_ of a NaN, an inf or a float past int64: float_to_int's (x86's) value, not UB.
  Scalar(double v) : kind_(Kind::kFloat), f_(v), i_(float_to_int<int64_t>(v)) {}  // NOLINT
  Scalar(float v) : Scalar(static_cast<double>(v)) {}                             // NOLINT
  Scalar(int64_t v) : kind_(Kind::kInt), f_(static_cast<double>(v)), i_(v) {}     // NOLINT
  Scalar(int v) : Scalar(static_cast<int64_t>(v)) {}                              // NOLINT
  Scalar(bool v) : kind_(Kind::kBool), f_(v), i_(v) {}                            // NOLINT
  Scalar(std::complex<double> v)                                                  // NOLINT
      : kind_(Kind::kComplex), f_(v.real()), i_(float_to_int<int64_t>(v.real())), im_(v.imag()) {}

  Kind kind() const { return kind_; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_complex() const { return kind_ == Kind::kComplex; }
  /// The imaginary part (0 unless kComplex).
  double imag() const { return im_; }
  double to_double() const { return f_; }
  int64_t to_int() const { return i_; }
  /// The value as T (integers convert exactly).
  template <typename T> T to() const {
    if constexpr (is_complex_v<T>) {
      using V = typename T::value_type;
      return T(static_cast<V>(f_), static_cast<V>(im_));
    } else if constexpr (std::is_same_v<T, bool>) {
      return f_ != 0.0 || im_ != 0.0;
    } else if constexpr (std::is_integral_v<T>) {  // a complex value gives its real part
      return kind_ == Kind::kFloat || kind_ == Kind::kComplex ? float_to_int<T>(f_) : static_cast<T>(i_);
    } else {
      return static_cast<T>(static_cast<OpMath<T>>(f_));
    }
  }
  /// The dtype Paddle gives a tensor made from this Python number.
  DataType natural_dtype() const {
    return kind_ == Kind::kBool      ? DataType::BOOL
           : kind_ == Kind::kInt     ? DataType::INT64
           : kind_ == Kind::kComplex ? real_to_complex(default_float_dtype())
                                     : default_float_dtype();
  }

 private:
  Kind kind_;
  double f_;
  int64_t i_;
  double im_ = 0.0;
};

inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.kind() == Scalar::Kind::kComplex)
    return os << "(" << s.to_double() << (s.imag() < 0 ? "" : "+") << s.imag() << "j)";
  if (s.kind() == Scalar::Kind::kFloat) return os << s.to_double();
  return os << s.to_int();
}

}  // namespace oar
