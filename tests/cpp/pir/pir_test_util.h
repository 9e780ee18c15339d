// Shared helpers of the pir tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/parser.h"
#include "pir/ir/program.h"

namespace oar::pir::testing {

inline IrContext* ctx() { return IrContext::global(); }

/// Runs fn, expects an oar::Error whose message contains `needle`.
template <typename Fn> void expect_error(Fn&& fn, const std::string& needle) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(needle), std::string::npos)
        << "message: " << e.message() << "\nexpected to contain: " << needle;
    return;
  }
  ADD_FAILURE() << "expected an error containing: " << needle;
}

/// Strips leading indentation common to raw-string test programs.
inline std::string dedent(const std::string& s) {
  std::string out;
  size_t i = 0;
  if (!s.empty() && s[0] == '\n') i = 1;
  size_t indent = std::string::npos;
  for (size_t p = i; p < s.size();) {
    size_t e = s.find('\n', p);
    if (e == std::string::npos) e = s.size();
    size_t k = p;
    while (k < e && s[k] == ' ') ++k;
    if (k < e) indent = std::min(indent, k - p);
    p = e + 1;
  }
  if (indent == std::string::npos) indent = 0;
  for (size_t p = i; p < s.size();) {
    size_t e = s.find('\n', p);
    if (e == std::string::npos) e = s.size();
    if (e - p > indent) out.append(s, p + indent, e - p - indent);
    out.push_back('\n');
    p = e + 1;
  }
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace oar::pir::testing
