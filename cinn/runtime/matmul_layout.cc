// The `cinn_matmul_layout` stage (Note [Matmul output layout] in docs/notes/cinn.md):
//   %p = pd_op.matmul(%x, %y) {transpose_x, transpose_y}     (only use: the transpose)
//   %t = pd_op.transpose(%p) {perm}                           (perm keeps the last axis last)
// becomes
//   %t = kernel.compiled_kernel(%x, %y) {kernel_name = "cinn_matmul_nt_p0_2_1_3"}
// whose step writes the product straight into %t's contiguous layout (phi::matmul_into:
// each matrix's rows at %t's row stride), so that %t is contiguous and the reshapes after
// it are views instead of copies of a strided view (the attention backward's dQ, dK, dV:
// [b, h, L, d] products read as [b, L, h, d]).
#include <array>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cinn/pipeline.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/cpu/matmul_kernel.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"

namespace oar::cinn {
namespace {

using pir::Operation;

struct Layout {
  bool tx = false, ty = false;
  std::vector<int64_t> perm;
};

// Steps are plain function pointers: step<I> runs layout I (as the fused kernels' slots).
constexpr size_t kLayouts = 64;
std::array<Layout, kLayouts> g_layouts;
struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, size_t> by_name;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

void run_layout(const Layout& l, dispatch::KernelCall& call) {
  const DenseTensor& x = call.in(0);
  const DenseTensor& y = call.in(1);
  OAR_ENFORCE(call.ctx->place.type() == DeviceType::kCPU, Unimplemented,
              "cinn matmul layout step: runs on the CPU, the program runs on ", call.ctx->place.str());
  DenseTensor prod;  // the product's dims (matmul's shape rule, its errors)
  MatmulInferMeta(x, y, l.tx, l.ty, &prod);
  const size_t r = l.perm.size();
  OAR_ENFORCE(static_cast<size_t>(prod.rank()) == r, InvalidArgument, "cinn matmul layout step: the product of x ",
              x.dims(), " and y ", y.dims(), " has rank ", prod.rank(), ", the permutation ", Dims(l.perm), " rank ",
              r);
  std::vector<int64_t> od(r);
  for (size_t i = 0; i < r; ++i) od[i] = prod.dims()[l.perm[i]];
  DenseTensor out(Dims(od), x.dtype(), call.ctx->place);
  out.alloc();
  // The product's view of `out`: product axis perm[i] is out's axis i.
  std::vector<int64_t> st(r);
  for (size_t i = 0; i < r; ++i) st[l.perm[i]] = out.strides()[i];
  DenseTensor view = out;
  view.set_view(prod.dims(), Dims(st), out.offset());
  phi::matmul_into(x, y, l.tx, l.ty, &view);
  call.outputs.push_back(std::move(out));
}

template <size_t I>
void step(dispatch::KernelCall& call) {
  run_layout(g_layouts[I], call);
}
template <size_t... I>
constexpr std::array<dispatch::KernelStep, kLayouts> make_steps(std::index_sequence<I...>) {
  return {&step<I>...};
}
constexpr std::array<dispatch::KernelStep, kLayouts> kSteps = make_steps(std::make_index_sequence<kLayouts>{});

// The step's name for a layout, registered on first use; "" when every slot is taken.
std::string layout_step(const Layout& l) {
  std::string name = std::string("cinn_matmul_") + (l.tx ? "t" : "n") + (l.ty ? "t" : "n") + "_p";
  for (size_t i = 0; i < l.perm.size(); ++i) {
    if (i) name += '_';
    name += std::to_string(l.perm[i]);
  }
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (reg.by_name.count(name)) return name;
  const size_t slot = reg.by_name.size();
  if (slot >= kLayouts) return "";
  g_layouts[slot] = l;
  dispatch::register_kernel_step(name, {kSteps[slot], false, false, /*host_code=*/true});
  reg.by_name.emplace(name, slot);
  return name;
}

// The rewrite's conditions: a batched product (rank >= 3, both operands of rank >= 2 and
// one dtype) used only by a transpose that moves batch or row axes but keeps the columns
// innermost (perm[-1] == rank - 1: each matrix row stays contiguous).
bool fits(Operation* t, Operation* mm, Layout* l) {
  if (!mm || mm->name() != "pd_op.matmul" || !mm->result(0).has_one_use()) return false;
  const pir::Attribute p = t->attr("perm");
  if (!p.is(pir::AttrKind::kShape)) return false;
  const pir::Type x = mm->operand(0).type(), y = mm->operand(1).type(), o = mm->result(0).type();
  if (!x.is_tensor() || !y.is_tensor() || !o.is_tensor() || x.rank() < 2 || y.rank() < 2 || o.rank() < 3) return false;
  if (x.dtype() != y.dtype() || x.dtype() != o.dtype()) return false;
  const int64_t n = o.rank();
  if (static_cast<int64_t>(p.as_shape().size()) != n) return false;
  std::vector<int64_t> perm;
  std::vector<char> seen(n, 0);
  for (int64_t v : p.as_shape()) {
    const int64_t a = v < 0 ? v + n : v;
    if (a < 0 || a >= n || seen[a]) return false;
    seen[a] = 1;
    perm.push_back(a);
  }
  if (perm.back() != n - 1) return false;
  const pir::Attribute tx = mm->attr("transpose_x"), ty = mm->attr("transpose_y");
  l->tx = tx && tx.as_bool();
  l->ty = ty && ty.as_bool();
  l->perm = std::move(perm);
  return true;
}

class MatmulLayoutPass : public pir::Pass {
 public:
  MatmulLayoutPass() : Pass("cinn_matmul_layout") {}
  bool run(Operation* anchor) override {
    if (!op_allowed("pd_op.matmul")) return false;  // FLAGS_deny_cinn_ops=matmul: products stay the op
    std::vector<Operation*> ts;
    anchor->walk([&](Operation* op) {
      if (op->name() == "pd_op.transpose") ts.push_back(op);
    });
    bool changed = false;
    for (Operation* t : ts) {
      Operation* mm = t->operand(0).defining_op();
      Layout l;
      if (!fits(t, mm, &l)) continue;
      const std::string name = layout_step(l);
      if (name.empty()) continue;
      pir::Builder b(t->info()->ctx);
      b.set_insertion_point(t);
      Operation* k = b.build("kernel.compiled_kernel", {mm->operand(0), mm->operand(1)},
                             {{"kernel_name", t->info()->ctx->str_attr(name)}}, {t->result(0).type()});
      t->replace_all_uses_with(k->results());
      t->erase();
      mm->erase();
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<pir::Pass> create_matmul_layout_pass() { return std::make_unique<MatmulLayoutPass>(); }

}  // namespace oar::cinn
