#include "paddle_core/autograd/view.h"

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/grad_mode.h"

namespace oar {

namespace autograd {

namespace detail {
void attach_view_meta(const Tensor& input, const Tensor& out,
                      std::shared_ptr<const ViewReplay> step) {
  const ViewMeta* in = input.impl()->view.get();
  auto meta = std::make_unique<ViewMeta>();
  meta->base = in ? in->base : input.impl();
  meta->replay = std::move(step);
  meta->version = out.version();
  out.impl()->view = std::move(meta);
}
}  // namespace detail

void sync_view_history(const Tensor& v) {
  ViewMeta& vm = *v.impl()->view;
  const uint32_t now = v.version();
  if (vm.version == now) return;
  vm.version = now;
  Tensor base(vm.base);
  if (base.stop_gradient()) return;  // nothing to remake (the base is never a view)
  GradModeGuard on(true);
  Tensor r = vm.replay->replay(base);
  AutogradMeta& meta = v.ensure_autograd_meta();
  meta.stop_gradient = false;
  meta.grad_fn = r.grad_fn();
  meta.output_nr = r.autograd_meta()->output_nr;
}

void check_view_inplace(const Tensor& v, const Tensor* result, const char* op) {
  const ViewMeta& vm = *v.impl()->view;
  Tensor base(vm.base);
  const bool recorded =
      grad_enabled() && (!base.stop_gradient() || (result && result->requires_grad()));
  if (!recorded) return;
  OAR_ENFORCE(!(base.is_leaf() && base.requires_grad()), PreconditionNotMet, op,
              ": a view of a leaf tensor that requires grad (stop_gradient=False) cannot be "
              "modified in place; write into a copy, or wrap the update in oar.no_grad()");
  OAR_ENFORCE(vm.replay != nullptr, PreconditionNotMet, op,
              ": this view was made in no_grad mode, so an in-place write to it cannot be "
              "recorded for autograd; make the view with grad mode on, or write under "
              "oar.no_grad()");
}

void rebase_view_history(const Tensor& v, const Tensor& result, const char* op) {
  Tensor base(v.impl()->view->base);
  if (!grad_enabled() || (base.stop_gradient() && !result.requires_grad())) return;
  check_view_inplace(v, &result, op);
  auto node = std::make_shared<CopySlices>(v.impl()->view->replay, base.dense());
  node->next_edges.push_back(gradient_edge(base));
  node->next_edges.push_back(gradient_edge(result));
  set_history(base, node, 0);
  // v (and every other view of base) is now older than the storage version, so its
  // history is remade from the new base history on next use (sync_view_history).
}

}  // namespace autograd

CopySlices::CopySlices(std::shared_ptr<const ViewReplay> replay, const DenseTensor& base)
    : replay_(std::move(replay)), dims_(base.dims()), strides_(base.strides()) {}

std::vector<Tensor> CopySlices::apply(std::vector<Tensor>& grads) {
  const Tensor& g = grads[0];
  std::vector<Tensor> out(2);
  if (!g.defined()) return out;
  if (needs_input_grad(0) && g.numel() == 0) out[0] = g;
  if (needs_input_grad(0) && g.numel() > 0) {
    // The old base is overwritten inside the view's region: grad * mask, the mask 0
    // there and 1 elsewhere. The mask has the base's own layout, so replaying the view
    // ops on it views exactly the elements the view saw (a reshape that viewed the
    // base also views the mask).
    Tensor mask;
    {
      autograd::GradModeGuard off(false);
      int64_t lo = 0, hi = 0;  // element range the base's layout spans, from its first element
      for (int i = 0; i < dims_.size(); ++i)
        (strides_[i] < 0 ? lo : hi) += (dims_[i] - 1) * strides_[i];
      DenseTensor m;
      m.set_dtype(g.dtype());
      m.set_place(g.place());
      m.set_storage(std::make_shared<Storage>((hi - lo + 1) * size_of(g.dtype()), g.place()), -lo);
      m.set_view(dims_, strides_, -lo);
      copy_into(ops::full(dims_.vec(), Scalar(1), g.dtype(), g.place()).dense(), &m);
      mask = Tensor(std::move(m));
      Tensor region = replay_->replay(mask);
      OAR_ENFORCE(region.dense().storage() == mask.dense().storage(), Internal,
                  "CopySlices: replaying the view ops did not give a view");
      copy_into(ops::full(region.dims().vec(), Scalar(0), g.dtype(), g.place()).dense(),
                region.mutable_dense());
    }
    out[0] = ops::multiply(g, mask);
  }
  if (needs_input_grad(1)) out[1] = replay_->replay(g);
  return out;
}

}  // namespace oar
