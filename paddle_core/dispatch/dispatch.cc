#include "paddle_core/dispatch/dispatch.h"

#include <mutex>
#include <unordered_map>

#include "paddle_core/base/errors.h"

namespace oar::dispatch {
namespace detail {
std::atomic<uint32_t> g_on{0};
}  // namespace detail

namespace {
struct Slot {
  std::atomic<LayerFn> fn{nullptr};
  std::atomic<AliasFn> alias{nullptr};
};
Slot g_slots[kNumLayers];

bool generic(Layer l) { return l == Layer::kAmp || l == Layer::kDist || l == Layer::kTrace || l == Layer::kFallback; }
}  // namespace

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::kEntry:
      return "entry";
    case Layer::kAmp:
      return "amp";
    case Layer::kDist:
      return "dist";
    case Layer::kAutograd:
      return "autograd";
    case Layer::kTrace:
      return "trace";
    case Layer::kFallback:
      return "fallback";
  }
  return "?";
}

void set_layer(Layer layer, LayerFn fn, AliasFn alias, bool everywhere) {
  OAR_ENFORCE(generic(layer), InvalidArgument, "dispatch::set_layer: '", layer_name(layer),
              "' is not a generic layer (amp, dist, trace or fallback)");
  Slot& s = g_slots[static_cast<int>(layer)];
  s.fn.store(fn, std::memory_order_release);
  s.alias.store(fn != nullptr ? alias : nullptr, std::memory_order_release);
  if (everywhere && fn != nullptr) {
    detail::g_on.fetch_or(bit(layer), std::memory_order_relaxed);
  } else {
    detail::g_on.fetch_and(~bit(layer), std::memory_order_relaxed);
  }
}

LayerFn layer_fn(Layer layer) { return g_slots[static_cast<int>(layer)].fn.load(std::memory_order_acquire); }

void set_thread_active(Layer layer, bool on) {
  if (on) {
    detail::tls_on |= bit(layer);
  } else {
    detail::tls_on &= ~bit(layer);
  }
}

void run(Layer layer, OpCall& call) {
  LayerFn fn = layer_fn(layer);
  if (fn == nullptr) {  // switched on for the thread but nothing registered: pass through
    call_next(call, layer);
    return;
  }
  fn(call);
}

void note_alias(const Tensor& alias, const Tensor& of) {
  const uint32_t on = active();
  if (on == 0) return;
  for (int l = 0; l < kNumLayers; ++l) {
    if ((on & (1u << l)) == 0) continue;
    AliasFn fn = g_slots[l].alias.load(std::memory_order_acquire);
    if (fn != nullptr) fn(alias, of);
  }
}

bool can_fall_back(const Place& place) { return !place.is_cpu() && layer_fn(Layer::kFallback) != nullptr; }

namespace {
struct StepTable {
  std::mutex mu;
  std::unordered_map<std::string, KernelStepInfo> steps;
};
StepTable& steps() {
  static StepTable* t = new StepTable;  // never destroyed: registrations run at load
  return *t;
}
}  // namespace

bool register_kernel_step(const std::string& op, KernelStepInfo step) {
  OAR_ENFORCE(step.fn != nullptr, InvalidArgument, "register_kernel_step: '", op, "' has no function");
  StepTable& t = steps();
  std::lock_guard<std::mutex> lock(t.mu);
  t.steps[op] = step;
  return true;
}

KernelStepInfo kernel_step(const std::string& op) {
  StepTable& t = steps();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.steps.find(op);
  return it == t.steps.end() ? KernelStepInfo{} : it->second;
}

}  // namespace oar::dispatch
