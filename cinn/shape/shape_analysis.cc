#include "cinn/shape/shape_analysis.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "cinn/dialect.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/operation.h"
#include "pir/ir/program.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

// ---- DimExpr

struct DimExpr::Node {
  Kind kind = kConst;
  int64_t value = 0;
  int sym = -1;
  DimExpr a, b;
};

DimExpr::Kind DimExpr::kind() const { return n_->kind; }
int64_t DimExpr::value() const { return n_->value; }
int DimExpr::sym() const { return n_->sym; }
const DimExpr& DimExpr::lhs() const { return n_->a; }
const DimExpr& DimExpr::rhs() const { return n_->b; }

DimExpr DimExpr::constant(int64_t v) {
  DimExpr e;
  auto n = std::make_shared<Node>();
  n->kind = kConst;
  n->value = v;
  e.n_ = std::move(n);
  return e;
}

DimExpr DimExpr::symbol(int id) {
  DimExpr e;
  auto n = std::make_shared<Node>();
  n->kind = kSym;
  n->sym = id;
  e.n_ = std::move(n);
  return e;
}

namespace {
bool same(const DimExpr& a, const DimExpr& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case DimExpr::kConst:
      return a.value() == b.value();
    case DimExpr::kSym:
      return a.sym() == b.sym();
    default:
      return same(a.lhs(), b.lhs()) && same(a.rhs(), b.rhs());
  }
}
}  // namespace

DimExpr DimExpr::compound(Kind k, const DimExpr& a, const DimExpr& b) {
  DimExpr e;
  auto n = std::make_shared<Node>();
  n->kind = k;
  n->a = a;
  n->b = b;
  e.n_ = std::move(n);
  return e;
}

DimExpr DimExpr::add(const DimExpr& a, const DimExpr& b) {
  if (a.kind() == kConst && b.kind() == kConst) return constant(a.value() + b.value());
  if (a.is_const(0)) return b;
  if (b.is_const(0)) return a;
  return compound(kAdd, b.kind() == kConst ? b : a, b.kind() == kConst ? a : b);
}

DimExpr DimExpr::mul(const DimExpr& a, const DimExpr& b) {
  if (a.kind() == kConst && b.kind() == kConst) return constant(a.value() * b.value());
  if (a.is_const(1)) return b;
  if (b.is_const(1)) return a;
  if (a.is_const(0) || b.is_const(0)) return constant(0);
  // Constants first, merged: c1 * (c2 * x) = (c1 c2) * x.
  const DimExpr& c = a.kind() == kConst ? a : b;
  const DimExpr& x = a.kind() == kConst ? b : a;
  if (c.kind() == kConst && x.kind() == kMul && x.lhs().kind() == kConst)
    return mul(constant(c.value() * x.lhs().value()), x.rhs());
  if (c.kind() == kConst) return compound(kMul, c, x);
  if (a.kind() == kMul && a.lhs().kind() == kConst) return mul(a.lhs(), mul(a.rhs(), b));
  if (b.kind() == kMul && b.lhs().kind() == kConst) return mul(b.lhs(), mul(a, b.rhs()));
  return compound(kMul, a, b);
}

DimExpr DimExpr::div(const DimExpr& a, const DimExpr& b) {
  if (b.is_const(1)) return a;
  if (a.kind() == kConst && b.kind() == kConst && b.value() != 0 && a.value() % b.value() == 0)
    return constant(a.value() / b.value());
  if (b.kind() == kConst && b.value() != 0 && a.kind() == kMul && a.lhs().kind() == kConst &&
      a.lhs().value() % b.value() == 0)
    return mul(constant(a.lhs().value() / b.value()), a.rhs());
  if (same(a, b)) return constant(1);
  if (a.kind() == kMul && same(a.rhs(), b)) return a.lhs();
  return compound(kDiv, a, b);
}

DimExpr DimExpr::broadcast(const DimExpr& a, const DimExpr& b) {
  if (a.is_const(1)) return b;
  if (b.is_const(1)) return a;
  if (same(a, b)) return a;
  return compound(kBroadcast, a, b);
}

