#include "paddle_core/tensor/tensor.h"

#include "paddle_core/autograd/node.h"
#include "paddle_core/autograd/view.h"

namespace oar {

TensorImpl::TensorImpl(DenseTensor d) : dense(std::move(d)) {}
TensorImpl::~TensorImpl() = default;

void Tensor::sync_view() const {
  if (impl_->view->replay && impl_->view->version != version()) autograd::sync_view_history(*this);
}

bool Tensor::stop_gradient() const {
  if (impl_->view) [[unlikely]] sync_view();
  return impl_->autograd == nullptr || impl_->autograd->stop_gradient;
}

void Tensor::set_stop_gradient(bool v) const {
  if (v && impl_->autograd == nullptr) return;
  ensure_autograd_meta().stop_gradient = v;
}

AutogradMeta& Tensor::ensure_autograd_meta() const {
  if (!impl_->autograd) impl_->autograd = std::make_unique<AutogradMeta>();
  return *impl_->autograd;
}

const std::shared_ptr<GradNode>& Tensor::grad_fn() const {
  static const std::shared_ptr<GradNode> kNone;
  if (impl_->view) [[unlikely]] sync_view();
  return impl_->autograd ? impl_->autograd->grad_fn : kNone;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

Tensor Tensor::grad() const {
  if (!impl_->autograd || !impl_->autograd->grad) return Tensor();
  if (impl_->autograd->grad_zero_pending) [[unlikely]]
    autograd::settle_grad_zeros(*impl_->autograd);
  return Tensor(impl_->autograd->grad);
}

uint32_t Tensor::version() const {
  const auto& s = impl_->dense.storage();
  return s ? s->version() : 0;
}

void Tensor::bump_version() const {
  const auto& s = impl_->dense.storage();
  if (s) s->bump_version();
}

}  // namespace oar
