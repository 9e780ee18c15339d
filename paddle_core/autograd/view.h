// Views and in-place ops in autograd: a view remembers its base and how to remake it
// from the base, so an in-place op on the view can rewrite the base's history
// (CopySlices) and the view's own history can be remade from the base afterwards.
// See Note [Views and in-place ops] in docs/notes/autograd.md.
#pragma once

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"

namespace oar {

/// Replays a chain of view ops: applied to the base (or any tensor shaped like it),
/// it returns the view. Made of differentiable ops, so replaying a gradient gives
/// the gradient of the view's region, with history when grad mode is on.
class ViewReplay {
 public:
  explicit ViewReplay(std::shared_ptr<const ViewReplay> prev) : prev_(std::move(prev)) {}
  virtual ~ViewReplay() = default;
  Tensor replay(const Tensor& base) const { return step(prev_ ? prev_->replay(base) : base); }

 private:
  virtual Tensor step(const Tensor& input) const = 0;
  std::shared_ptr<const ViewReplay> prev_;  // the views before this one (null: from the base)
};

namespace autograd {

namespace detail {
template <typename F>
class ViewStep final : public ViewReplay {
 public:
  ViewStep(std::shared_ptr<const ViewReplay> prev, F f)
      : ViewReplay(std::move(prev)), f_(std::move(f)) {}

 private:
  Tensor step(const Tensor& input) const override { return f_(input); }
  F f_;
};
/// Fills out's ViewMeta; a null `step` makes an untracked view.
void attach_view_meta(const Tensor& input, const Tensor& out,
                      std::shared_ptr<const ViewReplay> step);
}  // namespace detail

/// An int[] attribute kept by a view's replay step, inline (no heap allocation) when
/// it fits kMaxRank entries, as every view op's attributes do when the op succeeded.
class CapturedInts {
 public:
  explicit CapturedInts(const std::vector<int64_t>& v) : n_(v.size()) {
    if (n_ <= static_cast<size_t>(kMaxRank)) {
      std::copy(v.begin(), v.end(), small_);
    } else {
      big_ = std::make_unique<std::vector<int64_t>>(v);
    }
  }
  CapturedInts(const CapturedInts& o) : n_(o.n_) {
    std::copy(o.small_, o.small_ + (o.big_ ? 0 : n_), small_);
    if (o.big_) big_ = std::make_unique<std::vector<int64_t>>(*o.big_);
  }
  CapturedInts(CapturedInts&&) = default;
  std::vector<int64_t> vec() const {
    return big_ ? *big_ : std::vector<int64_t>(small_, small_ + n_);
  }

 private:
  size_t n_;
  int64_t small_[kMaxRank];
  std::unique_ptr<std::vector<int64_t>> big_;
};

/// Called by every view op: when `out` shares `input`'s memory, records that `out` is
/// a view of input's base, remade from input by `op(input)`.
/// Views made in no_grad mode (or of such views) stay detached and record only their
/// base: backward passes and optimizer steps make many views.
template <typename F>
void record_view(const Tensor& input, const Tensor& out, F op) {
  const auto& s = input.dense().storage();
  if (!s || out.dense().storage() != s) return;  // a copy (reshape that could not view)
  const ViewMeta* in = input.impl()->view.get();
  std::shared_ptr<const ViewReplay> step;
  if (grad_enabled() && (!in || in->replay)) {
    step = std::make_shared<detail::ViewStep<F>>(in ? in->replay : nullptr, std::move(op));
  }
  detail::attach_view_meta(input, out, std::move(step));
}

/// Remakes the history of view `v` from its base when an in-place write (to the base
/// or to any view of it) happened since the history was made. Tensor::stop_gradient()
/// and grad_fn() call it, so every user of a view sees current history.
void sync_view_history(const Tensor& v);

/// In-place ops on views: `v` (a view) was overwritten with `result`. Makes the base's
/// history a CopySlices node: the base is now its old value outside v's region and
/// `result` inside it.
void rebase_view_history(const Tensor& v, const Tensor& result, const char* op);

/// Raises (before anything is written) when writing `result` into view `v` in place
/// cannot be recorded: v's base is a leaf that requires grad, or v was made in no_grad
/// mode and the write needs grad.
void check_view_inplace(const Tensor& v, const Tensor* result, const char* op);

}  // namespace autograd

/// The gradient of an in-place op on a view, seen from the base: grad flows to the
/// base's previous history outside the view's region (edge 0) and to the value
/// written into the region (edge 1).
class CopySlices final : public GradNode {
 public:
  CopySlices(std::shared_ptr<const ViewReplay> replay, const DenseTensor& base);
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override;
  const char* name() const override { return "CopySlices"; }

 private:
  std::shared_ptr<const ViewReplay> replay_;  // base -> view (holds no tensor: no cycles)
  Dims dims_, strides_;  // the base's layout, so the replay views what it viewed on the base
};

}  // namespace oar
