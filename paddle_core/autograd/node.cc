#include "paddle_core/autograd/node.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/accumulate_hooks.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/dispatch/dispatch.h"
#include "paddle_core/dispatch/trace.h"

namespace oar {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
std::atomic<int64_t> g_next_hook_id{1};
thread_local bool t_grad_enabled = true;
// The active saved_tensors_hooks contexts of this thread, innermost last; `t_hooks_top`
// mirrors the last one so that saving a tensor costs one thread-local load when none is.
thread_local std::vector<std::shared_ptr<SavedTensorHooks>> t_hooks_stack;
thread_local std::shared_ptr<SavedTensorHooks> t_hooks_top;
}  // namespace

namespace autograd {
const std::shared_ptr<SavedTensorHooks>& saved_tensor_hooks() { return t_hooks_top; }

void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks) {
  t_hooks_stack.push_back(hooks);
  t_hooks_top = std::move(hooks);
}

void pop_saved_tensor_hooks() {
  OAR_ENFORCE(!t_hooks_stack.empty(), PreconditionNotMet,
              "saved_tensors_hooks: leaving a context that was never entered");
  t_hooks_stack.pop_back();
  t_hooks_top = t_hooks_stack.empty() ? nullptr : t_hooks_stack.back();
}
}  // namespace autograd

namespace autograd {
bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }
}  // namespace autograd

GradNode::GradNode() : sequence_nr_(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

int64_t GradNode::add_pre_hook(uint32_t output_nr, GradHook hook) {
  int64_t id = g_next_hook_id.fetch_add(1);
  hooks_.push_back({id, output_nr, std::move(hook)});
  return id;
}

bool GradNode::remove_pre_hook(int64_t id) {
  for (auto it = hooks_.begin(); it != hooks_.end(); ++it) {
    if (it->id == id) {
      hooks_.erase(it);
      return true;
    }
  }
  return false;
}

Tensor GradNode::run_pre_hooks(uint32_t output_nr, Tensor grad) const {
  for (const auto& h : hooks_) {
    if (h.output_nr != output_nr || !grad.defined()) continue;
    if (!autograd::grad_enabled() && !grad.autograd_meta() && !grad.impl()->dist) {
      // A hook sees the engine's gradient as Paddle shows it (stop_gradient=False), on a
      // new handle: a tensor the caller passed in (backward's grad_tensor) keeps its flag.
      Tensor shown(grad.dense());
      shown.set_stop_gradient(false);
      grad = shown;
    }
    Tensor r = h.fn(grad);
    if (r.defined()) grad = r;
  }
  return grad;
}

namespace {
// Whether g may stand in for prev + g when prev is zeros: plain dense CPU tensors of one
// dtype and shape.
bool zero_like(const Tensor& prev, const Tensor& g) {
  const DenseTensor& p = prev.dense();
  const DenseTensor& d = g.dense();
  if (prev.impl()->dist || g.impl()->dist || !p.place().is_cpu() || !d.place().is_cpu()) return false;
  return p.dtype() == d.dtype() && p.dims() == d.dims() && p.is_contiguous() && p.numel() > 0;
}

}  // namespace

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> var) : var_(std::move(var)) {
  const auto& d = var_->dense;
  output_meta.push_back({d.dims(), d.dtype(), d.place()});
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>& grads) {
  Tensor g = grads[0];
  if (!g.defined()) return {};
  AutogradMeta& meta = Tensor(var_).ensure_autograd_meta();
  // x.grad.stop_gradient reads as in Paddle: False for a gradient the engine's kernels
  // computed (their outputs carry no autograd state), True for one that arrives flagged so,
  // e.g. returned as made under no_grad by a PyLayer's Python backward (pylayer_py.cc).
  const bool flagged_stop = g.autograd_meta() != nullptr && g.stop_gradient();
  if (!autograd::grad_enabled()) {
    // The stored .grad never carries history without create_graph, and must not
    // alias memory anyone else holds (optimizers zero it in place): steal the
    // buffer when nobody else has it and g is a dense tensor filling most of it, copy
    // otherwise (the last part of a split gradient would be a strided view pinning
    // the whole buffer).
    const DenseTensor& gd = g.dense();
    const auto own_bytes = static_cast<size_t>(gd.numel()) * size_of(gd.dtype());
    if (gd.storage().use_count() == 1 && gd.is_contiguous() && gd.storage()->bytes() / 2 <= own_bytes) {
      Tensor stolen(g.dense());
      // A dist gradient keeps its layout: the dist layer copies it onto the new handle.
      if (g.impl()->dist) dispatch::note_alias(stolen, g);
      g = stolen;
    } else {
      g = ops::assign(g);
    }
  }
  if (meta.grad) {
    Tensor prev(meta.grad);
    const bool keep = prev.stop_gradient() && flagged_stop;
    // Note [Accumulating into a zeroed gradient]: an optimizer's clear_grad() (Paddle's
    // default set_to_zero=True) leaves .grad as zeros, and the next backward would add the
    // new gradient to them: a pass over every parameter (read two, write one, a new buffer),
    // ~6% of the MLP step of issue 17. A .grad whose bytes are all zero is replaced by the
    // new gradient instead (0 + g == g; only a -0.0 in g keeps its sign). The check is one
    // read that stops at the first nonzero word, so real accumulation pays almost nothing.
    // Not while a tracer records (to_static): the recorded program keeps the add, which
    // must stay right for whatever .grad holds when the program runs.
    const bool may_replace = !autograd::grad_enabled() && trace::active() == nullptr && zero_like(prev, g);
    // the zeros of a deferred clear: the add below (or a recorded one) reads them
    if (meta.grad_zero_pending && !may_replace) autograd::settle_grad_zeros(meta);
    if (may_replace && (meta.grad_zero_pending || autograd::all_bytes_zero(prev.dense()))) {
      g.set_stop_gradient(keep);
      meta.grad = g.impl();
      meta.grad_zero_pending = false;
      autograd::run_post_accumulate_hooks(var_);
      return {};
    }
    meta.grad = autograd::accumulate(prev, g).impl();
    if (!autograd::grad_enabled()) Tensor(meta.grad).set_stop_gradient(keep);
  } else {
    if (!autograd::grad_enabled()) g.set_stop_gradient(flagged_stop);
    meta.grad = g.impl();
  }
  autograd::run_post_accumulate_hooks(var_);
  return {};
}

