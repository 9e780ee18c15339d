#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oar_generated/ops_api.h"
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


TEST(Errors, WithOpReplacesAGenericTag) {
  Error e(ErrorKind::kInvalidArgument, "elementwise op: shapes [2, 3] and [4] cannot be broadcast");
  e.with_op("add");
  EXPECT_EQ(e.op(), "add");
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  EXPECT_EQ(e.message(), "add: shapes [2, 3] and [4] cannot be broadcast");
  EXPECT_STREQ(e.what(), "InvalidArgument: add: shapes [2, 3] and [4] cannot be broadcast");
}

TEST(Errors, WithOpKeepsTheOwnTagAndTagsUntaggedMessages) {
  Error own(ErrorKind::kOutOfRange, "max: axis 3 is out of range");
  own.with_op("max");
  EXPECT_EQ(own.message(), "max: axis 3 is out of range");
  // No tag: a bracket or a digits-and-punctuation prefix is part of the message.
  Error untagged(ErrorKind::kOutOfRange, "index 5 is out of bounds for axis 0 with size 3");
  untagged.with_op("select");
  EXPECT_EQ(untagged.message(), "select: index 5 is out of bounds for axis 0 with size 3");
  Error bracket(ErrorKind::kInvalidArgument, "x[0] (shape [2]): bad");
  bracket.with_op("concat");
  EXPECT_EQ(bracket.message(), "concat: x[0] (shape [2]): bad");
  Error empty_op(ErrorKind::kInternal, "m");
  empty_op.with_op("");
  EXPECT_EQ(empty_op.message(), "m");
  EXPECT_EQ(empty_op.op(), "");
}

TEST(Errors, WithOpFromACallerPrefixesAndRethrowKeepsIt) {
  auto inner = [] {
    try {
      OAR_THROW(InvalidArgument, "reduce: axis 3 is out of range");
    } catch (Error& e) {
      e.with_op("max");
      throw;
    }
  };
  auto outer = [&] {
    try {
      inner();
    } catch (Error& e) {
      e.with_op("max").with_op("max");  // the same op twice changes nothing
      e.with_op("my_loss");
      throw;
    }
  };
  try {
    outer();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "my_loss: max: axis 3 is out of range");
    EXPECT_EQ(e.op(), "my_loss");
  }
}


TEST(Errors, GeneratedOpsNameThemselves) {
  Tensor a = ops::full({2, 3}, Scalar(1.0), DataType::FLOAT32);
  Tensor b = ops::full({4}, Scalar(1.0), DataType::FLOAT32);
  for (auto [name, fn] : std::vector<std::pair<std::string, Tensor (*)(const Tensor&, const Tensor&)>>{
           {"subtract", ops::subtract}, {"maximum", ops::maximum}, {"less_than", ops::less_than}}) {
    try {
      fn(a, b);
      FAIL() << name << " accepted shapes [2, 3] and [4]";
    } catch (const Error& e) {
      EXPECT_EQ(e.message().rfind(name + ": shapes [2, 3] and [4] cannot be broadcast", 0), 0u)
          << e.message();
      EXPECT_EQ(e.op(), name);
    }
  }
  try {
    ops::max(a, {3}, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_EQ(e.message().rfind("max: axis 3 is out of range", 0), 0u) << e.message();
  }
}

}  // namespace
}  // namespace oar
