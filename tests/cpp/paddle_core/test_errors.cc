#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/dims.h"

namespace oar {
namespace {

void enforce_positive(int v) {
  OAR_ENFORCE(v > 0, InvalidArgument, "relu_test: expected a positive value, got ", v,
              " in ", std::vector<int>{1, 2, 3});
}

TEST(Errors, EnforceMessageFormat) {
  try {
    enforce_positive(-4);
    FAIL() << "OAR_ENFORCE did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_EQ(e.message(), "relu_test: expected a positive value, got -4 in [1, 2, 3]");
    EXPECT_STREQ(e.what(), "InvalidArgument: relu_test: expected a positive value, got -4 in "
                           "[1, 2, 3]");
  }
  EXPECT_NO_THROW(enforce_positive(1));
}

TEST(Errors, EnforceEvaluatesMessageOnlyOnFailure) {
  int calls = 0;
  auto expensive = [&calls] { return ++calls; };
  OAR_ENFORCE(true, Internal, "never built: ", expensive());
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(OAR_ENFORCE(false, Internal, "built: ", expensive()), Error);
  EXPECT_EQ(calls, 1);
}

TEST(Errors, ThrowKindsAndNames) {
  struct Case {
    ErrorKind kind;
    const char* name;
  };
  const std::vector<Case> cases = {
      {ErrorKind::kInvalidArgument, "InvalidArgument"},
      {ErrorKind::kInvalidType, "InvalidType"},
      {ErrorKind::kOutOfRange, "OutOfRange"},
      {ErrorKind::kUnimplemented, "Unimplemented"},
      {ErrorKind::kNotFound, "NotFound"},
      {ErrorKind::kPreconditionNotMet, "PreconditionNotMet"},
      {ErrorKind::kResourceExhausted, "ResourceExhausted"},
      {ErrorKind::kAlreadyExists, "AlreadyExists"},
      {ErrorKind::kInternal, "Internal"},
  };
  for (const auto& c : cases) {
    EXPECT_STREQ(error_kind_name(c.kind), c.name);
    Error e(c.kind, "m");
    EXPECT_EQ(std::string(e.what()), std::string(c.name) + ": m");
  }
  try {
    OAR_THROW(OutOfRange, "gather: index ", 7, " out of ", 3.5, ' ', std::string("!"));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_EQ(e.message(), "gather: index 7 out of 3.5 !");
  }
}

TEST(Errors, IsAStdException) {
  try {
    OAR_THROW(NotFound, "x");
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "NotFound: x");
  }
}

TEST(Errors, DimsAndWrapAxisMessages) {
  try {
    wrap_axis(3, 2, "sum");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_EQ(e.message(), "sum: axis 3 is out of range for a tensor of rank 2 (expected [-2, 1])");
  }
  EXPECT_EQ(wrap_axis(-1, 3, "op"), 2);
  EXPECT_EQ(wrap_axis(0, 0, "op"), 0);  // a 0-D tensor accepts axis 0 and -1
  EXPECT_EQ(detail::str_cat("shape ", Dims{2, 3}), "shape [2, 3]");
  EXPECT_EQ(detail::str_cat(Dims{}), "[]");
  EXPECT_THROW(Dims(std::vector<int64_t>(kMaxRank + 1, 1)), Error);
}

}  // namespace
}  // namespace oar
