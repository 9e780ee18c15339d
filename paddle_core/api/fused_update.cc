#include "paddle_core/api/fused_update.h"

#include <deque>
#include <string>
#include <utility>

#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/fallback.h"

namespace oar::api {
namespace {

void check_place(const DenseTensor* t, const Place& place, std::string_view rule, const char* what, size_t i) {
  OAR_ENFORCE(t->place() == place, InvalidArgument, rule, "_update: ", what, "[", i, "] is on ", t->place().str(),
              " but the update runs on ", place.str(), " (its first parameter's place)");
}

// Host copies of a device update's tensors: staged in before the CPU kernel runs, the
// written ones copied back after it.
class Staging {
 public:
  template <typename T>
  std::vector<T> in(const std::vector<T>& ts, bool written) {
    std::vector<T> out;
    for (T d : ts) {
      DenseTensor& h = host_.emplace_back(d->dims(), d->dtype(), CPUPlace());
      h.alloc();
      copy_into(*d, &h);
      if constexpr (!std::is_const_v<std::remove_pointer_t<T>>) {
        if (written) back_.emplace_back(&h, d);
      }
      out.push_back(&h);
    }
    return out;
  }
  void commit() {
    for (auto& [h, d] : back_) copy_into(*h, d);
  }

 private:
  std::deque<DenseTensor> host_;  // stable addresses
  std::vector<std::pair<DenseTensor*, DenseTensor*>> back_;
};

}  // namespace

void fused_update(std::string_view rule, const phi::UpdateArgs& args) {
  const phi::UpdateRule* spec = nullptr;
  for (const phi::UpdateRule& r : phi::update_rules())
    if (rule == r.name) spec = &r;
  OAR_ENFORCE(spec != nullptr, NotFound, "fused_update: no optimizer rule '", rule, "'");
  OAR_ENFORCE(args.states.size() == spec->num_states && args.scalars.size() == spec->num_scalars, InvalidArgument, rule,
              "_update: expected ", spec->num_states, " state lists and ", spec->num_scalars, " scalars, got ",
              args.states.size(), " and ", args.scalars.size());
  if (args.params.empty()) return;
  const Place place = args.params[0]->place();
  const DataType dtype = args.params[0]->dtype();
  for (size_t i = 0; i < args.params.size(); ++i) check_place(args.params[i], place, rule, "parameters", i);
  for (size_t i = 0; i < args.grads.size(); ++i) check_place(args.grads[i], place, rule, "gradients", i);
  for (const phi::ParamList& s : args.states)
    for (size_t i = 0; i < s.size(); ++i) check_place(s[i], place, rule, "states", i);
  const std::string kernel = std::string(rule) + "_update";
  KernelRegistry& reg = KernelRegistry::instance();
  if (void* fn = reg.find(kernel, place.type(), dtype)) {
    reinterpret_cast<phi::UpdateKernel>(fn)(device_context(place), args);
    return;
  }
  void* cpu = reg.find(kernel, DeviceType::kCPU, dtype);
  OAR_ENFORCE(!place.is_cpu() && cpu != nullptr, Internal, kernel, ": no CPU kernel for dtype ", dtype_name(dtype));
  if (!dispatch::fallback_allowed(place)) {
    std::string have;
    for (DataType t : reg.dtypes(kernel, place.type())) have += (have.empty() ? "" : ", ") + std::string(dtype_name(t));
    OAR_THROW(InvalidType, kernel, ": no kernel on ", place.str(), " for dtype ", dtype_name(dtype),
              " (its kernels there: ", have.empty() ? "none" : have,
              ") and FLAGS_enable_api_kernel_fallback is off, so it does not run on the CPU");
  }
  dispatch::warn_fallback(kernel, place.type(), dtype);
  update_on_host(cpu, args);
}

void update_on_host(void* cpu_kernel, const phi::UpdateArgs& args) {
  Staging st;
  phi::UpdateArgs host;
  host.params = st.in(args.params, true);
  host.grads = st.in(args.grads, false);
  for (const phi::ParamList& s : args.states) host.states.push_back(st.in(s, true));
  host.lrs = args.lrs;
  host.wds = args.wds;
  host.scalars = args.scalars;
  host.flag = args.flag;
  host.step = args.step;
  reinterpret_cast<phi::UpdateKernel>(cpu_kernel)(device_context(CPUPlace()), host);
  st.commit();
}

}  // namespace oar::api