// ---- the analysis

namespace {

Attribute attr_of(const Operation* op, const char* name) {
  const int i = op->info()->attr_index(name);
  if (i < 0) return Attribute();
  return lookup_attr(op->info(), &op->attributes(), static_cast<size_t>(i));
}
bool has_attr(const Operation* op, const char* name) { return op->info()->attr_index(name) >= 0; }
std::vector<int64_t> ints_attr(const Operation* op, const char* name) {
  return opgen::a_ints(attr_of(op, name), op->info(), static_cast<size_t>(op->info()->attr_index(name)));
}
bool bool_attr(const Operation* op, const char* name) {
  return opgen::a_bool(attr_of(op, name), op->info(), static_cast<size_t>(op->info()->attr_index(name)));
}

const std::unordered_set<std::string>& elementwise_binary() {
  static const std::unordered_set<std::string> s = {
      "pd_op.add",          "pd_op.subtract",        "pd_op.multiply",    "pd_op.divide",       "pd_op.maximum",
      "pd_op.minimum",      "pd_op.elementwise_pow", "pd_op.remainder",   "pd_op.floor_divide", "pd_op.fmax",
      "pd_op.fmin",         "pd_op.equal",           "pd_op.not_equal",   "pd_op.less_than",    "pd_op.less_equal",
      "pd_op.greater_than", "pd_op.greater_equal",   "pd_op.logical_and", "pd_op.logical_or",   "pd_op.where",
      "pd_op.atan2",        "pd_op.logical_xor"};
  return s;
}
const std::unordered_set<std::string>& same_shape() {
  static const std::unordered_set<std::string> s = {
      "pd_op.exp",        "pd_op.log",       "pd_op.sqrt",     "pd_op.rsqrt",       "pd_op.reciprocal",
      "pd_op.tanh",       "pd_op.erf",       "pd_op.abs",      "pd_op.neg",         "pd_op.relu",
      "pd_op.sigmoid",    "pd_op.square",    "pd_op.scale",    "pd_op.pow",         "pd_op.clip",
      "pd_op.cast",       "pd_op.gelu",      "pd_op.silu",     "pd_op.softmax",     "pd_op.log_softmax",
      "pd_op.assign",     "pd_op.full_like", "pd_op.sign",     "pd_op.floor",       "pd_op.ceil",
      "pd_op.round",      "pd_op.sin",       "pd_op.cos",      "pd_op.dropout",     "pd_op.layer_norm",
      "pd_op.rms_norm",   "pd_op.tril",      "pd_op.triu",     "pd_op.logical_not", "pd_op.isnan",
      "pd_op.leaky_relu", "pd_op.elu",       "pd_op.softplus", "pd_op.exp2",        "pd_op.log1p",
      "pd_op.expm1"};
  return s;
}
const std::unordered_set<std::string>& reductions() {
  static const std::unordered_set<std::string> s = {"pd_op.sum",  "pd_op.max",  "pd_op.min",  "pd_op.mean",
                                                    "pd_op.prod", "pd_op.amax", "pd_op.amin", "pd_op.logsumexp",
                                                    "pd_op.all",  "pd_op.any"};
  return s;
}

bool is_tensor(Value v) { return v && v.type() && v.type().is_tensor(); }

}  // namespace

ShapeAnalysis::ShapeAnalysis(Block* block) { visit_block(block); }

int ShapeAnalysis::find(int s) const {
  while (parent_[s] != s) s = parent_[s] = parent_[parent_[s]];
  return s;
}

DimExpr ShapeAnalysis::fresh() {
  parent_.push_back(static_cast<int>(parent_.size()));
  return DimExpr::symbol(static_cast<int>(parent_.size()) - 1);
}

std::vector<DimExpr> ShapeAnalysis::from_type(Value v) {
  std::vector<DimExpr> out;
  for (int64_t d : v.type().dims()) out.push_back(d >= 0 ? DimExpr::constant(d) : fresh());
  return out;
}

