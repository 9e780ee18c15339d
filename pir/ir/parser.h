// Parses the textual form (see printer.h). Errors are InvalidArgument with the line
// and column; no input crashes the parser (nesting depth is bounded).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pir/ir/ir_context.h"

namespace oar::pir {

class Program;

/// Parses a whole program; verifies it unless `verify` is false.
std::unique_ptr<Program> parse_program(IrContext* ctx, std::string_view text, bool verify = true);
Type parse_type(IrContext* ctx, std::string_view text);
Attribute parse_attribute(IrContext* ctx, std::string_view text);

/// The lexer of the text format and the parsers of types and attributes: what a kind's
/// parse hook (kinds.h) reads its text with. Every error is InvalidArgument
/// "parse error at L:C: <msg> near '<text>'"; an error a hook lets escape (a verify
/// hook's, say) is reported the same way at the start of the hook's text.
class AsmParser {
 public:
  AsmParser(IrContext* ctx, std::string_view text) : ctx_(ctx), s_(text) {}
  IrContext* ctx() const { return ctx_; }

  [[noreturn]] void fail(const std::string& msg) const { fail_at(pos_, msg); }
  /// fail() pointing at an earlier position (from pos()).
  [[noreturn]] void fail_at(size_t pos, const std::string& msg) const;
  size_t pos() const { return pos_; }

  // Tokens; each skips whitespace and comments first. (Inline: the parser's inner loop.)
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool accept_str(std::string_view w) {
    skip_ws();
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  void expect_str(std::string_view w);
  /// [A-Za-z0-9_.]+
  std::string_view ident() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (b == pos_) fail("expected an identifier");
    return s_.substr(b, pos_ - b);
  }
  /// A quoted string with \n \t \" \\ \xHH escapes.
  std::string string_lit();
  int64_t integer();
  /// An int or float literal ("-3", "1.5", "1e-05", "inf", "-inf", "nan"): an int or
  /// float attribute.
  Attribute number();
  /// `(size|?)x` repeated ("2x?x" of "tensor<2x?xf32>"; no spaces; ? is kDynamic),
  /// stopping before the first character that is not a digit or '?'.
  std::vector<int64_t> dimension_list();
  /// 0..15 for a hex digit, -1 otherwise.
  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  /// The raw text from here up to (not including) `stop` or the end of the line.
  std::string_view until(char stop);

  /// A nested type or attribute (dispatched to its kind by name).
  Type type(bool allow_none = false);
  Attribute attr();
  void expect_end();

 protected:
  void skip_ws() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  void enter() {
    if (++depth_ > kMaxDepth) fail("nesting is deeper than " + std::to_string(kMaxDepth));
  }
  void leave() { --depth_; }
  static constexpr int kMaxDepth = 200;
  static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  }

  IrContext* ctx_;
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;

 private:
  // The last kind looked up by name: programs repeat a few kinds ("tensor"), so most
  // lookups are a short compare instead of a hash (names point into the text).
  std::string_view last_type_name_, last_attr_name_;
  const TypeKindInfo* last_type_kind_ = nullptr;
  const AttrKindInfo* last_attr_kind_ = nullptr;

  Type type_inner(bool allow_none);
  Attribute attr_inner();
};

}  // namespace oar::pir
