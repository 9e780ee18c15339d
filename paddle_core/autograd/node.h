// The autograd graph. Each differentiable op call creates one GradNode whose
// apply() maps gradients of the op's outputs to gradients of its inputs; its
// next_edges point at the nodes that produced those inputs. Leaves end in an
// AccumulateGrad node that adds into Tensor::grad(). Generated nodes (one per op
// with a backward rule) call differentiable ops, so the graph of a backward pass
// can itself be differentiated (create_graph). See Note [Autograd] in docs/notes/autograd.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "paddle_core/tensor/tensor.h"

namespace oar {

class GradNode;

struct Edge {
  std::shared_ptr<GradNode> node;
  uint32_t input_nr = 0;  // which gradient input of `node` this edge feeds
  bool valid() const { return node != nullptr; }
};

using GradHook = std::function<Tensor(const Tensor&)>;

struct AutogradMeta {
  bool stop_gradient = true;
  std::shared_ptr<GradNode> grad_fn;  // null for leaves
  uint32_t output_nr = 0;             // which output of grad_fn this tensor is
  std::shared_ptr<TensorImpl> grad;   // accumulated gradient (leaves, or retain_grads)
  // clear_gradient(set_to_zero=True) left grad's bytes to be zeroed when first read
  // (Note [Deferred zeroing of .grad], node.cc): read grad through Tensor::grad().
  bool grad_zero_pending = false;
  std::weak_ptr<GradNode> grad_accumulator;
  std::shared_ptr<GradNode> hooked_accumulator;  // keeps a leaf's hooks alive
  bool retain_grads = false;
};

/// Metadata of a forward output, to make zeros when its gradient never arrives.
struct OutputMeta {
  Dims dims;
  DataType dtype = DataType::UNDEFINED;
  Place place;
};

class GradNode : public std::enable_shared_from_this<GradNode> {
 public:
  GradNode();
  virtual ~GradNode() = default;
  /// grads[i] is the gradient of forward output i (undefined if none arrived and the
  /// node declared it may be undefined). Returns one gradient per next edge.
  virtual std::vector<Tensor> apply(std::vector<Tensor>& grads) = 0;
  virtual const char* name() const = 0;
  /// Frees saved tensors after backward (unless retain_graph).
  virtual void release_saved() {}
  /// Whether the engine passes zeros (true) or undefined tensors for the gradients of
  /// outputs that no gradient reached (PyLayerContext.set_materialize_grads).
  virtual bool materialize_grads() const { return true; }

  uint64_t sequence_nr() const { return sequence_nr_; }
  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
  bool released() const { return released_; }
  void mark_released() { released_ = true; }

  /// Adds a hook on the gradient of forward output `output_nr`; returns its id.
  int64_t add_pre_hook(uint32_t output_nr, GradHook hook);
  bool remove_pre_hook(int64_t id);
  /// Runs the hooks registered for output `output_nr` on `grad`.
  Tensor run_pre_hooks(uint32_t output_nr, Tensor grad) const;

  std::vector<Edge> next_edges;
  std::vector<OutputMeta> output_meta;

 private:
  uint64_t sequence_nr_;
  bool released_ = false;
  struct Hook {
    int64_t id;
    uint32_t output_nr;
    GradHook fn;
  };
  std::vector<Hook> hooks_;
};

/// The node that adds incoming gradients into a leaf tensor's .grad.
class AccumulateGrad : public GradNode {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> var);
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override;
  const char* name() const override { return "AccumulateGrad"; }
  const std::shared_ptr<TensorImpl>& variable() const { return var_; }

 private:
  std::shared_ptr<TensorImpl> var_;
};

namespace autograd {

/// The edge gradients of `t` flow into: (grad_fn, output_nr), or the leaf's accumulator.
/// Invalid edge when t does not require grad.
Edge gradient_edge(const Tensor& t);
/// True when grad mode is on and any of the tensors requires grad.
bool any_requires_grad(std::initializer_list<const Tensor*> ts);
bool any_requires_grad(const std::vector<Tensor>& ts);
/// Makes `out` the output `output_nr` of `node` (and makes it require grad).
void set_history(const Tensor& out, const std::shared_ptr<GradNode>& node, uint32_t output_nr);
/// Adds `src` into `acc` (out of place, differentiable when grad mode is on).
Tensor accumulate(const Tensor& acc, const Tensor& src);
/// clear_gradient(set_to_zero=True) on `t`: .grad reads as zeros afterwards. The zeros are
/// written now, or when .grad is next read where nothing else can see its bytes (Note
/// [Deferred zeroing of .grad]).
void clear_grad_to_zero(TensorImpl& t);
/// Writes the zeros a deferred clear left pending (Tensor::grad() calls it).
void settle_grad_zeros(AutogradMeta& meta);
/// Whether every byte of a contiguous host tensor is 0 (every float +0), scanned in blocks
/// with an early exit: AccumulateGrad's zeroed-gradient test and Tensor._zero_bytes.
bool all_bytes_zero(const DenseTensor& t);

}  // namespace autograd

/// A pack/unpack pair of oar.autograd.saved_tensors_hooks: while one is active on a
/// thread, every SavedTensor made there (but metadata-only ones) keeps only what pack
/// returned, and its unpack turns that back into the tensor when the backward reads it.
class SavedTensorHooks {
 public:
  virtual ~SavedTensorHooks() = default;
  virtual std::shared_ptr<void> pack(const Tensor& t) = 0;
  virtual Tensor unpack(const std::shared_ptr<void>& packed) = 0;
};

namespace autograd {
/// The innermost active pair on this thread (null when none: the common case).
const std::shared_ptr<SavedTensorHooks>& saved_tensor_hooks();
/// Enters / leaves a saved_tensors_hooks context on this thread (they nest).
void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks);
void pop_saved_tensor_hooks();
}  // namespace autograd

/// A tensor saved by a forward op for its backward. Outputs are stored without their
/// autograd meta (the node would own itself otherwise) and re-linked on unpack.
/// Unpacking checks that no in-place op changed the tensor after it was saved.
/// `metadata_only` (the inputs of view ops, whose backward reads only shapes): stored
/// without autograd meta, unpacked without history, never version-checked, so writing
/// into a view's base in place stays legal.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output, bool metadata_only = false);
  Tensor unpack(const GradNode* owner) const;
  void reset() {
    data_.reset();
    packed_.reset();
  }
  bool defined() const { return data_ != nullptr || packed_ != nullptr; }

 private:
  Tensor unpack_hooked(const GradNode* owner) const;
  std::shared_ptr<TensorImpl> data_;
  std::shared_ptr<SavedTensorHooks> hooks_;  // saved under saved_tensors_hooks: data_ is null
  std::shared_ptr<void> packed_;             // and this is what hooks_->pack returned
  std::weak_ptr<GradNode> grad_fn_;  // outputs: the producing node (the owner)
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool metadata_only_ = false;
  bool requires_grad_ = false;
  bool was_defined_ = false;
};

}  // namespace oar
