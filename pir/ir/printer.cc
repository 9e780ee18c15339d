#include "pir/ir/printer.h"

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "pir/ir/kinds.h"
#include "pir/ir/operation.h"
#include "pir/ir/program.h"

namespace oar::pir {

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

void print_string(std::string& out, std::string_view s) {
  static const char* hex = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
}

void print_float(std::string& out, double v) {
  if (std::isnan(v)) { out += "nan"; return; }
  if (std::isinf(v)) { out += v < 0 ? "-inf" : "inf"; return; }
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string_view s(buf, r.ptr - buf);
  out.append(s);
  if (s.find_first_of(".e") == std::string_view::npos) out += ".0";
}

// The kinds print themselves (their print hooks, kinds.h).
void print_type(std::string& out, Type t) {
  if (!t) { out += "none"; return; }
  t.kind_info().print(out, t);
}
void print_attr(std::string& out, Attribute a) {
  if (!a) { out += "<null>"; return; }
  a.kind_info().print(out, a);
}

namespace {
// Values are numbered with an epoch in the high bits, so numbers left by an earlier
// print are never mistaken for current ones (no reset walk needed).
std::atomic<int64_t> g_epoch{1};

class Printer {
 public:
  explicit Printer(std::string& out) : out_(out), epoch_(g_epoch.fetch_add(1) << 32) {}

  void value_def(Value v) {
    v.impl()->scratch = epoch_ | next_++;
    value_ref(v);
  }
  void value_ref(Value v) {
    if (!v) { out_ += "%null"; return; }
    int64_t s = v.impl()->scratch;
    out_.push_back('%');
    if ((s & ~int64_t(0xffffffff)) != epoch_) { out_ += "<outside>"; return; }
    append_int(out_, s & 0xffffffff);
  }
  void indent(int n) { out_.append(static_cast<size_t>(n) * 2, ' '); }

  void op(const Operation* o, int depth) {
    indent(depth);
    for (size_t i = 0; i < o->num_results(); ++i) {
      if (i) out_ += ", ";
      value_def(o->result(i));
    }
    if (o->num_results()) out_ += " = ";
    out_.push_back('"');
    out_ += o->name();
    out_ += "\"(";
    for (size_t i = 0; i < o->num_operands(); ++i) {
      if (i) out_ += ", ";
      value_ref(o->operand(i));
    }
    out_.push_back(')');
    if (o->num_regions()) {
      out_ += " (";
      for (size_t r = 0; r < o->num_regions(); ++r) {
        if (r) out_ += ", ";
        region(o->region(r), depth);
      }
      out_.push_back(')');
    }
    if (!o->attributes().empty()) {
      out_ += " {";
      bool first = true;
      for (const auto& a : o->attributes()) {
        if (!first) out_ += ", ";
        first = false;
        out_ += a.name;
        out_ += " = ";
        print_attr(out_, a.value);
      }
      out_.push_back('}');
    }
    out_ += " : (";
    for (size_t i = 0; i < o->num_operands(); ++i) {
      if (i) out_ += ", ";
      print_type(out_, o->operand(i) ? o->operand(i).type() : Type());
    }
    out_ += ") -> (";
    for (size_t i = 0; i < o->num_results(); ++i) {
      if (i) out_ += ", ";
      print_type(out_, o->result(i).type());
    }
    out_ += ")\n";
  }

  void block_body(const Block* b, int depth) {
    for (const Operation* o : *b) op(o, depth);
  }

  void region(const Region& r, int depth) {
    out_.push_back('{');
    if (r.empty()) { out_.push_back('}'); return; }
    out_.push_back('\n');
    for (size_t i = 0; i < r.size(); ++i) {
      const Block* b = r.block(i);
      indent(depth + 1);
      out_ += "^bb";
      append_int(out_, static_cast<int64_t>(i));
      if (b->num_arguments()) {
        out_.push_back('(');
        for (size_t k = 0; k < b->num_arguments(); ++k) {
          if (k) out_ += ", ";
          value_def(b->argument(k));
          out_ += ": ";
          print_type(out_, b->argument(k).type());
        }
        out_.push_back(')');
      }
      out_ += ":\n";
      block_body(b, depth + 2);
    }
    indent(depth);
    out_.push_back('}');
  }

 private:
  std::string& out_;
  int64_t epoch_;
  int64_t next_ = 0;
};
}  // namespace

std::string print_program(const Program& p) {
  std::string out;
  out.reserve(p.block()->size() * 96 + 16);
  Printer pr(out);
  out += "module {\n";
  pr.block_body(p.block(), 1);
  out += "}\n";
  return out;
}

std::string print_op(const Operation* op) {
  std::string out;
  Printer pr(out);
  pr.op(op, 0);
  return out;
}

}  // namespace oar::pir
