// Rewrites of a loop kernel's reductions before code generation (Note [Reduction sweeps]
// in docs/notes/cinn.md). The code generator puts every reduction whose operand is
// computable into one sweep over the row; these rewrites remove the dependencies that
// would force a second sweep. share_erf_exp (Note [erf shares exp]) is the one rewrite
// of elementwise nodes.
#include "cinn/schedule/loop_ir.h"

#include <cmath>
#include <utility>
#include <vector>

namespace oar::cinn {
namespace {

// The rewrites change nodes in place to read nodes appended after them; the loop IR's
// invariant (loop_ir.h: nodes in dependency order, operands before their users) is
// restored by a stable topological renumbering: each node after its operands, otherwise
// in its old order.
void restore_dependency_order(LoopKernel& k) {
  const int n = static_cast<int>(k.nodes.size());
  std::vector<int> order, state(n, 0);     // 0 new, 1 on the stack, 2 placed
  std::vector<std::pair<int, int>> stack;  // node, next operand to visit (0: a, 1: b, 2: c, 3: done)
  for (int root = 0; root < n; ++root) {
    if (state[root]) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& x = k.nodes[id];
      const int opnd = next == 0 ? x.a : next == 1 ? x.b : next == 2 ? x.c : -2;
      if (opnd == -2) {
        state[id] = 2;
        order.push_back(id);
        stack.pop_back();
        continue;
      }
      ++next;
      if (opnd >= 0 && state[opnd] == 0) {
        state[opnd] = 1;
        stack.push_back({opnd, 0});
      }
    }
  }
  std::vector<int> where(n);
  for (int i = 0; i < n; ++i) where[order[i]] = i;
  std::vector<Node> nodes;
  nodes.reserve(n);
  for (int id : order) {
    Node x = k.nodes[id];
    if (x.a >= 0) x.a = where[x.a];
    if (x.b >= 0) x.b = where[x.b];
    if (x.c >= 0) x.c = where[x.c];
    nodes.push_back(std::move(x));
  }
  k.nodes = std::move(nodes);
  for (int& o : k.outputs) o = where[o];
}

// The sum a row mean `m` divides, or -1: `divc(s)` (a dynamic column count), or, with
// static columns C, `mul(s, 1/C)` / `mul(1/C, s)` (the decomposition folds the count into a
// constant), the constant equal to 1/C as the decomposition rounds it.
int mean_operand(const LoopKernel& k, int m) {
  const Node& M = k.nodes[m];
  if (M.kind == Node::kUnary && M.op == "divc") return M.a;
  const int64_t cols = k.space.empty() ? -1 : k.space.back();
  if (M.kind != Node::kBinary || M.op != "mul" || cols <= 0) return -1;
  const double inv = 1.0 / static_cast<double>(cols);
  const double inv_rounded = k.dtype == DataType::FLOAT64 ? inv : static_cast<double>(static_cast<float>(inv));
  auto is_inv = [&](int c) {
    const Node& n = k.nodes[c];
    return n.kind == Node::kConst && (n.value == inv || n.value == inv_rounded);
  };
  if (is_inv(M.b)) return M.a;
  if (is_inv(M.a)) return M.b;
  return -1;
}

}  // namespace

