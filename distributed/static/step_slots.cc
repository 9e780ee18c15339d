// Slots of executor steps for the dist dialect's ops. Note [DistModel].
#include "distributed/static/step_slots.h"

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "paddle_core/base/errors.h"

namespace oar::dist {
namespace {

constexpr size_t kSlots = 1024;
struct Slots {
  std::mutex mu;
  std::array<std::unique_ptr<SlotFn>, kSlots> fns;
  std::map<std::string, size_t> by_key;
  size_t used = 0;
};
Slots& slots() {
  static Slots s;
  return s;
}

template <size_t I>
void slot_step(dispatch::KernelCall& call) {
  const SlotFn* fn = slots().fns[I].get();
  OAR_ENFORCE(fn != nullptr, Internal, "dist step ", I, " is not set");
  (*fn)(call);
}
template <size_t... I>
constexpr std::array<dispatch::KernelStep, sizeof...(I)> make_steps(std::index_sequence<I...>) {
  return {&slot_step<I>...};
}
constexpr auto kSteps = make_steps(std::make_index_sequence<kSlots>());

}  // namespace

std::string step_slot(const std::string& prefix, const std::string& key, const std::function<SlotFn()>& make) {
  Slots& s = slots();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.by_key.find(prefix + " " + key);
  if (it != s.by_key.end()) return prefix + "_" + std::to_string(it->second);
  OAR_ENFORCE(s.used < kSlots, ResourceExhausted, "lower_collectives: more than ", kSlots,
              " distinct dist ops in this process");
  const size_t slot = s.used;
  s.fns[slot] = std::make_unique<SlotFn>(make());
  ++s.used;
  s.by_key[prefix + " " + key] = slot;
  const std::string name = prefix + "_" + std::to_string(slot);
  dispatch::register_kernel_step(name, {kSteps[slot]});
  return name;
}

}  // namespace oar::dist
