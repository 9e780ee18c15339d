// The dispatch layers (Note [Dispatch layers] in docs/notes/dispatch.md).
//
// Every generated op function (oar::ops::<op>) is one dispatch entry: it walks a fixed,
// ordered array of layers and ends in the kernel registry.
//
//   entry -> amp -> (promotion) -> dist -> autograd -> trace -> kernel (fallback on a miss)
//
// amp, dist, trace and fallback are *generic* layers: one function each, registered
// here, that sees the call in boxed form (OpCall), may change its inputs, and continues
// below itself with call_next(). autograd is a *per-op* layer: its rule (the grad node)
// is generated from the op definition's `backward:`, like JAX's per-primitive rule
// tables. The fast path (no generic layer on) never boxes: it costs one thread-local load
// and one relaxed atomic load per op. Higher layers register into these slots (pir/ the
// trace layer's tracer, distributed/ the dist layer), so the core never includes them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/scalar.h"
#include "paddle_core/tensor/tensor.h"

#define OAR_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace oar::dispatch {

/// The layers in call order. A call "below layer L" runs the layers after L.
enum class Layer : uint8_t {
  kEntry = 0,     // the op function itself (nothing done yet)
  kAmp = 1,       // autocast: casts floating inputs as oar.amp.auto_cast says (generic)
  kDist = 2,      // distributed tensors: SPMD rule, reshard, local op (generic; empty for now)
  kAutograd = 3,  // records the op's grad node (per-op rule, generated)
  kTrace = 4,     // to_static: reports the call to the thread's Tracer (generic)
  kFallback = 5,  // a device without the op's kernel: the CPU kernel with copies (generic)
};
constexpr int kNumLayers = 6;
const char* layer_name(Layer layer);
constexpr uint32_t bit(Layer l) { return 1u << static_cast<int>(l); }
/// The bits of the layers that run below `from`.
constexpr uint32_t below(Layer from) { return ~((2u << static_cast<int>(from)) - 1u); }

/// An attribute (a non-tensor argument) in the op definition's types.
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, DataType,
                               Place, Scalar>;

/// A tensor argument or result of a boxed call: one tensor (undefined for an absent
/// optional input) or a list (Tensor[]).
struct Value {
  Tensor tensor;
  std::vector<Tensor> list;
  bool is_list = false;
  Value() = default;
  Value(Tensor t) : tensor(std::move(t)) {}                            // NOLINT: boxing is implicit
  Value(std::vector<Tensor> l) : list(std::move(l)), is_list(true) {}  // NOLINT
};

struct OpSchema;

/// One op call in boxed form: what a generic layer sees, and may change.
struct OpCall {
  const OpSchema* op = nullptr;
  std::vector<Value> inputs;     // the tensor arguments, in declaration order
  std::vector<AttrValue> attrs;  // the other arguments, in declaration order
  std::vector<Value> outputs;    // filled by the layers below

  const Tensor& tensor(size_t i) const { return inputs[i].tensor; }
  const std::vector<Tensor>& list(size_t i) const { return inputs[i].list; }
  template <typename T>
  const T& attr(size_t i) const {
    return std::get<T>(attrs[i]);
  }
};

/// What the generator emits for every op: names, flags and the way back into the op's
/// typed code.
struct OpSchema {
  const char* name;                 // "add"
  std::vector<const char*> inputs;  // tensor argument names
  std::vector<const char*> attrs;   // other argument names
  /// Runs the op from just below `from` on call.inputs / call.attrs, filling call.outputs.
  void (*next)(OpCall& call, Layer from);
  /// Autocast's per-op decision (nullptr: autocast leaves the op alone).
  void* amp = nullptr;
  /// The op acts outside its outputs (print_tensor); its output 0 is its input 0.
  bool side_effect = false;
  /// The op's SPMD rule name (`spmd:` in its definition; nullptr: the replicated fallback).
  const char* spmd_rule = nullptr;
};

/// A generic layer: handles `call`, normally by calling call_next(call, its layer).
using LayerFn = void (*)(OpCall& call);
/// A generic layer's view of a tensor handle made outside any op (detach, a saved
/// output unpacked by a backward): `alias` shares `of`'s data.
using AliasFn = void (*)(const Tensor& alias, const Tensor& of);

namespace detail {
inline thread_local uint32_t tls_on = 0;  // generic layers on for this thread (amp, trace)
extern std::atomic<uint32_t> g_on;        // generic layers on for every thread (dist)
}  // namespace detail

/// The generic layers on for the calling thread (bit(Layer) set).
inline uint32_t active() { return detail::tls_on | detail::g_on.load(std::memory_order_relaxed); }
inline bool active(Layer l) { return (active() & bit(l)) != 0; }

