// Recursive-descent parser of the textual form, character by character (the type
// syntax "tensor<2x?xf32>" does not tokenize well). Every error throws
// InvalidArgument "parse error at L:C: ..."; nesting is bounded by kMaxDepth.
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

constexpr int kMaxDepth = 200;

class Parser {
 public:
  Parser(IrContext* ctx, std::string_view text) : ctx_(ctx), s_(text) {}

  // ---------------------------------------------------------------- errors / lexing
  [[noreturn]] void fail(const std::string& msg) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string near;
    for (size_t i = pos_; i < s_.size() && i < pos_ + 20 && s_[i] != '\n'; ++i) near.push_back(s_[i]);
    OAR_THROW(InvalidArgument, "parse error at ", line, ":", col, ": ", msg,
              pos_ >= s_.size() ? std::string(" (at end of input)") : " near '" + near + "'");
  }
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
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool peek_str(std::string_view w) {
    skip_ws();
    return s_.substr(pos_, w.size()) == w;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool accept_str(std::string_view w) {
    if (!peek_str(w)) return false;
    pos_ += w.size();
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  void expect_str(std::string_view w) {
    if (!accept_str(w)) fail("expected '" + std::string(w) + "'");
  }
  static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  }
  std::string_view ident() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    if (b == pos_) fail("expected an identifier");
    return s_.substr(b, pos_ - b);
  }
  void enter() {
    if (++depth_ > kMaxDepth) fail("nesting is deeper than " + std::to_string(kMaxDepth));
  }
  void leave() { --depth_; }

  std::string string_lit() {
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string");
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') break;
      if (c != '\\') { out.push_back(c); continue; }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      if (e == 'n') out.push_back('\n');
      else if (e == 't') out.push_back('\t');
      else if (e == '"' || e == '\\') out.push_back(e);
      else if (e == 'x') {
        if (pos_ + 2 > s_.size()) fail("bad \\x escape");
        int hi = hexval(s_[pos_]), lo = hexval(s_[pos_ + 1]);
        if (hi < 0 || lo < 0) fail("bad \\x escape");
        out.push_back(static_cast<char>(hi * 16 + lo));
        pos_ += 2;
      } else {
        fail(std::string("unknown escape \\") + e);
      }
    }
    return out;
  }
  static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (r.ec != std::errc()) fail("expected an integer");
    pos_ = r.ptr - s_.data();
    return v;
  }

  // ---------------------------------------------------------------- types
  DataType elem_dtype(std::string_view n) {
    static const std::pair<const char*, DataType> kNames[] = {
        {"bool", DataType::BOOL},    {"i8", DataType::INT8},       {"u8", DataType::UINT8},
        {"i16", DataType::INT16},    {"i32", DataType::INT32},     {"i64", DataType::INT64},
        {"f16", DataType::FLOAT16},  {"bf16", DataType::BFLOAT16}, {"f32", DataType::FLOAT32},
        {"f64", DataType::FLOAT64}};
    for (const auto& [k, t] : kNames)
      if (n == k) return t;
    return DataType::UNDEFINED;
  }
  Type type(bool allow_none = false) {
    enter();
    Type t = type_inner(allow_none);
    leave();
    return t;
  }
  Type type_inner(bool allow_none) {
    skip_ws();
    if (accept_str("tensor<")) return tensor_body();
    if (accept_str("vec<")) {
      std::vector<Type> elems;
      if (!accept('>')) {
        do elems.push_back(type()); while (accept(','));
        expect('>');
      }
      return ctx_->vector_type(elems);
    }
    size_t at = pos_;
    std::string_view n = ident();
    if (n == "index") return ctx_->index_type();
    if (n == "none" && allow_none) return Type();
    DataType t = elem_dtype(n);
    if (t == DataType::UNDEFINED) { pos_ = at; fail("unknown type '" + std::string(n) + "'"); }
    return ctx_->scalar_type(t);
  }
  Type tensor_body() {
    std::vector<int64_t> dims;
    DataType dt = DataType::UNDEFINED;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated tensor type");
      char c = s_[pos_];
      if (c == '?') {
        ++pos_;
        dims.push_back(kDynamic);
      } else if (c >= '0' && c <= '9') {
        int64_t v = 0;
        auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
        if (r.ec != std::errc()) fail("bad tensor dim");
        pos_ = r.ptr - s_.data();
        dims.push_back(v);
      } else {
        size_t at = pos_;
        size_t b = pos_;
        while (pos_ < s_.size() && ((s_[pos_] >= 'a' && s_[pos_] <= 'z') || (s_[pos_] >= '0' && s_[pos_] <= '9'))) ++pos_;
        dt = elem_dtype(s_.substr(b, pos_ - b));
        if (dt == DataType::UNDEFINED) { pos_ = at; fail("expected a tensor element type (f32, i64, ...)"); }
        break;
      }
      if (pos_ >= s_.size() || s_[pos_] != 'x') fail("expected 'x' after a tensor dim");
      ++pos_;
      if (dims.size() > 64) fail("tensor rank is too large");
    }
    DataLayout layout = DataLayout::kNCHW;
    if (accept(',')) {
      std::string_view l = ident();
      if (l == "NCHW") layout = DataLayout::kNCHW;
      else if (l == "NHWC") layout = DataLayout::kNHWC;
      else if (l == "ANY") layout = DataLayout::kAny;
      else fail("unknown layout '" + std::string(l) + "'");
    }
    expect('>');
    return ctx_->tensor_type(dt, dims, layout);
  }

  // ---------------------------------------------------------------- attributes
  Attribute attr() {
    enter();
    Attribute a = attr_inner();
    leave();
    return a;
  }
  Attribute number() {
    skip_ws();
    size_t b = pos_;
    bool neg = pos_ < s_.size() && s_[pos_] == '-';
    if (neg) ++pos_;
    if (accept_str("inf")) return ctx_->float_attr(neg ? -INFINITY : INFINITY);
    if (!neg && accept_str("nan")) return ctx_->float_attr(std::numeric_limits<double>::quiet_NaN());
    bool is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if ((c >= '0' && c <= '9')) { ++pos_; continue; }
      if (c == '.' || c == 'e' || c == 'E') { is_float = true; ++pos_; continue; }
      if ((c == '-' || c == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')) { ++pos_; continue; }
      break;
    }
    std::string_view tok = s_.substr(b, pos_ - b);
    if (is_float) {
      double v = 0;
      auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) { pos_ = b; fail("bad float"); }
      return ctx_->float_attr(v);
    }
    int64_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) { pos_ = b; fail("bad integer"); }
    return ctx_->int_attr(v);
  }
  Attribute attr_inner() {
    skip_ws();
    if (pos_ >= s_.size()) fail("expected an attribute");
    char c = s_[pos_];
    if (c == '"') return ctx_->str_attr(string_lit());
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (accept('[')) {
      std::vector<Attribute> elems;
      if (!accept(']')) {
        do elems.push_back(attr()); while (accept(','));
        expect(']');
      }
      return ctx_->array_attr(elems);
    }
    if (accept_str("true")) return ctx_->bool_attr(true);
    if (accept_str("false")) return ctx_->bool_attr(false);
    if (accept_str("inf")) return ctx_->float_attr(INFINITY);
    if (accept_str("nan")) return ctx_->float_attr(std::numeric_limits<double>::quiet_NaN());
    if (accept_str("#dtype<")) {
      std::string_view n = ident();
      expect('>');
      if (n == "undefined") return ctx_->dtype_attr(DataType::UNDEFINED);
      try {
        return ctx_->dtype_attr(dtype_from_name(n));
      } catch (const Error&) {
        fail("unknown dtype '" + std::string(n) + "'");
      }
    }
    if (accept_str("#place<")) {
      skip_ws();
      size_t b = pos_;
      while (pos_ < s_.size() && s_[pos_] != '>' && s_[pos_] != '\n') ++pos_;
      std::string p(s_.substr(b, pos_ - b));
      expect('>');
      try {
        return ctx_->place_attr(parse_place(p));
      } catch (const Error&) {
        fail("bad place '" + p + "'");
      }
    }
    if (accept_str("#shape[")) {
      std::vector<int64_t> v;
      if (!accept(']')) {
        do v.push_back(integer()); while (accept(','));
        expect(']');
      }
      return ctx_->shape_attr(v);
    }
    if (accept_str("#dense<")) {
      Type t = type();
      expect(',');
      std::string hex = string_lit();
      expect('>');
      if (hex.size() < 2 || hex[0] != '0' || hex[1] != 'x' || hex.size() % 2) fail("dense data must be \"0x<hex bytes>\"");
      if (!t.is_tensor() || t.has_dynamic_dims()) fail("dense data needs a static tensor type");
      std::string bytes((hex.size() - 2) / 2, '\0');
      for (size_t i = 0; i < bytes.size(); ++i) {
        int hi = hexval(hex[2 + 2 * i]), lo = hexval(hex[3 + 2 * i]);
        if (hi < 0 || lo < 0) fail("bad hex digit in dense data");
        bytes[i] = static_cast<char>(hi * 16 + lo);
      }
      if (bytes.size() != static_cast<size_t>(t.numel()) * size_of(t.dtype()))
        fail("dense data has " + std::to_string(bytes.size()) + " bytes, " + t.str() + " needs " +
             std::to_string(t.numel() * size_of(t.dtype())));
      return ctx_->dense_attr(t, std::move(bytes));
    }
    if (accept_str("#type<")) {
      Type t = type();
      expect('>');
      return ctx_->type_attr(t);
    }
    if (accept_str("#kernel_key<")) {
      std::string_view b = ident();
      int backend = b == "cpu" ? 0 : b == "gpu" ? 1 : b == "custom" ? 2 : -1;
      if (backend < 0) fail("unknown backend '" + std::string(b) + "'");
      expect(',');
      std::string_view d = ident();
      DataType dt = d == "undefined" ? DataType::UNDEFINED : elem_dtype(d);
      if (dt == DataType::UNDEFINED && d != "undefined") fail("unknown dtype '" + std::string(d) + "'");
      expect(',');
      std::string_view l = ident();
      DataLayout layout = l == "NCHW" ? DataLayout::kNCHW : l == "NHWC" ? DataLayout::kNHWC : DataLayout::kAny;
      if (l != "NCHW" && l != "NHWC" && l != "ANY") fail("unknown layout '" + std::string(l) + "'");
      expect('>');
      return ctx_->kernel_key_attr(backend, dt, layout);
    }
    fail("expected an attribute");
  }

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
  void expect_end() {
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected trailing text");
  }

 private:
  IrContext* ctx_;
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
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
  Parser p(ctx, text);
  Type t = p.type();
  p.expect_end();
  return t;
}
Attribute parse_attribute(IrContext* ctx, std::string_view text) {
  Parser p(ctx, text);
  Attribute a = p.attr();
  p.expect_end();
  return a;
}

}  // namespace oar::pir
