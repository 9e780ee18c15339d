// The textual form of the IR (MLIR's generic form; grammar in docs/notes/pir.md):
//   module {
//     %0 = "builtin.parameter"() {name = "w"} : () -> (tensor<4x8xf32>)
//     %1 = "pd_op.relu"(%0) : (tensor<4x8xf32>) -> (tensor<4x8xf32>)
//   }
// Values are numbered in definition order, so parse(print(p)) prints identically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pir/ir/attribute.h"
#include "pir/ir/type.h"

namespace oar::pir {

class Program;
class Operation;

std::string print_program(const Program& p);
/// One op (and its regions), values numbered from 0 within it; operands defined
/// outside print as %<outside>.
std::string print_op(const Operation* op);
void print_type(std::string& out, Type t);
void print_attr(std::string& out, Attribute a);
// Pieces of the text form, for the kinds' print hooks:
/// Shortest decimal that reads back to the same double, always float-looking ("1.0").
void print_float(std::string& out, double v);
/// A quoted string with the escapes the parser reads (\n \t \" \\ \xHH).
void print_string(std::string& out, std::string_view s);
void append_int(std::string& out, int64_t v);

}  // namespace oar::pir
