// Recursive-descent parser of the textual form, character by character (the type
// syntax "tensor<2x?xf32>" does not tokenize well). Every error throws
// InvalidArgument "parse error at L:C: ..."; nesting is bounded by kMaxDepth. Types
// and attributes are dispatched to their kind's parse hook by name (kinds.h); this
// file knows no kind.
#include "pir/ir/parser.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "paddle_core/base/errors.h"
#include "pir/ir/operation.h"
#include "pir/ir/program.h"
#include "pir/ir/verifier.h"

namespace oar::pir {

namespace {
bool is_parse_error(const Error& e) { return e.message().rfind("parse error at ", 0) == 0; }
}  // namespace

// ---------------------------------------------------------------- errors / lexing
void AsmParser::fail_at(size_t at, const std::string& msg) const {
  int line = 1, col = 1;
  for (size_t i = 0; i < at && i < s_.size(); ++i) {
    if (s_[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  std::string near;
  for (size_t i = at; i < s_.size() && i < at + 20 && s_[i] != '\n'; ++i) near.push_back(s_[i]);
  OAR_THROW(InvalidArgument, "parse error at ", line, ":", col, ": ", msg,
            at >= s_.size() ? std::string(" (at end of input)") : " near '" + near + "'");
}
void AsmParser::expect_str(std::string_view w) {
  if (!accept_str(w)) fail("expected '" + std::string(w) + "'");
}
void AsmParser::expect_end() {
  skip_ws();
  if (pos_ != s_.size()) fail("unexpected trailing text");
}

std::string AsmParser::string_lit() {
  skip_ws();
  if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string");
  ++pos_;
  std::string out;
  while (true) {
    if (pos_ >= s_.size()) fail("unterminated string");
    char c = s_[pos_++];
    if (c == '"') break;
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (pos_ >= s_.size()) fail("unterminated escape");
    char e = s_[pos_++];
    if (e == 'n')
      out.push_back('\n');
    else if (e == 't')
      out.push_back('\t');
    else if (e == '"' || e == '\\')
      out.push_back(e);
    else if (e == 'x') {
      if (pos_ + 2 > s_.size()) fail("bad \\x escape");
      int hi = hex_value(s_[pos_]), lo = hex_value(s_[pos_ + 1]);
      if (hi < 0 || lo < 0) fail("bad \\x escape");
      out.push_back(static_cast<char>(hi * 16 + lo));
      pos_ += 2;
    } else {
      fail(std::string("unknown escape \\") + e);
    }
  }
  return out;
}
int64_t AsmParser::integer() {
  skip_ws();
  int64_t v = 0;
  auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
  if (r.ec != std::errc()) fail("expected an integer");
  pos_ = r.ptr - s_.data();
  return v;
}
Attribute AsmParser::number() {
  skip_ws();
  size_t b = pos_;
  bool neg = pos_ < s_.size() && s_[pos_] == '-';
  if (neg) ++pos_;
  if (accept_str("inf")) return ctx_->float_attr(neg ? -INFINITY : INFINITY);
  if (!neg && accept_str("nan")) return ctx_->float_attr(std::numeric_limits<double>::quiet_NaN());
  bool is_float = false;
  while (pos_ < s_.size()) {
    char c = s_[pos_];
    if ((c >= '0' && c <= '9')) {
      ++pos_;
      continue;
    }
    if (c == '.' || c == 'e' || c == 'E') {
      is_float = true;
      ++pos_;
      continue;
    }
    if ((c == '-' || c == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')) {
      ++pos_;
      continue;
    }
    break;
  }
  std::string_view tok = s_.substr(b, pos_ - b);
  if (is_float) {
    double v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) fail_at(b, "bad float");
    return ctx_->float_attr(v);
  }
  int64_t v = 0;
  auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) fail_at(b, "bad integer");
  return ctx_->int_attr(v);
}
std::vector<int64_t> AsmParser::dimension_list() {
  std::vector<int64_t> dims;
  while (pos_ < s_.size() && (s_[pos_] == '?' || (s_[pos_] >= '0' && s_[pos_] <= '9'))) {
    if (s_[pos_] == '?') {
      ++pos_;
      dims.push_back(kDynamic);
    } else {
      int64_t v = 0;
      auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
      if (r.ec != std::errc()) fail("bad dim");
      pos_ = r.ptr - s_.data();
      dims.push_back(v);
    }
    if (pos_ >= s_.size() || s_[pos_] != 'x') fail("expected 'x' after a tensor dim");
    ++pos_;
  }
  return dims;
}
std::string_view AsmParser::until(char stop) {
  skip_ws();
  size_t b = pos_;
  while (pos_ < s_.size() && s_[pos_] != stop && s_[pos_] != '\n') ++pos_;
  return s_.substr(b, pos_ - b);
}

// ---------------------------------------------------------------- types and attributes
Type AsmParser::type(bool allow_none) {
  enter();
  Type t = type_inner(allow_none);
  leave();
  return t;
}
// Builtin types are bare names ("f32", "tensor<...>"), a dialect's are `!<name>...`.
Type AsmParser::type_inner(bool allow_none) {
  skip_ws();
  const size_t at = pos_;
  const bool bang = accept('!');
  const std::string_view n = ident();
  if (!bang && n == "none" && allow_none) return Type();
  const TypeKindInfo* k = n == last_type_name_ ? last_type_kind_ : ctx_->find_type_kind(n);
  if (!k)
    fail_at(at, bang ? "unknown type kind '" + std::string(n) + "' (is its dialect loaded?)"
                     : "unknown type '" + std::string(n) + "'");
  const bool builtin = static_cast<int>(k->id) < kNumBuiltinTypeKinds;
  if (builtin == bang)
    fail_at(at, builtin ? "the builtin type '" + k->name + "' is written without '!'"
                        : "the type '" + k->name + "' is written !" + k->name);
  last_type_name_ = n;
  last_type_kind_ = k;
  try {
    return k->parse(*this, k->id);
  } catch (const Error& e) {
    if (is_parse_error(e)) throw;
    fail_at(at, e.message());
  }
}

Attribute AsmParser::attr() {
  enter();
  Attribute a = attr_inner();
  leave();
  return a;
}
// `#<name>...` goes to the kind of that name; a bare literal to the kind registered
// for its first character (numbers, strings, true/false, [...]).
Attribute AsmParser::attr_inner() {
  skip_ws();
  if (pos_ >= s_.size()) fail("expected an attribute");
  const size_t at = pos_;
  const AttrKindInfo* k = nullptr;
  if (accept('#')) {
    const std::string_view n = ident();
    k = n == last_attr_name_ ? last_attr_kind_ : ctx_->find_attr_kind(n);
    if (!k || !k->literal_chars.empty())
      fail_at(at, "unknown attribute kind '" + std::string(n) + "' (is its dialect loaded?)");
    last_attr_name_ = n;
    last_attr_kind_ = k;
  } else {
    k = ctx_->literal_attr_kind(s_[pos_]);
    if (!k) fail("expected an attribute");
  }
  try {
    return k->parse(*this, k->id);
  } catch (const Error& e) {
    if (is_parse_error(e)) throw;
    fail_at(at, e.message());
  }
}

namespace {

class Parser : public AsmParser {
 public:
  using AsmParser::AsmParser;

  // ---------------------------------------------------------------- values / ops
  std::string value_name() {
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != '%') fail("expected a value (%name)");
    ++pos_;
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (b == pos_) fail("expected a value name after '%'");
    return std::string(s_.substr(b, pos_ - b));
  }
  void define(const std::string& name, Value v) {
    if (name == "null") fail("%null cannot be defined");
    auto [it, inserted] = values_.emplace(name, v);
    if (!inserted) fail("value %" + name + " is defined twice");
    scopes_.back().push_back(name);
  }
  Value lookup(const std::string& name) {
    if (name == "null") return Value();
    auto it = values_.find(name);
    if (it == values_.end()) fail("use of undefined value %" + name);
    return it->second;
  }
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() {
    for (const auto& n : scopes_.back()) values_.erase(n);
    scopes_.pop_back();
  }

  void region(Region& r) {
    enter();
    expect('{');
    push_scope();
    while (!accept('}')) {
      skip_ws();
      if (!accept('^')) fail("expected a block label (^bbN) or '}'");
      ident();
      Block* b = r.add_block();
      if (accept('(')) {
        if (!accept(')')) {
          do {
            std::string n = value_name();
            expect(':');
            define(n, b->add_argument(type()));
          } while (accept(','));
          expect(')');
        }
      }
      expect(':');
      while (!peek('^') && !peek('}')) {
        if (pos_ >= s_.size()) fail("unterminated region");
        op(b);
      }
    }
    pop_scope();
    leave();
  }

  void op(Block* block) {
    enter();
    std::vector<std::string> result_names;
    if (peek('%')) {
      do result_names.push_back(value_name()); while (accept(','));
      expect('=');
    }
    skip_ws();
    const size_t name_pos = pos_;
    std::string name = string_lit();
    const OpInfo* info = ctx_->find_op(name);
    if (!info) {
      pos_ = name_pos;
      fail("unknown op '" + name + "'");
    }
    expect('(');
    std::vector<Value> operands;
    if (!accept(')')) {
      do operands.push_back(lookup(value_name())); while (accept(','));
      expect(')');
    }
    std::vector<std::unique_ptr<Region>> regions;
    if (accept('(')) {
      do {
        regions.push_back(std::make_unique<Region>());
        region(*regions.back());
      } while (accept(','));
      expect(')');
    }
    std::vector<NamedAttribute> attrs;
    if (accept('{')) {
      if (!accept('}')) {
        do {
          std::string an(ident());
          expect('=');
          for (const auto& a : attrs)
            if (a.name == an) fail("attribute '" + an + "' is given twice");
          attrs.push_back(NamedAttribute{an, attr()});
        } while (accept(','));
        expect('}');
      }
    }
    expect(':');
    expect('(');
    std::vector<Type> in_types;
    if (!accept(')')) {
      do in_types.push_back(type(true)); while (accept(','));
      expect(')');
    }
    expect_str("->");
    expect('(');
    std::vector<Type> out_types;
    if (!accept(')')) {
      do {
        Type t = type();
        out_types.push_back(t);
      } while (accept(','));
      expect(')');
    }
    if (in_types.size() != operands.size())
      fail(name + ": " + std::to_string(operands.size()) + " operands but " +
           std::to_string(in_types.size()) + " operand types");
    for (size_t i = 0; i < operands.size(); ++i) {
      Type actual = operands[i] ? operands[i].type() : Type();
      if (actual != in_types[i])
        fail(name + ": operand " + std::to_string(i) + " has type " + (actual ? actual.str() : "none") +
             " but the op's signature says " + (in_types[i] ? in_types[i].str() : "none"));
    }
    if (out_types.size() != result_names.size())
      fail(name + ": " + std::to_string(result_names.size()) + " result names but " +
           std::to_string(out_types.size()) + " result types");
    Operation* o = Operation::create(info, operands, out_types, std::move(attrs),
                                     static_cast<int>(regions.size()));
    for (size_t r = 0; r < regions.size(); ++r) o->region(r).take_body(*regions[r]);
    block->push_back(o);
    for (size_t i = 0; i < result_names.size(); ++i) define(result_names[i], o->result(i));
    leave();
  }

  std::unique_ptr<Program> program() {
    auto p = std::make_unique<Program>(ctx_);
    expect_str("module");
    expect('{');
    push_scope();
    while (!accept('}')) {
      if (pos_ >= s_.size()) fail("unterminated module");
      op(p->block());
    }
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the module");
    return p;
  }

 private:
  std::unordered_map<std::string, Value> values_;
  std::vector<std::vector<std::string>> scopes_;
};

}  // namespace

std::unique_ptr<Program> parse_program(IrContext* ctx, std::string_view text, bool verify) {
  Parser p(ctx, text);
  auto prog = p.program();
  if (verify) verify_program(*prog);
  return prog;
}
Type parse_type(IrContext* ctx, std::string_view text) {
  AsmParser p(ctx, text);
  Type t = p.type();
  p.expect_end();
  return t;
}
Attribute parse_attribute(IrContext* ctx, std::string_view text) {
  AsmParser p(ctx, text);
  Attribute a = p.attr();
  p.expect_end();
  return a;
}

}  // namespace oar::pir
