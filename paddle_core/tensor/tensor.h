// Tensor: the user-facing handle (what oar.Tensor wraps). It owns a TensorImpl that
// holds the DenseTensor data and, when autograd is involved, an AutogradMeta.
// Copying a Tensor copies the handle, not the data. The handle sits with the tensor
// types so that every layer above (dispatch, kernels' callers, autograd, api) can name
// it; its autograd methods are defined in paddle_core/autograd/tensor.cc.
#pragma once

#include <memory>
#include <string>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar {

class GradNode;
struct AutogradMeta;
class ViewReplay;
struct TensorImpl;

/// A distributed tensor's metadata (mesh, placements, global shape), owned by the
/// tensor. The core only holds and frees it: distributed/ derives the real type
/// (oar::dist::DistTensorMeta), since paddle_core must not include distributed/.
struct DistMeta {
  virtual ~DistMeta() = default;
};

/// What a view tensor knows about its base (see paddle_core/autograd/view.h).
struct ViewMeta {
  std::shared_ptr<TensorImpl> base;  // the tensor owning the memory; never a view
  /// base -> this view; null for views made in no_grad mode, which stay detached.
  std::shared_ptr<const ViewReplay> replay;
  uint32_t version = 0;  // storage version when this view's history was last made
};

struct TensorImpl {
  explicit TensorImpl(DenseTensor d);
  ~TensorImpl();
  DenseTensor dense;
  std::unique_ptr<AutogradMeta> autograd;  // null until autograd needs it
  // Set by view ops. Behind a pointer: inline, it made every tensor (most are no view)
  // measurably slower to create.
  std::unique_ptr<ViewMeta> view;
  // Set on distributed tensors only (dense is then the local shard); one null pointer
  // for every other tensor.
  std::unique_ptr<DistMeta> dist;
  std::string name;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  explicit Tensor(DenseTensor d) : impl_(std::make_shared<TensorImpl>(std::move(d))) {}

  bool defined() const { return impl_ != nullptr; }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  const DenseTensor& dense() const { return impl_->dense; }
  DenseTensor* mutable_dense() const { return &impl_->dense; }

  const Dims& dims() const { return impl_->dense.dims(); }
  int rank() const { return impl_->dense.rank(); }
  int64_t numel() const { return impl_->dense.numel(); }
  DataType dtype() const { return impl_->dense.dtype(); }
  const Place& place() const { return impl_->dense.place(); }

  // Autograd view of the tensor (see paddle_core/autograd/).
  bool stop_gradient() const;
  void set_stop_gradient(bool v) const;
  bool requires_grad() const { return !stop_gradient(); }
  AutogradMeta* autograd_meta() const { return impl_ ? impl_->autograd.get() : nullptr; }
  AutogradMeta& ensure_autograd_meta() const;
  const std::shared_ptr<GradNode>& grad_fn() const;
  bool is_leaf() const;
  /// The accumulated gradient (undefined Tensor when none).
  Tensor grad() const;
  /// The version counter of the underlying storage.
  uint32_t version() const;
  void bump_version() const;

  bool same_impl(const Tensor& o) const { return impl_ == o.impl_; }
  /// True when this tensor is a view sharing memory with a base tensor.
  bool is_view() const { return impl_->view != nullptr; }

 private:
  /// Views: remakes the autograd history when an in-place write made it stale.
  void sync_view() const;

  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace oar
