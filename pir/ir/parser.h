// Parses the textual form (see printer.h). Errors are InvalidArgument with the line
// and column; no input crashes the parser (nesting depth is bounded).
#pragma once

#include <memory>
#include <string_view>

#include "pir/ir/ir_context.h"

namespace oar::pir {

class Program;

/// Parses a whole program; verifies it unless `verify` is false.
std::unique_ptr<Program> parse_program(IrContext* ctx, std::string_view text, bool verify = true);
Type parse_type(IrContext* ctx, std::string_view text);
Attribute parse_attribute(IrContext* ctx, std::string_view text);

}  // namespace oar::pir