int one_pass_variance(LoopKernel& k) {
  int rewrites = 0;
  auto add = [&](Node n) {
    k.nodes.push_back(std::move(n));
    return static_cast<int>(k.nodes.size()) - 1;
  };
  auto node = [&](Node::Kind kind, const char* op, int a, int b, VClass cls) {
    Node n;
    n.kind = kind;
    n.op = op;
    n.a = a;
    n.b = b;
    n.cls = cls;
    return add(n);
  };
  const size_t n0 = k.nodes.size();
  for (size_t s2 = 0; s2 < n0; ++s2) {
    // s2 = sum(q), q = d * d, d = x - m, m = divc(s1) or s1 * (1/C), s1 = sum(x), x full.
    const Node& S2 = k.nodes[s2];
    if (S2.kind != Node::kReduce || S2.op != "sum" || S2.cls != VClass::kRow) continue;
    const Node& Q = k.nodes[S2.a];
    if (Q.kind != Node::kBinary || Q.op != "mul" || Q.a != Q.b) continue;
    const Node& D = k.nodes[Q.a];
    if (D.kind != Node::kBinary || D.op != "sub" || k.nodes[D.a].cls != VClass::kFull) continue;
    const int x = D.a, m = D.b;
    const int s1 = mean_operand(k, m);
    if (s1 < 0) continue;
    const Node& S1 = k.nodes[s1];
    if (S1.kind != Node::kReduce || S1.op != "sum" || S1.cls != VClass::kRow || S1.a != x) continue;
    const int kk = node(Node::kUnary, "first", x, -1, VClass::kRow);
    const int y = node(Node::kBinary, "sub", x, kk, VClass::kFull);
    const int a = node(Node::kReduce, "sum", y, -1, VClass::kRow);
    const int b = node(Node::kReduce, "sum", node(Node::kBinary, "mul", y, y, VClass::kFull), -1, VClass::kRow);
    const int t = node(Node::kUnary, "divc", node(Node::kBinary, "mul", a, a, VClass::kRow), -1, VClass::kRow);
    const int v = node(Node::kBinary, "sub", b, t, VClass::kRow);
    Node zero;
    zero.kind = Node::kConst;
    zero.cls = VClass::kScalar;
    const int z = add(zero);
    // In place (their consumers keep their operand indices): the variance's sum and the
    // mean; s1 itself stays for other readers (the code generator skips it when dead).
    const int mean = node(Node::kUnary, "divc", a, -1, VClass::kRow);
    Node& s2n = k.nodes[s2];
    s2n = Node();
    s2n.kind = Node::kBinary;
    s2n.op = "max";
    s2n.a = v;
    s2n.b = z;
    s2n.cls = VClass::kRow;
    Node& mn = k.nodes[m];
    mn = Node();
    mn.kind = Node::kBinary;
    mn.op = "add";
    mn.a = mean;
    mn.b = kk;
    mn.cls = VClass::kRow;
    ++rewrites;
  }
  if (rewrites) restore_dependency_order(k);
  return rewrites;
}

namespace {

// Node `n` as c * x for a node x and a constant c: through multiplies by constants
// (x itself with c = 1 otherwise).
std::pair<int, double> linear_of(const LoopKernel& k, int n) {
  double c = 1.0;
  for (;;) {
    const Node& x = k.nodes[n];
    if (x.kind != Node::kBinary || x.op != "mul") return {n, c};
    if (k.nodes[x.b].kind == Node::kConst) {
      c *= k.nodes[x.b].value;
      n = x.a;
    } else if (k.nodes[x.a].kind == Node::kConst) {
      c *= k.nodes[x.a].value;
      n = x.b;
    } else {
      return {n, c};
    }
  }
}

// Node `n` as q * x^2 (a product of two linear forms of one node x, times constants,
// perhaps negated), or {-1, 0}.
std::pair<int, double> square_of(const LoopKernel& k, int n) {
  const Node& x = k.nodes[n];
  if (x.kind == Node::kUnary && x.op == "neg") {
    auto [b, q] = square_of(k, x.a);
    return {b, -q};
  }
  if (x.kind != Node::kBinary || x.op != "mul") return {-1, 0.0};
  for (auto [c, v] : {std::pair{x.a, x.b}, std::pair{x.b, x.a}})
    if (k.nodes[c].kind == Node::kConst) {
      auto [b, q] = square_of(k, v);
      return {b, q * k.nodes[c].value};
    }
  auto [ba, ca] = linear_of(k, x.a);
  auto [bb, cb] = linear_of(k, x.b);
  return ba == bb ? std::pair{ba, ca * cb} : std::pair{-1, 0.0};
}

}  // namespace

// Note [erf shares exp] (docs/notes/cinn.md): float32 erf(z) is computed from exp(-z^2)
// (Abramowitz & Stegun 7.1.26). When the kernel also computes exp(u) with u = -z^2 up to
// the constants' rounding (GELU's backward: erf(x / sqrt2) and the density's
// exp(-x^2 / 2)), erf(z) becomes the binary `erfe`(z, that exp): one exp per element less.
int share_erf_exp(LoopKernel& k) {
  if (k.dtype == DataType::FLOAT64) return 0;  // float64 erf is SLEEF's, no exp inside
  int rewrites = 0;
  for (size_t e = 0; e < k.nodes.size(); ++e) {
    const Node& E = k.nodes[e];
    if (E.kind != Node::kUnary || E.op != "erf") continue;
    auto [z, c] = linear_of(k, E.a);
    if (c == 0.0 || !std::isfinite(c)) continue;
    for (size_t x = 0; x < k.nodes.size(); ++x) {
      const Node& X = k.nodes[x];
      if (X.kind != Node::kUnary || X.op != "exp" || X.cls != E.cls) continue;
      auto [b, q] = square_of(k, X.a);
      if (b != z || std::abs(q + c * c) > 1e-6 * c * c) continue;
      Node& en = k.nodes[e];
      en.kind = Node::kBinary;
      en.op = "erfe";
      en.b = static_cast<int>(x);
      ++rewrites;
      break;
    }
  }
  if (rewrites) restore_dependency_order(k);
  return rewrites;
}

}  // namespace oar::cinn