namespace autograd {

// Note [Deferred zeroing of .grad]: Paddle's clear_grad() (set_to_zero=True, the default)
// leaves every .grad as zeros, and the next backward's AccumulateGrad replaces zeros by the
// new gradient (Note [Accumulating into a zeroed gradient]). Writing the zeros and then
// reading them back to find them zero were two passes over every parameter's gradient for
// nothing: 4-5% of the CPU time of the MLP step of issue 17 at two threads (memset and
// memcmp). Where nothing but the tensor's AutogradMeta holds the gradient's TensorImpl and
// storage (no Python handle, view or alias that could read the bytes), the clear only marks
// it (grad_zero_pending) and bumps its version; Tensor::grad(), the one reader, writes the
// zeros first, and AccumulateGrad replaces a pending gradient without reading it. Elsewhere
// (a handle is alive, a dist tensor, a to_static trace) the zeros are written at once.
namespace {
// Writes zeros over every element of t (host memory, or a device's through a copy).
void zero_fill(DenseTensor& t) {
  if (t.numel() == 0) return;
  if (t.place().is_cpu()) {
    std::memset(t.raw_data(), 0, t.numel() * size_of(t.dtype()));
  } else {  // device memory: the host may not write it
    DenseTensor zeros(t.dims(), t.dtype(), CPUPlace());
    std::memset(zeros.alloc(), 0, zeros.numel() * size_of(t.dtype()));
    copy_into(zeros, &t);
  }
}
}  // namespace

void clear_grad_to_zero(TensorImpl& t) {
  AutogradMeta* meta = t.autograd.get();
  if (meta == nullptr || !meta->grad || meta->grad_zero_pending) return;
  const std::shared_ptr<TensorImpl>& g = meta->grad;
  const auto& storage = g->dense.storage();
  const bool alone = g.use_count() == 1 && storage && storage.use_count() == 1 && !g->dist && !t.dist && !g->view &&
                     (!g->autograd || !g->autograd->grad_fn) && trace::active() == nullptr;
  if (alone) {
    meta->grad_zero_pending = true;
  } else {
    zero_fill(g->dense);
  }
  Tensor(g).bump_version();
}

bool all_bytes_zero(const DenseTensor& p) {
  const size_t bytes = static_cast<size_t>(p.numel()) * size_of(p.dtype());
  const auto* c = static_cast<const unsigned char*>(p.raw_data());
  // glibc's memcmp is vectorized for the CPU at run time; the zero block stays in L1.
  static const std::array<unsigned char, 4096> kZeros{};
  for (size_t i = 0; i < bytes; i += kZeros.size()) {
    if (std::memcmp(c + i, kZeros.data(), std::min(kZeros.size(), bytes - i)) != 0) return false;
  }
  return true;
}

void settle_grad_zeros(AutogradMeta& meta) {
  if (!meta.grad_zero_pending) return;
  meta.grad_zero_pending = false;
  if (meta.grad) zero_fill(meta.grad->dense);
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || t.stop_gradient()) return {};
  AutogradMeta& meta = *t.autograd_meta();
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  auto acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl());
    meta.grad_accumulator = acc;
  }
  return {acc, 0};
}

bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : ts) {
    if (t->defined() && !t->stop_gradient()) return true;
  }
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& ts) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : ts) {
    if (t.defined() && !t.stop_gradient()) return true;
  }
  return false;
}

void set_history(const Tensor& out, const std::shared_ptr<GradNode>& node, uint32_t output_nr) {
  AutogradMeta& meta = out.ensure_autograd_meta();
  meta.stop_gradient = false;
  meta.grad_fn = node;
  meta.output_nr = output_nr;
  if (node->output_meta.size() <= output_nr) node->output_meta.resize(output_nr + 1);
  const auto& d = out.dense();
  node->output_meta[output_nr] = {d.dims(), d.dtype(), d.place()};
}

Tensor accumulate(const Tensor& acc, const Tensor& src) { return ops::add(acc, src); }

}  // namespace autograd

SavedTensor::SavedTensor(const Tensor& t, bool is_output, bool metadata_only)
    : is_output_(is_output), metadata_only_(metadata_only) {
  was_defined_ = t.defined();
  if (!was_defined_) return;
  if (metadata_only) {
    data_ = std::make_shared<TensorImpl>(t.dense());
    dispatch::note_alias(Tensor(data_), t);
    return;
  }
  version_ = t.version();
  requires_grad_ = t.requires_grad();
  if (const auto& hooks = autograd::saved_tensor_hooks(); OAR_UNLIKELY(hooks != nullptr)) {
    // Only what pack returns is kept; the tensor's place in the graph is kept as a weak
    // edge (its grad_fn, or a leaf's accumulator) and given back on unpack. An output is
    // packed as a handle without autograd meta: the node would own itself otherwise.
    if (requires_grad_) {
      Edge e = autograd::gradient_edge(t);
      grad_fn_ = e.node;
      output_nr_ = e.input_nr;
    }
    Tensor handle = t;
    if (is_output) {
      handle = Tensor(std::make_shared<TensorImpl>(t.dense()));
      dispatch::note_alias(handle, t);
    }
    packed_ = hooks->pack(handle);
    hooks_ = hooks;
    return;
  }
  if (is_output) {
    data_ = std::make_shared<TensorImpl>(t.dense());
    // A backward recorded into a program must see the saved output as the forward value it is.
    dispatch::note_alias(Tensor(data_), t);
    if (requires_grad_) {
      grad_fn_ = t.grad_fn();
      output_nr_ = t.autograd_meta()->output_nr;
    }
  } else {
    data_ = t.impl();
  }
}

Tensor SavedTensor::unpack(const GradNode* owner) const {
  if (!was_defined_) return Tensor();
  if (OAR_UNLIKELY(hooks_ != nullptr)) return unpack_hooked(owner);
  OAR_ENFORCE(data_ != nullptr, PreconditionNotMet, owner ? owner->name() : "backward",
              ": trying to backward through the graph a second time (or to access saved "
              "tensors after they were freed). Call backward(retain_graph=True) the first time.");
  Tensor t(data_);
  if (metadata_only_) return t;
  OAR_ENFORCE(t.version() == version_, PreconditionNotMet,
              "one of the tensors needed for gradient computation in ",
              owner ? owner->name() : "backward",
              " has been modified by an inplace operation: its version is ", t.version(),
              ", expected ", version_, ". Use the out-of-place op or clone() the tensor first.");
  if (!is_output_) return t;
  Tensor out(std::make_shared<TensorImpl>(data_->dense));
  dispatch::note_alias(out, t);
  if (requires_grad_) {
    auto node = grad_fn_.lock();
    if (node) {
      AutogradMeta& meta = out.ensure_autograd_meta();
      meta.stop_gradient = false;
      meta.grad_fn = node;
      meta.output_nr = output_nr_;
    }
  }
  return out;
}

