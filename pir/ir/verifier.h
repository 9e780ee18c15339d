// Verifier: structural and op-level checks. Throws InvalidArgument naming the
// failing op (its position and text) and what is wrong.
#pragma once

namespace oar::pir {

class Program;
class Operation;

struct VerifyOptions {
  /// Re-run shape inference on every op with one and compare with its result types.
  bool check_inferred_types = true;
};

void verify_program(const Program& p, const VerifyOptions& opts = {});
/// Verifies `op` and everything nested in it (values defined outside count as visible).
void verify_op(const Operation* op, const VerifyOptions& opts = {});

}  // namespace oar::pir