void ShapeAnalysis::unify(const DimExpr& a, const DimExpr& b, const Operation* why) {
  if (a.kind() != DimExpr::kSym || b.kind() != DimExpr::kSym) return;
  const int x = find(a.sym()), y = find(b.sym());
  if (x == y) return;
  parent_[std::max(x, y)] = std::min(x, y);  // the older symbol represents the class
  assumed_.push_back(symbol_name(std::max(x, y)) + " == S" + std::to_string(std::min(x, y)) + " (" +
                     (why ? why->name() : std::string("?")) + ")");
}

DimExpr ShapeAnalysis::bcast(const DimExpr& a, const DimExpr& b, const Operation* why) {
  if (a.kind() == DimExpr::kSym && b.kind() == DimExpr::kSym) {
    unify(a, b, why);
    return DimExpr::symbol(find(a.sym()));
  }
  if (a.is_const(1)) return b;
  if (b.is_const(1)) return a;
  if (a.kind() == DimExpr::kConst) return a;  // a ? against a static N: N (or a broadcast 1)
  if (b.kind() == DimExpr::kConst) return b;
  if (str(a) == str(b)) return a;
  return DimExpr::broadcast(a, b);
}

std::vector<DimExpr> ShapeAnalysis::dims(Value v) const {
  auto it = v ? dims_.find(v.impl()) : dims_.end();
  return it == dims_.end() ? std::vector<DimExpr>{} : it->second;
}

std::string ShapeAnalysis::str(const DimExpr& e) const {
  switch (e.kind()) {
    case DimExpr::kConst:
      return std::to_string(e.value());
    case DimExpr::kSym:
      return symbol_name(find(e.sym()));
    case DimExpr::kMul:
      return str(e.lhs()) + "*" + str(e.rhs());
    default:
      break;
  }
  const char* open = e.kind() == DimExpr::kBroadcast ? "Broadcast(" : "(";
  const char* mid = e.kind() == DimExpr::kAdd ? " + " : e.kind() == DimExpr::kDiv ? " / " : ", ";
  std::string s(open);
  s += str(e.lhs());
  s += mid;
  s += str(e.rhs());
  s += ')';
  return s;
}

std::string ShapeAnalysis::str(Value v) const {
  std::string s = "[";
  const std::vector<DimExpr> d = dims(v);
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + str(d[i]);
  return s + "]";
}

std::vector<int64_t> ShapeAnalysis::encoded(Value v) const {
  std::vector<int64_t> out;
  for (const DimExpr& e : dims(v)) {
    if (e.kind() == DimExpr::kConst)
      out.push_back(e.value());
    else if (e.kind() == DimExpr::kSym)
      out.push_back(-2 - find(e.sym()));
    else
      out.push_back(-1000000 - expr_ids_.emplace(str(e), static_cast<int64_t>(expr_ids_.size())).first->second);
  }
  return out;
}

void ShapeAnalysis::visit_block(Block* block) {
  for (size_t i = 0; i < block->num_arguments(); ++i)
    if (Value a = block->argument(i); is_tensor(a) && !dims_.count(a.impl())) dims_[a.impl()] = from_type(a);
  for (Operation* op : *block) visit(op);
}