Tensor SavedTensor::unpack_hooked(const GradNode* owner) const {
  OAR_ENFORCE(packed_ != nullptr, PreconditionNotMet, owner ? owner->name() : "backward",
              ": trying to backward through the graph a second time (or to access saved "
              "tensors after they were freed). Call backward(retain_graph=True) the first time.");
  // The unpacked data is what the hook gave back (no version check: the hook owns it);
  // the history is the saved tensor's own.
  Tensor data = hooks_->unpack(packed_);
  Tensor out(std::make_shared<TensorImpl>(data.dense()));
  dispatch::note_alias(out, data);
  if (requires_grad_) {
    auto node = grad_fn_.lock();
    if (node) {
      AutogradMeta& meta = out.ensure_autograd_meta();
      meta.stop_gradient = false;
      if (dynamic_cast<AccumulateGrad*>(node.get()) != nullptr) {
        meta.grad_accumulator = node;  // a leaf: gradients reach the original's .grad
      } else {
        meta.grad_fn = node;
        meta.output_nr = output_nr_;
      }
    }
  }
  return out;
}

namespace autograd {
namespace {

struct PostHookEntry {
  int64_t id;
  std::weak_ptr<TensorImpl> leaf;  // guards against a new tensor at a dead one's address
  PostAccumulateHook fn;
};
std::mutex g_post_hooks_mu;
std::unordered_map<const TensorImpl*, std::vector<PostHookEntry>> g_post_hooks;
std::atomic<int64_t> g_post_hook_count{0};  // lets backward skip the lock when none exist
int64_t g_next_post_hook_id = 1;

}  // namespace

int64_t add_post_accumulate_hook(const Tensor& leaf, PostAccumulateHook hook) {
  OAR_ENFORCE(leaf.defined() && !leaf.stop_gradient() && leaf.is_leaf(), PreconditionNotMet,
              "post-accumulate hook: the tensor must be a leaf with stop_gradient=False");
  std::lock_guard<std::mutex> lock(g_post_hooks_mu);
  for (auto it = g_post_hooks.begin(); it != g_post_hooks.end();) {  // drop dead leaves' hooks
    if (it->second.empty() || it->second.front().leaf.expired()) {
      g_post_hook_count -= static_cast<int64_t>(it->second.size());
      it = g_post_hooks.erase(it);
    } else {
      ++it;
    }
  }
  int64_t id = g_next_post_hook_id++;
  g_post_hooks[leaf.impl().get()].push_back({id, leaf.impl(), std::move(hook)});
  ++g_post_hook_count;
  return id;
}

bool remove_post_accumulate_hook(int64_t id) {
  std::lock_guard<std::mutex> lock(g_post_hooks_mu);
  for (auto& [key, hooks] : g_post_hooks) {
    for (auto it = hooks.begin(); it != hooks.end(); ++it) {
      if (it->id == id) {
        hooks.erase(it);
        --g_post_hook_count;
        return true;
      }
    }
  }
  return false;
}

bool has_post_accumulate_hooks(const Tensor& leaf) {
  if (g_post_hook_count.load(std::memory_order_relaxed) == 0 || !leaf.defined()) return false;
  std::lock_guard<std::mutex> lock(g_post_hooks_mu);
  auto it = g_post_hooks.find(leaf.impl().get());
  if (it == g_post_hooks.end()) return false;
  for (const auto& e : it->second)
    if (e.leaf.lock() == leaf.impl()) return true;
  return false;
}

void run_post_accumulate_hooks(const std::shared_ptr<TensorImpl>& leaf) {
  if (g_post_hook_count.load(std::memory_order_relaxed) == 0) return;
  std::vector<PostAccumulateHook> fns;
  {
    std::lock_guard<std::mutex> lock(g_post_hooks_mu);
    auto it = g_post_hooks.find(leaf.get());
    if (it == g_post_hooks.end()) return;
    for (const auto& e : it->second) {
      if (e.leaf.lock() == leaf) fns.push_back(e.fn);
    }
  }
  // Outside the lock: a hook may register or remove hooks.
  for (const auto& fn : fns) fn(Tensor(leaf));
}

}  // namespace autograd

}  // namespace oar
