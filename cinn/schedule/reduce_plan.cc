// Rewrites of a loop kernel's reductions before code generation (Note [Reduction sweeps]
// in docs/notes/cinn.md). The code generator puts every reduction whose operand is
// computable into one sweep over the row; these rewrites remove the dependencies that
// would force a second sweep.
#include "cinn/schedule/loop_ir.h"

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
  std::vector<std::pair<int, int>> stack;  // node, next operand to visit (0: a, 1: b, 2: done)
  for (int root = 0; root < n; ++root) {
    if (state[root]) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const Node& x = k.nodes[id];
      const int opnd = next == 0 ? x.a : next == 1 ? x.b : -2;
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
    nodes.push_back(std::move(x));
  }
  k.nodes = std::move(nodes);
  for (int& o : k.outputs) o = where[o];
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
    // s2 = sum(q), q = d * d, d = x - m, m = divc(s1), s1 = sum(x), x full.
    const Node& S2 = k.nodes[s2];
    if (S2.kind != Node::kReduce || S2.op != "sum") continue;
    const Node& Q = k.nodes[S2.a];
    if (Q.kind != Node::kBinary || Q.op != "mul" || Q.a != Q.b) continue;
    const Node& D = k.nodes[Q.a];
    if (D.kind != Node::kBinary || D.op != "sub" || k.nodes[D.a].cls != VClass::kFull) continue;
    const int x = D.a, m = D.b;
    const Node& M = k.nodes[m];
    if (M.kind != Node::kUnary || M.op != "divc") continue;
    const Node& S1 = k.nodes[M.a];
    if (S1.kind != Node::kReduce || S1.op != "sum" || S1.a != x) continue;
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

}  // namespace oar::cinn