void ShapeAnalysis::visit(Operation* op) {
  const std::string& name = op->name();
  auto in = [&](size_t i) {
    Value v = op->operand(i);
    auto it = v ? dims_.find(v.impl()) : dims_.end();
    if (it == dims_.end() && is_tensor(v)) it = dims_.emplace(v.impl(), from_type(v)).first;
    return it == dims_.end() ? std::vector<DimExpr>{} : it->second;
  };
  std::vector<std::vector<DimExpr>> res(op->num_results());
  // Static dims of the result types always win (the IR's inference already knows them).
  auto finish = [&] {
    for (size_t r = 0; r < op->num_results(); ++r) {
      Value v = op->result(r);
      if (!is_tensor(v)) continue;
      const std::vector<int64_t>& t = v.type().dims();
      std::vector<DimExpr>& d = res[r];
      if (d.size() != t.size()) d = from_type(v);
      for (size_t i = 0; i < t.size(); ++i)
        if (t[i] >= 0) d[i] = DimExpr::constant(t[i]);
      dims_[v.impl()] = d;
    }
  };
  if (op->num_results() == 0 || !is_tensor(op->result(0))) {
    for (size_t r = 0; r < op->num_regions(); ++r)
      for (size_t b = 0; b < op->region(r).size(); ++b) visit_block(op->region(r).block(b));
    return finish();
  }
  if (name == kFusionOp) {
    Block* body = op->region(0).front();
    for (size_t i = 0; i < body->num_arguments() && i < op->num_operands(); ++i)
      if (is_tensor(body->argument(i))) dims_[body->argument(i).impl()] = in(i);
    visit_block(body);
    const Operation* y = body->back();
    for (size_t r = 0; r < op->num_results() && y && r < y->num_operands(); ++r) res[r] = dims(y->operand(r));
    return finish();
  }
  if (elementwise_binary().count(name) && op->num_operands() >= 2) {
    const size_t rank = op->result(0).type().dims().size();
    std::vector<DimExpr> out(rank);
    for (size_t k = 0; k < op->num_operands(); ++k) {
      const std::vector<DimExpr> d = in(k);
      for (size_t j = 0; j < d.size() && j < rank; ++j) {
        DimExpr& o = out[rank - 1 - j];
        const DimExpr& x = d[d.size() - 1 - j];
        o = o.valid() ? bcast(o, x, op) : x;
      }
    }
    for (DimExpr& o : out)
      if (!o.valid()) o = fresh();
    res[0] = out;
  } else if (same_shape().count(name) && op->num_operands() >= 1) {
    res[0] = in(0);
  } else if (reductions().count(name) && has_attr(op, "axis") && has_attr(op, "keepdim")) {
    const std::vector<DimExpr> d = in(0);
    std::vector<int64_t> axis = ints_attr(op, "axis");
    const bool keep = bool_attr(op, "keepdim");
    const int64_t rank = static_cast<int64_t>(d.size());
    std::vector<bool> red(d.size(), axis.empty());
    for (int64_t a : axis)
      if (a >= -rank && a < rank) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
    for (size_t i = 0; i < d.size(); ++i) {
      if (!red[i])
        res[0].push_back(d[i]);
      else if (keep)
        res[0].push_back(DimExpr::constant(1));
    }
  } else if (name == "pd_op.reshape" || name == "pd_op.flatten") {
    const std::vector<DimExpr> d = in(0);
    const std::vector<int64_t>& t = op->result(0).type().dims();
    DimExpr total = DimExpr::constant(1);
    for (const DimExpr& e : d) total = DimExpr::mul(total, e);
    int64_t known = 1, unknown = 0;
    for (int64_t x : t) x >= 0 ? known *= x : ++unknown;
    if (unknown == 1 && known > 0) {
      for (int64_t x : t)
        res[0].push_back(x >= 0 ? DimExpr::constant(x) : DimExpr::div(total, DimExpr::constant(known)));
    }
  } else if (name == "pd_op.matmul" && op->num_operands() == 2) {
    std::vector<DimExpr> x = in(0), y = in(1);
    if (x.size() >= 2 && y.size() >= 2) {
      const bool tx = has_attr(op, "transpose_x") && bool_attr(op, "transpose_x");
      const bool ty = has_attr(op, "transpose_y") && bool_attr(op, "transpose_y");
      const DimExpr m = tx ? x[x.size() - 1] : x[x.size() - 2], kx = tx ? x[x.size() - 2] : x[x.size() - 1];
      const DimExpr ky = ty ? y[y.size() - 1] : y[y.size() - 2], n = ty ? y[y.size() - 2] : y[y.size() - 1];
      unify(kx, ky, op);
      const size_t bx = x.size() - 2, by = y.size() - 2, b = std::max(bx, by);
      for (size_t i = 0; i < b; ++i) {
        const bool hx = i + bx >= b, hy = i + by >= b;
        const DimExpr dx = hx ? x[i + bx - b] : DimExpr(), dy = hy ? y[i + by - b] : DimExpr();
        res[0].push_back(hx && hy ? bcast(dx, dy, op) : hx ? dx : dy);
      }
      res[0].push_back(m);
      res[0].push_back(n);
    }
  } else if (name == "pd_op.transpose" && has_attr(op, "perm")) {
    const std::vector<DimExpr> d = in(0);
    for (int64_t p : ints_attr(op, "perm"))
      if (p >= 0 && p < static_cast<int64_t>(d.size())) res[0].push_back(d[static_cast<size_t>(p)]);
  } else if (name == "pd_op.layer_norm" || name == "pd_op.batch_norm") {
    res[0] = in(0);
  }
  for (size_t r = 0; r < op->num_regions(); ++r)
    for (size_t b = 0; b < op->region(r).size(); ++b) visit_block(op->region(r).block(b));
  finish();
}