/// Installs the function of a generic layer (nullptr removes it). `everywhere`: the
/// layer is on for every thread and every op (the dist slot); otherwise a thread turns
/// it on with set_thread_active (amp, trace). The fallback layer is entered on a
/// kernel miss instead.
void set_layer(Layer layer, LayerFn fn, AliasFn alias = nullptr, bool everywhere = false);
LayerFn layer_fn(Layer layer);
/// Turns a generic layer on or off for the calling thread.
void set_thread_active(Layer layer, bool on);

/// Runs generic layer `layer` on `call` (how generated code enters a generic layer).
void run(Layer layer, OpCall& call);
/// Continues `call` below `layer`.
inline void call_next(OpCall& call, Layer layer) { call.op->next(call, layer); }
/// The cast op (defined with the generated ops): what the amp layer casts with.
Tensor cast(const Tensor& t, DataType to);
/// Tells the active generic layers that `alias` is a new handle on `of`'s data.
void note_alias(const Tensor& alias, const Tensor& of);
/// Whether an op with no kernel for `place` may run through the fallback layer (never
/// for the CPU).
bool can_fall_back(const Place& place);

// ---- the kernel level (Note [Kernel-level programs] in docs/notes/dispatch.md)

/// One op run at kernel level, as the executor does: the kernel was resolved when the
/// program was planned; no amp, promotion, autograd or trace runs.
struct KernelCall {
  const DeviceContext* ctx = nullptr;
  void* fn = nullptr;  // the kernel (null for a view op)
  /// Per tensor argument: one tensor, none (an absent optional input) or a list.
  const std::vector<Tensor>* const* inputs = nullptr;
  const std::vector<AttrValue>* attrs = nullptr;  // the other arguments, in order
  /// Memory output 0 may take (Note [Donated outputs]); only for `inplace_kernel` ops.
  const DenseTensor* donor = nullptr;
  std::vector<DenseTensor> outputs;  // filled by the step; list outputs flattened

  const DenseTensor& in(size_t i) const { return (*inputs[i])[0].dense(); }
  const DenseTensor* opt(size_t i) const {
    const std::vector<Tensor>& v = *inputs[i];
    return v.empty() || !v[0].defined() ? nullptr : &v[0].dense();
  }
  std::vector<const DenseTensor*> in_list(size_t i) const {
    std::vector<const DenseTensor*> out;
    for (const Tensor& t : *inputs[i]) out.push_back(&t.dense());
    return out;
  }
  template <typename T>
  const T& attr(size_t i) const {
    return std::get<T>((*attrs)[i]);
  }
};

/// Runs an op's shape function and its resolved kernel (generated per op, or a kernel
/// registered at run time such as a compiled fusion).
using KernelStep = void (*)(KernelCall& call);
/// A kernel step and the traits of its op that the executor plans with.
struct KernelStepInfo {
  KernelStep fn = nullptr;
  bool inplace_kernel = false;  // output 0 may take input 0's memory (Note [Donated outputs])
  bool grows = false;           // ... and be larger than it (append_row)
  /// Host code that reads and writes host memory (a compiled fusion): on a device the
  /// executor runs it on host copies. Other steps (the distributed transfers and updates)
  /// dispatch by their tensors' place and run where they are.
  bool host_code = false;
};
/// Registers the kernel step of `op` (generated ops register theirs at load; a
/// compiler registers the steps of the kernels it generates). Replaces an earlier one.
bool register_kernel_step(const std::string& op, KernelStepInfo step);
/// The kernel step of `op` (fn is nullptr when there is none).
KernelStepInfo kernel_step(const std::string& op);

// ---- boxing helpers for the generated code
inline void set_outputs(OpCall& c, const Tensor& t) { c.outputs.assign(1, Value(t)); }
inline void set_outputs(OpCall& c, const std::vector<Tensor>& l) { c.outputs.assign(1, Value(l)); }
template <typename... T>
void set_outputs(OpCall& c, const std::tuple<T...>& t) {
  c.outputs.clear();
  std::apply([&](const auto&... x) { (c.outputs.emplace_back(x), ...); }, t);
}
template <typename R>
R result(OpCall& c);
template <>
inline Tensor result<Tensor>(OpCall& c) {
  return std::move(c.outputs.at(0).tensor);
}
template <>
inline std::vector<Tensor> result<std::vector<Tensor>>(OpCall& c) {
  return std::move(c.outputs.at(0).list);
}
template <typename R>
R result_tuple(OpCall& c) {
  R r;
  size_t i = 0;
  std::apply([&](auto&... x) { ((x = std::move(c.outputs.at(i++).tensor)), ...); }, r);
  return r;
}

/// Boxes a call and runs it through generic layer `layer` (slow path only).
template <typename R>
R run_boxed(Layer layer, const OpSchema& op, std::vector<Value> inputs, std::vector<AttrValue> attrs) {
  OpCall call{&op, std::move(inputs), std::move(attrs), {}};
  run(layer, call);
  if constexpr (std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>) {
    return result<R>(call);
  } else {
    return result_tuple<R>(call);
  }
}

}  // namespace oar::dispatch