// ---- dumps and signatures

std::string symbol_name(int id) {
  std::string s(1, 'S');
  s += std::to_string(id);
  return s;
}

namespace {
void preorder(Block* block, std::vector<Operation*>& out) {
  for (Operation* op : *block) {
    out.push_back(op);
    for (size_t r = 0; r < op->num_regions(); ++r)
      for (size_t b = 0; b < op->region(r).size(); ++b) preorder(op->region(r).block(b), out);
  }
}
}  // namespace

std::string annotate_shapes(Program& program) { return annotate_shapes(program.str(), program.block(), nullptr); }

std::string annotate_shapes(const std::string& text, Block* block, Operation* anchor) {
  ShapeAnalysis a(block);
  std::vector<Operation*> ops;
  if (anchor) ops.push_back(anchor);  // printed in the generic form: its own line first
  preorder(block, ops);
  std::istringstream in(text);
  std::ostringstream out;
  size_t next = 0;
  for (std::string line; std::getline(in, line);) {
    // An op's line: "  %3 = "..." or "  %4, %5 = "..."; ops without results print as
    // "  "builtin.output"(...)". Both advance through the ops in printing order.
    const size_t p = line.find_first_not_of(' ');
    const bool defines = p != std::string::npos && line[p] == '%' && line.find(" = \"", p) != std::string::npos;
    const bool bare = p != std::string::npos && line[p] == '"';
    if ((defines || bare) && next < ops.size()) {
      Operation* op = ops[next++];
      std::string shapes;
      for (size_t r = 0; r < op->num_results(); ++r)
        if (is_tensor(op->result(r))) shapes += (shapes.empty() ? "" : ", ") + a.str(op->result(r));
      if (!shapes.empty()) line += "  // " + shapes;
    }
    out << line << "\n";
  }
  for (const std::string& s : a.assumptions()) out << "// assumed: " << s << "\n";
  return out.str();
}

std::string fusion_signature(const ShapeAnalysis& a, const Operation* fusion) {
  std::unordered_map<std::string, std::string> rename;
  auto one = [&](Value v) {
    std::string s;
    const std::vector<DimExpr> d = a.dims(v);
    for (size_t i = 0; i < d.size(); ++i) {
      std::string e = a.str(d[i]);
      // Rename every symbol token in order of first appearance.
      std::string o;
      for (size_t j = 0; j < e.size();) {
        if (e[j] == 'S' && j + 1 < e.size() && std::isdigit(static_cast<unsigned char>(e[j + 1]))) {
          size_t k = j + 1;
          while (k < e.size() && std::isdigit(static_cast<unsigned char>(e[k]))) ++k;
          const std::string sym = e.substr(j, k - j);
          auto it = rename.emplace(sym, symbol_name(static_cast<int>(rename.size()))).first;
          o += it->second;
          j = k;
        } else {
          o += e[j++];
        }
      }
      s += (i ? "x" : "") + o;
    }
    return d.empty() ? std::string("scalar") : s;
  };
  std::string s;
  for (size_t i = 0; i < fusion->num_operands(); ++i) s += (i ? ", " : "") + one(fusion->operand(i));
  s += " -> ";
  for (size_t i = 0; i < fusion->num_results(); ++i) s += (i ? ", " : "") + one(fusion->result(i));
  return s;
}

}  // namespace oar::cinn
