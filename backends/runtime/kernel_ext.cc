// The C kernel API (backends/include/oar/kernel_ext.h): turns a plugin's C kernel into
// an entry of the kernel registry, so generated op functions and the executor call it
// like any C++ kernel.
//
// The registry stores one function pointer of the op's typed kernel signature
// (kernel_sig::<kernel>). For each kernel name of the op definitions (the generated
// OAR_C_KERNEL_TABLE) an adapter of exactly that signature is instantiated here from
// one template: it points the C context at the C++ arguments (nothing is converted
// until the kernel asks), picks the C function by (device type, dtype) from a fixed
// table, calls it and turns a failure into an oar::Error with the plugin's message.
//
// Layering: this file sits above the kernel registry (paddle_core/dispatch) although it
// lives with the device runtime; it registers itself into the device manager's kernel
// stager slot, and the device manager never includes it. It is compiled into oar_api
// (backends/CMakeLists.txt) next to the generated ops.
#include "backends/include/oar/kernel_ext.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backends/runtime/device_manager.h"
#include "oar_generated/c_kernel_table.h"
#include "oar_generated/kernel_signatures.h"
#include "paddle_core/api/fused_update.h"
#include "paddle_core/base/errors.h"
#include "paddle_core/dispatch/fallback.h"
#include "paddle_core/dispatch/kernel_registry.h"
#include "phi_kernels/funcs/optimizer_update.h"

namespace oar::backends {
namespace {

enum CKernelIndex : int {
#define OAR_X(name, types, display, dtype_from) k_##name,
  OAR_C_KERNEL_TABLE(OAR_X)
#undef OAR_X
      kNumCKernels
};
// Their names, for the adapters (a constant: no function-static guard per call).
constexpr const char* kKernelNames[] = {
#define OAR_X(name, types, display, dtype_from) #name,
    OAR_C_KERNEL_TABLE(OAR_X)
#undef OAR_X
};

// The C function per (kernel, device type, dtype): written when a plugin's kernels are
// committed, read lock-free by the adapters (zero-initialized: no kernel).
std::atomic<OAR_KernelFn> g_fns[kNumCKernels][kMaxDeviceTypes][kNumDataTypes];
// The same for the fused optimizer updates ("<rule>_update"), by index in phi::update_rules().
constexpr int kMaxUpdateRules = 8;
std::atomic<OAR_KernelFn> g_update_fns[kMaxUpdateRules][kMaxDeviceTypes][kNumDataTypes];

// The C++ types an adapter's arguments come in, by role.
enum class Kind : uint8_t {
  kTensor,
  kOptTensor,
  kTensorList,
  kBool,
  kInt,
  kFloat,
  kStr,
  kInts,
  kFloats,
  kDType,
  kPlace,
  kScalar,
  kOut,
  kOutList
};

template <typename T>
struct ArgKind;
#define OAR_ARG_KIND(T, k)                \
  template <>                             \
  struct ArgKind<T> {                     \
    static constexpr Kind kind = Kind::k; \
  };
OAR_ARG_KIND(const DenseTensor&, kTensor)
OAR_ARG_KIND(const DenseTensor*, kOptTensor)
OAR_ARG_KIND(const std::vector<const DenseTensor*>&, kTensorList)
OAR_ARG_KIND(bool, kBool)
OAR_ARG_KIND(int64_t, kInt)
OAR_ARG_KIND(double, kFloat)
OAR_ARG_KIND(const std::string&, kStr)
OAR_ARG_KIND(const std::vector<int64_t>&, kInts)
OAR_ARG_KIND(const std::vector<double>&, kFloats)
OAR_ARG_KIND(DataType, kDType)
OAR_ARG_KIND(const Place&, kPlace)
OAR_ARG_KIND(const Scalar&, kScalar)
OAR_ARG_KIND(DenseTensor*, kOut)
OAR_ARG_KIND(std::vector<DenseTensor*>, kOutList)
#undef OAR_ARG_KIND

// OAR_DataType is oar::DataType's numbering, so views convert by a cast.
static_assert(OAR_DTYPE_BOOL == static_cast<int>(DataType::BOOL) &&
              OAR_DTYPE_INT64 == static_cast<int>(DataType::INT64) &&
              OAR_DTYPE_FLOAT16 == static_cast<int>(DataType::FLOAT16) &&
              OAR_DTYPE_FLOAT32 == static_cast<int>(DataType::FLOAT32) &&
              OAR_DTYPE_FLOAT64 == static_cast<int>(DataType::FLOAT64) &&
              OAR_DTYPE_COMPLEX128 == static_cast<int>(DataType::COMPLEX128) &&
              kNumDataTypes == OAR_DTYPE_COMPLEX128 + 1);

constexpr bool is_input(Kind k) { return k == Kind::kTensor || k == Kind::kOptTensor || k == Kind::kTensorList; }
constexpr bool is_output(Kind k) { return k == Kind::kOut || k == Kind::kOutList; }
constexpr bool is_attr(Kind k) { return !is_input(k) && !is_output(k); }

}  // namespace
}  // namespace oar::backends

/// One C kernel call: pointers to the adapter's C++ arguments, by role.
struct OAR_KernelContext_st {
  const oar::DeviceContext* dev;
  const char* kernel;
  const void* const* inputs;  // DenseTensor (kTensor), DenseTensor* or null (kOptTensor), vector (kTensorList)
  const oar::backends::Kind* input_kinds;
  size_t num_inputs;
  const void* const* attrs;  // the C++ value of each attribute
  const oar::backends::Kind* attr_kinds;
  size_t num_attrs;
  void* const* outputs;  // DenseTensor* (kOut) or std::vector<DenseTensor*>* (kOutList)
  const oar::backends::Kind* output_kinds;
  size_t num_outputs;
  std::string error;  // set_error's text
};

namespace oar::backends {
namespace {

OAR_Status fail(OAR_KernelContext c, OAR_Status status, const std::string& message) {
  c->error = message;
  return status;
}

// The device type's name for tensor views: device_type_name checks the id against the
// registered count (an acquire load and a bounds test per view, three views a tiny op);
// a registered name never changes and its string never moves, so its c_str() is kept.
const char* type_name_of(const Place& p) {
  static std::atomic<const char*> names[kMaxDeviceTypes] = {};
  const int type = p.type_id();
  if (type < 0 || type >= kMaxDeviceTypes) return device_type_name(p.type()).c_str();  // throws NotFound
  if (const char* n = names[type].load(std::memory_order_acquire)) return n;
  const char* n = device_type_name(p.type()).c_str();
  names[type].store(n, std::memory_order_release);
  return n;
}

// Inlined into its callers: a tiny op fills three views (a call each was ~10 instructions).
[[gnu::always_inline]] inline void fill_view(const DenseTensor& t, OAR_Tensor* out) {
  const Place& p = t.place();
  *out = OAR_Tensor{sizeof(OAR_Tensor),
                    t.raw_data(),
                    t.dims().data(),
                    t.strides().data(),
                    t.offset(),
                    t.rank(),
                    static_cast<OAR_DataType>(t.dtype()),
                    type_name_of(p),
                    p.device_id()};
}

size_t api_num_inputs(OAR_KernelContext c) { return c->num_inputs; }
size_t api_num_outputs(OAR_KernelContext c) { return c->num_outputs; }

OAR_Status api_input(OAR_KernelContext c, size_t i, OAR_Tensor* out) {
  if (out == nullptr || i >= c->num_inputs || c->input_kinds[i] == Kind::kTensorList)
    return fail(c, OAR_ERROR_INVALID_ARGUMENT,
                detail::str_cat("input(", i, "): not a Tensor argument of kernel '", c->kernel, "' (it has ",
                                c->num_inputs, " tensor arguments)"));
  const auto* t = static_cast<const DenseTensor*>(c->inputs[i]);
  if (t == nullptr) {  // an absent Tensor?
    *out = OAR_Tensor{sizeof(OAR_Tensor), nullptr, nullptr, nullptr, 0, -1, OAR_DTYPE_FLOAT32, "", 0};
    return OAR_SUCCESS;
  }
  fill_view(*t, out);
  return OAR_SUCCESS;
}

const std::vector<const DenseTensor*>* list_arg(OAR_KernelContext c, size_t i) {
  if (i >= c->num_inputs || c->input_kinds[i] != Kind::kTensorList) return nullptr;
  return static_cast<const std::vector<const DenseTensor*>*>(c->inputs[i]);
}

OAR_Status api_input_list_size(OAR_KernelContext c, size_t i, size_t* size) {
  const auto* l = list_arg(c, i);
  if (l == nullptr || size == nullptr)
    return fail(c, OAR_ERROR_INVALID_ARGUMENT,
                detail::str_cat("input_list_size(", i, "): not a Tensor[] argument of kernel '", c->kernel, "'"));
  *size = l->size();
  return OAR_SUCCESS;
}

OAR_Status api_input_list_item(OAR_KernelContext c, size_t i, size_t j, OAR_Tensor* out) {
  const auto* l = list_arg(c, i);
  if (l == nullptr || out == nullptr || j >= l->size())
    return fail(c, OAR_ERROR_INVALID_ARGUMENT,
                detail::str_cat("input_list_item(", i, ", ", j, "): no such item in kernel '", c->kernel, "'"));
  fill_view(*(*l)[j], out);
  return OAR_SUCCESS;
}

const char* kind_name(Kind k) {
  static const char* names[] = {"Tensor", "Tensor?", "Tensor[]", "bool",  "int",    "float",  "str",
                                "int[]",  "float[]", "DataType", "Place", "Scalar", "output", "output list"};
  return names[static_cast<int>(k)];
}

// The attribute `i` as a T, after checking it has kind `want`.
template <typename T>
const T* attr_as(OAR_KernelContext c, size_t i, Kind want, const void* out) {
  if (out == nullptr || i >= c->num_attrs || c->attr_kinds[i] != want) {
    c->error = detail::str_cat("attribute ", i, " of kernel '", c->kernel, "' is ",
                               i < c->num_attrs ? kind_name(c->attr_kinds[i]) : "missing", ", not ", kind_name(want),
                               " (it has ", c->num_attrs, " attributes)");
    return nullptr;
  }
  return static_cast<const T*>(c->attrs[i]);
}

template <typename T, typename Out, typename Convert>
OAR_Status get_attr(OAR_KernelContext c, size_t i, Kind want, Out* value, Convert convert) {
  const T* v = attr_as<T>(c, i, want, value);
  if (v == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *value = convert(*v);
  return OAR_SUCCESS;
}
const auto same = [](const auto& v) { return v; };

OAR_Status api_attr_bool(OAR_KernelContext c, size_t i, int* value) {
  return get_attr<bool>(c, i, Kind::kBool, value, [](bool b) { return b ? 1 : 0; });
}
OAR_Status api_attr_int(OAR_KernelContext c, size_t i, int64_t* value) {
  return get_attr<int64_t>(c, i, Kind::kInt, value, same);
}
OAR_Status api_attr_float(OAR_KernelContext c, size_t i, double* value) {
  return get_attr<double>(c, i, Kind::kFloat, value, same);
}
OAR_Status api_attr_str(OAR_KernelContext c, size_t i, const char** value) {
  return get_attr<std::string>(c, i, Kind::kStr, value, [](const std::string& v) { return v.c_str(); });
}
OAR_Status api_attr_dtype(OAR_KernelContext c, size_t i, OAR_DataType* value) {
  return get_attr<DataType>(c, i, Kind::kDType, value, [](DataType t) { return static_cast<OAR_DataType>(t); });
}
OAR_Status api_attr_scalar(OAR_KernelContext c, size_t i, double* value) {
  return get_attr<Scalar>(c, i, Kind::kScalar, value, [](const Scalar& v) { return v.to_double(); });
}

OAR_Status api_attr_ints(OAR_KernelContext c, size_t i, const int64_t** values, size_t* size) {
  const auto* v = attr_as<std::vector<int64_t>>(c, i, Kind::kInts, values);
  if (v == nullptr || size == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *values = v->data();
  *size = v->size();
  return OAR_SUCCESS;
}

OAR_Status api_attr_floats(OAR_KernelContext c, size_t i, const double** values, size_t* size) {
  const auto* v = attr_as<std::vector<double>>(c, i, Kind::kFloats, values);
  if (v == nullptr || size == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *values = v->data();
  *size = v->size();
  return OAR_SUCCESS;
}

// Output `i` (a Tensor output), or null after setting the error.
DenseTensor* output_arg(OAR_KernelContext c, size_t i, const char* call) {
  if (i < c->num_outputs && c->output_kinds[i] == Kind::kOut) return static_cast<DenseTensor*>(c->outputs[i]);
  c->error = detail::str_cat(call, "(", i, "): kernel '", c->kernel, "' has ", c->num_outputs, " outputs",
                             i < c->num_outputs ? " and this one is a Tensor[] (use the output_list calls)" : "");
  return nullptr;
}

// Output `i` (a Tensor[] output), or null after setting the error.
std::vector<DenseTensor*>* output_list_arg(OAR_KernelContext c, size_t i, const char* call) {
  if (i < c->num_outputs && c->output_kinds[i] == Kind::kOutList)
    return static_cast<std::vector<DenseTensor*>*>(c->outputs[i]);
  c->error = detail::str_cat(call, "(", i, "): output ", i, " of kernel '", c->kernel, "' is not a Tensor[] (it has ",
                             c->num_outputs, " outputs)");
  return nullptr;
}

// Allocates `t` through Oar's allocator; nothing may throw across the C boundary, so an
// allocator failure becomes a status.
OAR_Status allocate(OAR_KernelContext c, DenseTensor* t, OAR_Tensor* out) {
  if (out == nullptr) return fail(c, OAR_ERROR_INVALID_ARGUMENT, "allocate: the OAR_Tensor out-pointer is null");
  try {
    t->alloc();
  } catch (const Error& e) {
    return fail(c, e.kind() == ErrorKind::kResourceExhausted ? OAR_ERROR_OUT_OF_MEMORY : OAR_ERROR_DEVICE, e.message());
  } catch (const std::exception& e) {
    return fail(c, OAR_ERROR_INTERNAL, e.what());
  }
  fill_view(*t, out);
  return OAR_SUCCESS;
}

OAR_Status api_output(OAR_KernelContext c, size_t i, OAR_Tensor* out) {
  DenseTensor* t = output_arg(c, i, "output");
  if (t == nullptr || out == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  fill_view(*t, out);
  return OAR_SUCCESS;
}

OAR_Status api_allocate_output(OAR_KernelContext c, size_t i, OAR_Tensor* out) {
  DenseTensor* t = output_arg(c, i, "allocate_output");
  return t == nullptr ? OAR_ERROR_INVALID_ARGUMENT : allocate(c, t, out);
}

OAR_Status api_output_list_size(OAR_KernelContext c, size_t i, size_t* size) {
  const auto* l = output_list_arg(c, i, "output_list_size");
  if (l == nullptr || size == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  *size = l->size();
  return OAR_SUCCESS;
}

DenseTensor* output_list_item(OAR_KernelContext c, size_t i, size_t j, const char* call) {
  auto* l = output_list_arg(c, i, call);
  if (l == nullptr) return nullptr;
  if (j < l->size()) return (*l)[j];
  c->error = detail::str_cat(call, "(", i, ", ", j, "): output ", i, " of kernel '", c->kernel, "' has ", l->size(),
                             " tensors");
  return nullptr;
}

OAR_Status api_output_list_item(OAR_KernelContext c, size_t i, size_t j, OAR_Tensor* out) {
  DenseTensor* t = output_list_item(c, i, j, "output_list_item");
  if (t == nullptr || out == nullptr) return OAR_ERROR_INVALID_ARGUMENT;
  fill_view(*t, out);
  return OAR_SUCCESS;
}

OAR_Status api_allocate_output_list_item(OAR_KernelContext c, size_t i, size_t j, OAR_Tensor* out) {
  DenseTensor* t = output_list_item(c, i, j, "allocate_output_list_item");
  return t == nullptr ? OAR_ERROR_INVALID_ARGUMENT : allocate(c, t, out);
}

const OAR_Device* api_device(OAR_KernelContext c) {
  // Resolved once per (type, id): device types are never unregistered and their device
  // tables never move, so a kernel call costs no map lookup under the manager's lock.
  constexpr int kCachedIds = 16;
  static std::atomic<const OAR_Device*> cache[kMaxDeviceTypes][kCachedIds] = {};
  const Place& place = c->dev->place;
  const int type = place.type_id(), id = place.device_id();
  const bool cached = type >= 0 && type < kMaxDeviceTypes && id >= 0 && id < kCachedIds;
  if (cached) {
    if (const OAR_Device* d = cache[type][id].load(std::memory_order_acquire)) return d;
  }
  try {
    const OAR_Device* d = DeviceManager::instance().device(place);
    if (cached) cache[type][id].store(d, std::memory_order_release);
    return d;
  } catch (const std::exception& e) {
    c->error = e.what();
    return nullptr;
  }
}
OAR_Stream api_stream(OAR_KernelContext c) { return static_cast<OAR_Stream>(c->dev->stream); }
void api_set_error(OAR_KernelContext c, const char* message) { c->error = message != nullptr ? message : ""; }

// ---- registration: checked while a plugin loads, committed once its device is live

struct KernelInfo {
  const char* name;
  const char* types;    // "Tensor,Tensor,bool,bool->Tensor"
  const char* display;  // "(Tensor x, Tensor y, bool transpose_x, bool transpose_y) -> Tensor(out)"
  void* adapter;        // a kernel_sig::<name>
};

struct Staged {
  int index;
  DataType dtype;
  OAR_KernelFn fn;
};

// The plugin being loaded, on the loading thread (register_kernel is only valid inside
// register_kernels; loads are serialized by the device manager).
struct Staging {
  std::string device_type;
  std::vector<Staged> kernels;
  std::vector<Staged> updates;  // index: the update rule's
  std::vector<std::string> errors;
};
thread_local Staging* t_staging = nullptr;
thread_local std::string t_last_registration_error;

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "(Tensor x, Tensor y) -> Tensor(out)" or "Tensor, Tensor -> Tensor" -> {"Tensor", "Tensor"}, {"Tensor"}:
// the first word of each comma-separated item (names and parentheses dropped).
std::vector<std::string> type_list(std::string_view s) {
  std::vector<std::string> out;
  std::string cleaned;
  for (char ch : s) cleaned += (ch == '(' || ch == ')') ? ' ' : ch;
  std::string_view rest = cleaned;
  while (!trim(rest).empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    out.emplace_back(item.substr(0, item.find(' ')));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Why `signature` does not fit the op (empty when it does).
std::string signature_mismatch(const KernelInfo& k, std::string_view signature) {
  const std::string_view types = k.types;
  const size_t arrow = types.find("->"), sig_arrow = signature.find("->");
  if (sig_arrow == std::string_view::npos) return "the signature has no '->' before the outputs";
  const auto want_in = type_list(types.substr(0, arrow)), want_out = type_list(types.substr(arrow + 2));
  const auto got_in = type_list(signature.substr(0, sig_arrow)), got_out = type_list(signature.substr(sig_arrow + 2));
  auto tensors = [](const std::vector<std::string>& v) {
    return std::count_if(v.begin(), v.end(), [](const std::string& t) { return t.rfind("Tensor", 0) == 0; });
  };
  if (tensors(got_in) != tensors(want_in) || got_in.size() != want_in.size() || got_out.size() != want_out.size())
    return detail::str_cat("wrong arity: declared ", tensors(got_in), " tensor argument(s), ",
                           got_in.size() - tensors(got_in), " attribute(s) and ", got_out.size(),
                           " output(s), the op has ", tensors(want_in), ", ", want_in.size() - tensors(want_in),
                           " and ", want_out.size());
  for (size_t i = 0; i < want_in.size(); ++i) {
    if (got_in[i] != want_in[i])
      return detail::str_cat("wrong type of argument ", i, ": declared ", got_in[i], ", the op has ", want_in[i]);
  }
  for (size_t i = 0; i < want_out.size(); ++i) {
    if (got_out[i] != want_out[i])
      return detail::str_cat("wrong type of output ", i, ": declared ", got_out[i], ", the op has ", want_out[i]);
  }
  return "";
}

// ---- fused optimizer updates ("<rule>_update", phi/funcs/optimizer_update.h). They are
// kernels of the registry but not ops of the definitions: a C update kernel sees the
// parameters (written in place), the gradients and the rule's state lists (written) as
// Tensor[] arguments 0, 1, 2..., and lrs, wds, scalars (float[]), flag (bool) and step
// (int) as attributes 0-4; it has no outputs. Note [Plugin update kernels] in devices.md.
int update_rule_index(std::string_view op) {
  const auto& rules = phi::update_rules();
  for (size_t i = 0; i < rules.size() && i < static_cast<size_t>(kMaxUpdateRules); ++i) {
    if (op == std::string(rules[i].name) + "_update") return static_cast<int>(i);
  }
  return -1;
}

std::string update_display(int rule) {
  const phi::UpdateRule& r = phi::update_rules()[rule];
  std::string s = "(Tensor[] params, Tensor[] grads";
  for (size_t i = 0; i < r.num_states; ++i) s += detail::str_cat(", Tensor[] state", i);
  return s + ", float[] lrs, float[] wds, float[] scalars, bool flag, int step) -> ()";
}

std::string update_signature_mismatch(int rule, std::string_view signature) {
  const std::string want = update_display(rule);
  const size_t arrow = signature.find("->");
  if (arrow == std::string_view::npos) return "the signature has no '->' before the outputs";
  const auto got_in = type_list(signature.substr(0, arrow)), got_out = type_list(signature.substr(arrow + 2));
  const auto want_in = type_list(std::string_view(want).substr(0, want.find("->")));
  if (got_in != want_in || !got_out.empty())
    return detail::str_cat("the update kernel's signature is ", want, ", not \"", signature, "\"");
  return "";
}

phi::UpdateKernel update_adapter_for(int rule);  // (with the adapters below)

const std::vector<KernelInfo>& kernel_infos();
int kernel_index(std::string_view name) {
  const auto& infos = kernel_infos();
  for (size_t i = 0; i < infos.size(); ++i) {
    if (name == infos[i].name) return static_cast<int>(i);
  }
  return -1;
}

OAR_Status api_register_kernel(const char* op, const char* device_type, OAR_DataType dtype, const char* signature,
                               OAR_KernelFn fn) {
  Staging* s = t_staging;
  std::string why;
  const std::string op_name = op != nullptr ? op : "<null>";
  const int index = op != nullptr ? kernel_index(op) : -1;
  const int rule = op != nullptr && index < 0 ? update_rule_index(op) : -1;
  const int d = static_cast<int>(dtype);
  if (s == nullptr) {
    why = "register_kernel may only be called from a plugin's register_kernels";
  } else if (device_type == nullptr || s->device_type != device_type) {
    why = detail::str_cat("device type '", device_type != nullptr ? device_type : "<null>", "' is not the plugin's ('",
                          s->device_type, "')");
  } else if (index < 0 && rule < 0) {
    why =
        "unknown op: no kernel of this name in the op definitions (paddle_core/ops/*.yaml) nor an optimizer "
        "update (<rule>_update)";
  } else if (d < 0 || d >= kNumDataTypes) {
    why = detail::str_cat("invalid dtype ", d);
  } else if (fn == nullptr) {
    why = "the kernel function is null";
  } else if (signature == nullptr) {
    why = detail::str_cat("no signature; the op is ", rule >= 0 ? update_display(rule) : kernel_infos()[index].display);
  } else if (rule >= 0) {
    const DataType dt = static_cast<DataType>(d);
    const bool twice = std::any_of(s->updates.begin(), s->updates.end(),
                                   [&](const Staged& k) { return k.index == rule && k.dtype == dt; });
    if (std::string m = update_signature_mismatch(rule, signature); !m.empty())
      why = m;
    else if (twice || KernelRegistry::instance().find(op_name, device_type_from_name(s->device_type), dt) != nullptr)
      why = detail::str_cat("registered twice for ", dtype_name(dt));
    else
      s->updates.push_back({rule, dt, fn});
  } else if (std::string m = signature_mismatch(kernel_infos()[index], signature); !m.empty()) {
    why = detail::str_cat(m, " (declared \"", signature, "\"; the op is ", kernel_infos()[index].display, ")");
  } else {
    const DataType dt = static_cast<DataType>(d);
    const bool twice = std::any_of(s->kernels.begin(), s->kernels.end(),
                                   [&](const Staged& k) { return k.index == index && k.dtype == dt; });
    if (twice || KernelRegistry::instance().find(op_name, device_type_from_name(s->device_type), dt) != nullptr)
      why = detail::str_cat("registered twice for ", dtype_name(dt));
    else
      s->kernels.push_back({index, dt, fn});
  }
  if (why.empty()) return OAR_SUCCESS;
  t_last_registration_error =
      detail::str_cat("register_kernel('", op_name, "', ",
                      d >= 0 && d < kNumDataTypes ? dtype_name(static_cast<DataType>(d)) : "dtype ?", "): ", why);
  if (s != nullptr) s->errors.push_back(t_last_registration_error);
  return OAR_ERROR_INVALID_ARGUMENT;
}

const char* api_last_registration_error() { return t_last_registration_error.c_str(); }

const OAR_KernelApi g_api = {
    .struct_size = sizeof(OAR_KernelApi),
    .register_kernel = api_register_kernel,
    .last_registration_error = api_last_registration_error,
    .num_inputs = api_num_inputs,
    .input = api_input,
    .input_list_size = api_input_list_size,
    .input_list_item = api_input_list_item,
    .attr_bool = api_attr_bool,
    .attr_int = api_attr_int,
    .attr_float = api_attr_float,
    .attr_str = api_attr_str,
    .attr_ints = api_attr_ints,
    .attr_floats = api_attr_floats,
    .attr_dtype = api_attr_dtype,
    .attr_scalar = api_attr_scalar,
    .num_outputs = api_num_outputs,
    .output = api_output,
    .allocate_output = api_allocate_output,
    .output_list_size = api_output_list_size,
    .output_list_item = api_output_list_item,
    .allocate_output_list_item = api_allocate_output_list_item,
    .device = api_device,
    .stream = api_stream,
    .set_error = api_set_error,
};

std::function<void()> stage_kernels(const std::string& device_type,
                                    OAR_Status (*register_kernels)(const OAR_KernelApi*)) {
  Staging staging{device_type, {}, {}, {}};
  t_staging = &staging;
  const OAR_Status status = register_kernels(&g_api);
  t_staging = nullptr;
  if (status != OAR_SUCCESS && staging.errors.empty())
    staging.errors.push_back(detail::str_cat("register_kernels returned ", status_name(status)));
  if (!staging.errors.empty()) {
    std::string all;
    for (const auto& e : staging.errors) all += (all.empty() ? "" : "; ") + e;
    OAR_THROW(InvalidArgument, "its C kernels were refused: ", all);
  }
  return [device_type, kernels = std::move(staging.kernels), updates = std::move(staging.updates)] {
    const DeviceType type = device_type_from_name(device_type);
    for (const Staged& k : kernels) {
      g_fns[k.index][static_cast<int>(type)][static_cast<int>(k.dtype)].store(k.fn, std::memory_order_release);
      KernelRegistry::instance().register_kernel(kernel_infos()[k.index].name, type, k.dtype,
                                                 kernel_infos()[k.index].adapter);
    }
    for (const Staged& k : updates) {
      g_update_fns[k.index][static_cast<int>(type)][static_cast<int>(k.dtype)].store(k.fn, std::memory_order_release);
      KernelRegistry::instance().register_kernel(std::string(phi::update_rules()[k.index].name) + "_update", type,
                                                 k.dtype, reinterpret_cast<void*>(update_adapter_for(k.index)));
    }
  };
}

// ---- the adapters

[[noreturn]] void throw_kernel_failure(const OAR_KernelContext_st& c, OAR_Status status, DataType dtype) {
  const std::string type = device_type_name(c.dev->place.type());
  std::string why = c.error.empty() ? DeviceManager::instance().last_error_message(type) : c.error;
  ErrorKind kind = status == OAR_ERROR_OUT_OF_MEMORY      ? ErrorKind::kResourceExhausted
                   : status == OAR_ERROR_INVALID_ARGUMENT ? ErrorKind::kInvalidArgument
                   : status == OAR_ERROR_UNIMPLEMENTED    ? ErrorKind::kUnimplemented
                                                          : ErrorKind::kInternal;
  throw Error(kind, detail::str_cat(c.kernel, ": the '", type, "' kernel for ", dtype_name(dtype), " failed with ",
                                    status_name(status), why.empty() ? "" : ": ", why));
}

// Note [Declined plugin kernels]: the CPU kernel a declined call runs instead, or the
// plugin's error, thrown.
void* declined_to_cpu(const OAR_KernelContext_st& c, DataType dtype) {
  void* cpu = KernelRegistry::instance().find(c.kernel, DeviceType::kCPU, dtype);
  if (cpu == nullptr || !dispatch::fallback_allowed(c.dev->place))
    throw_kernel_failure(c, OAR_ERROR_UNIMPLEMENTED, dtype);
  const std::string type = device_type_name(c.dev->place.type());
  const std::string why = c.error.empty() ? DeviceManager::instance().last_error_message(type) : c.error;
  dispatch::warn_fallback(c.kernel, c.dev->place.type(), dtype, why.empty() ? "declined the call" : why);
  return cpu;
}

template <typename T>
const void* address_of(const T& v) {
  if constexpr (std::is_pointer_v<T>) {
    return v;  // an optional input (or null) or an output
  } else {
    return &v;
  }
}

// The kinds among a signature's (the last entry is a sentinel) that satisfy `pred`.
template <size_t M>
constexpr size_t count_kinds(const Kind (&kinds)[M], bool (*pred)(Kind)) {
  size_t n = 0;
  for (size_t i = 0; i + 1 < M; ++i) n += pred(kinds[i]) ? 1 : 0;
  return n;
}
template <size_t N, size_t M>
constexpr std::array<Kind, N + 1> select_kinds(const Kind (&kinds)[M], bool (*pred)(Kind)) {
  std::array<Kind, N + 1> out{};
  size_t j = 0;
  for (size_t i = 0; i + 1 < M; ++i)
    if (pred(kinds[i])) out[j++] = kinds[i];
  return out;
}

// Note [Forward strides for plugin kernels]: a view may walk an axis backwards (x[::-1] is
// a view, as in NumPy), but a C kernel sees only forward strides: the adapter hands it
// contiguous copies of such inputs (made through the host, dense_tensor.cc; a one-element
// axis only gets a forward stride), so a plugin need not walk them and x[::-1] + 1 runs on
// every device. Outputs are the kernel's own, except in-place writes: a kernel may still
// refuse a backward output view. The test is inline: it runs on every plugin kernel call.
inline bool backward(const DenseTensor& t) {
  for (int i = 0; i < t.rank(); ++i)
    if (t.strides()[i] < 0) return has_negative_stride(t);
  return false;
}
inline bool backward(const DenseTensor* t) { return t != nullptr && backward(*t); }
inline bool backward(const std::vector<const DenseTensor*>& l) {
  return std::any_of(l.begin(), l.end(), [](const DenseTensor* t) { return backward(t); });
}
template <typename T>
bool backward(const T&) {
  return false;
}

// An argument as the kernel gets it after the copies above: the same object, or a holder of
// its copy that converts to the parameter's type and lives until the call returns.
struct ForwardTensor {
  DenseTensor t;
  operator const DenseTensor&() const { return t; }
};
struct ForwardOptional {
  DenseTensor t;
  bool present;
  operator const DenseTensor*() const { return present ? &t : nullptr; }
};
struct ForwardList {
  std::vector<DenseTensor> copies;
  std::vector<const DenseTensor*> l;
  operator const std::vector<const DenseTensor*>&() const { return l; }
};
// An input argument with each of its tensors replaced by F(tensor) (a copy, or the same
// view when F has nothing to change): forward strides here, host copies for a declined call.
template <DenseTensor (*F)(const DenseTensor&)>
ForwardTensor map_input(const DenseTensor& t) {
  return {F(t)};
}
template <DenseTensor (*F)(const DenseTensor&)>
ForwardOptional map_input(const DenseTensor* t) {
  return t == nullptr ? ForwardOptional{DenseTensor(), false} : ForwardOptional{F(*t), true};
}
template <DenseTensor (*F)(const DenseTensor&)>
ForwardList map_input(const std::vector<const DenseTensor*>& l) {
  ForwardList f;
  f.copies.reserve(l.size());  // no reallocation: l points into it
  for (const DenseTensor* t : l) f.copies.push_back(F(*t));
  for (const DenseTensor& t : f.copies) f.l.push_back(&t);
  return f;
}
inline ForwardTensor forward(const DenseTensor& t) { return map_input<without_negative_strides>(t); }
inline ForwardOptional forward(const DenseTensor* t) { return map_input<without_negative_strides>(t); }
inline ForwardList forward(const std::vector<const DenseTensor*>& l) { return map_input<without_negative_strides>(l); }
template <typename T>
T&& forward(T&& v) {
  return std::forward<T>(v);
}

// Note [Declined plugin kernels]: a plugin kernel may decline a call it does not serve (a
// rank, a layout, strides it does not walk) by returning OAR_ERROR_UNIMPLEMENTED before it
// writes or launches anything. The adapter then runs the op's CPU kernel on host copies, as
// the fallback runs an op whose kernel the device lacks: warned once per (kernel, device
// type, dtype), refused with the plugin's error when FLAGS_enable_api_kernel_fallback is off
// or the CPU has no kernel for the dtype. An output the call brought memory for (a donated
// input, an in-place write) gets the result copied into that memory; the others become
// device copies of the host results. Each argument below is the host side of one argument
// of the kernel's signature; `finish` writes an output back.
inline DenseTensor on_host(const DenseTensor& t) {
  if (t.place().is_cpu()) return t;
  DenseTensor h(t.dims(), t.dtype(), CPUPlace());
  h.alloc();
  copy_into(t, &h);
  return h;
}
struct HostOut {
  DenseTensor* dev;
  DenseTensor h;
  operator DenseTensor*() { return &h; }
};
struct HostOutList {
  std::vector<DenseTensor*> dev;
  std::vector<DenseTensor> h;
  operator std::vector<DenseTensor*>() {
    std::vector<DenseTensor*> p;
    for (DenseTensor& t : h) p.push_back(&t);
    return p;
  }
};
inline ForwardTensor host_arg(const DenseTensor& t) { return map_input<on_host>(t); }
inline ForwardOptional host_arg(const DenseTensor* t) { return map_input<on_host>(t); }
inline ForwardList host_arg(const std::vector<const DenseTensor*>& l) { return map_input<on_host>(l); }
inline DenseTensor host_out(const DenseTensor& d) {
  // The kernel's view of the output: its metadata, and its contents when it has memory.
  if (d.initialized()) return on_host(d);
  DenseTensor h = d;
  h.set_place(CPUPlace());
  return h;
}
inline HostOut host_arg(DenseTensor* out) { return {out, host_out(*out)}; }
inline HostOutList host_arg(const std::vector<DenseTensor*>& l) {
  HostOutList f{l, {}};
  for (DenseTensor* t : l) f.h.push_back(host_out(*t));
  return f;
}
template <typename T>
const T& host_arg(const T& v) {
  return v;  // an attribute
}
inline void finish(const DenseTensor& h, DenseTensor* dev, const Place& place) {
  if (dev->initialized() && dev->dims() == h.dims()) {
    copy_into(h, dev);
  } else if (h.initialized()) {
    DenseTensor d(h.dims(), h.dtype(), place);
    d.alloc();
    copy_into(h, &d);
    *dev = std::move(d);
  } else {
    *dev = DenseTensor(h.dims(), h.dtype(), place);
  }
}
inline void finish(HostOut& o, const Place& place) { finish(o.h, o.dev, place); }
inline void finish(HostOutList& o, const Place& place) {
  for (size_t i = 0; i < o.dev.size(); ++i) finish(o.h[i], o.dev[i], place);
}
template <typename T>
void finish(T&, const Place&) {}

template <int K, int DtypeFrom, typename Sig>
struct Adapter;

template <int K, int DtypeFrom, typename... A>
struct Adapter<K, DtypeFrom, void (*)(const DeviceContext&, A...)> {
  static constexpr Kind kKinds[] = {ArgKind<A>::kind..., Kind::kOut};  // (a sentinel: never empty)
  static constexpr size_t kIn = count_kinds(kKinds, is_input), kOut = count_kinds(kKinds, is_output),
                          kAttrs = count_kinds(kKinds, is_attr);
  static constexpr auto kInKinds = select_kinds<kIn>(kKinds, is_input);
  static constexpr auto kOutKinds = select_kinds<kOut>(kKinds, is_output);
  static constexpr auto kAttrKinds = select_kinds<kAttrs>(kKinds, is_attr);

  static void call(const DeviceContext& ctx, A... a) {
    if (__builtin_expect((backward(a) || ...), 0)) return call_forward(ctx, a...);
    const void* in[kIn + 1];
    const void* attrs[kAttrs + 1];
    void* outs[kOut + 1];
    size_t i = 0, j = 0, o = 0;
    auto put = [&](auto& v, Kind k) {
      if (is_input(k)) {
        in[i++] = address_of(v);
      } else if (is_output(k)) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, DenseTensor*>) {
          outs[o++] = v;
        } else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::vector<DenseTensor*>>) {
          outs[o++] = &v;  // the adapter's own copy of the list, alive for the call
        }
      } else {
        attrs[j++] = address_of(v);
      }
    };
    (put(a, ArgKind<A>::kind), ...);
    DataType dtype = DataType::UNDEFINED;
    if constexpr (DtypeFrom < 0) {
      if (kOutKinds[0] == Kind::kOut) {
        dtype = static_cast<DenseTensor*>(outs[0])->dtype();
      } else if (const auto* l = static_cast<std::vector<DenseTensor*>*>(outs[0]); !l->empty()) {
        dtype = (*l)[0]->dtype();
      }
    } else if (kInKinds[DtypeFrom] == Kind::kTensorList) {
      const auto* l = static_cast<const std::vector<const DenseTensor*>*>(in[DtypeFrom]);
      if (!l->empty()) dtype = (*l)[0]->dtype();
    } else if (in[DtypeFrom] != nullptr) {
      dtype = static_cast<const DenseTensor*>(in[DtypeFrom])->dtype();
    }
    const int d = static_cast<int>(dtype);
    OAR_KernelFn fn =
        d >= 0 && d < kNumDataTypes ? g_fns[K][ctx.place.type_id()][d].load(std::memory_order_acquire) : nullptr;
    OAR_KernelContext_st c{
        &ctx, kKernelNames[K], in, kInKinds.data(), kIn, attrs, kAttrKinds.data(), kAttrs, outs, kOutKinds.data(), kOut,
        {}};
    if (__builtin_expect(fn == nullptr, 0)) throw_kernel_failure(c, OAR_ERROR_INTERNAL, dtype);
    const OAR_Status status = fn(&g_api, &c);
    if (__builtin_expect(status != OAR_SUCCESS, 0)) {
      if (status != OAR_ERROR_UNIMPLEMENTED) throw_kernel_failure(c, status, dtype);
      call_on_cpu(declined_to_cpu(c, dtype), ctx.place, a...);
    }
  }

  // Note [Forward strides for plugin kernels]: the rare call with a backward input view.
  [[gnu::noinline]] static void call_forward(const DeviceContext& ctx, A... a) { call(ctx, forward(a)...); }

  // Note [Declined plugin kernels]: the CPU kernel on host copies, its outputs written back.
  [[gnu::noinline, gnu::cold]] static void call_on_cpu(void* cpu, const Place& place, A... a) {
    std::tuple<decltype(host_arg(a))...> host{host_arg(a)...};
    const auto kernel = reinterpret_cast<void (*)(const DeviceContext&, A...)>(cpu);
    const DeviceContext& host_ctx = device_context(CPUPlace());
    std::apply([&](auto&... h) { kernel(host_ctx, h...); }, host);
    std::apply([&](auto&... h) { (finish(h, place), ...); }, host);
  }
};

template <int R>
void update_adapter(const DeviceContext& ctx, const phi::UpdateArgs& a) {
  const DataType dtype = a.params.empty() ? DataType::UNDEFINED : a.params[0]->dtype();
  std::vector<std::vector<const DenseTensor*>> lists;
  lists.reserve(2 + a.states.size());
  lists.emplace_back(a.params.begin(), a.params.end());
  lists.push_back(a.grads);
  for (const phi::ParamList& st : a.states) lists.emplace_back(st.begin(), st.end());
  std::vector<const void*> in;
  for (const auto& l : lists) in.push_back(&l);
  const std::vector<Kind> in_kinds(in.size(), Kind::kTensorList);
  const bool flag = a.flag;
  const int64_t step = a.step;
  const void* attrs[] = {&a.lrs, &a.wds, &a.scalars, &flag, &step};
  static constexpr Kind kAttrKinds[] = {Kind::kFloats, Kind::kFloats, Kind::kFloats, Kind::kBool, Kind::kInt};
  const int d = static_cast<int>(dtype);
  OAR_KernelFn fn =
      d >= 0 && d < kNumDataTypes ? g_update_fns[R][ctx.place.type_id()][d].load(std::memory_order_acquire) : nullptr;
  const std::string name = std::string(phi::update_rules()[R].name) + "_update";
  OAR_KernelContext_st c{
      &ctx, name.c_str(), in.data(), in_kinds.data(), in.size(), attrs, kAttrKinds, 5, nullptr, nullptr, 0, {}};
  if (fn == nullptr) throw_kernel_failure(c, OAR_ERROR_INTERNAL, dtype);
  const OAR_Status status = fn(&g_api, &c);
  if (status == OAR_ERROR_UNIMPLEMENTED) return api::update_on_host(declined_to_cpu(c, dtype), a);
  if (status != OAR_SUCCESS) throw_kernel_failure(c, status, dtype);
}

template <int... R>
constexpr std::array<phi::UpdateKernel, sizeof...(R)> update_adapters(std::integer_sequence<int, R...>) {
  return {&update_adapter<R>...};
}
phi::UpdateKernel update_adapter_for(int rule) {
  static const auto adapters = update_adapters(std::make_integer_sequence<int, kMaxUpdateRules>{});
  return adapters[rule];
}

const std::vector<KernelInfo>& kernel_infos() {
  static const std::vector<KernelInfo> infos = {
#define OAR_X(name, types, display, dtype_from) \
  {#name, types, display,                       \
   reinterpret_cast<void*>(static_cast<kernel_sig::name>(&Adapter<k_##name, dtype_from, kernel_sig::name>::call))},
      OAR_C_KERNEL_TABLE(OAR_X)
#undef OAR_X
  };
  return infos;
}

const bool g_stager_installed = [] {
  set_kernel_stager(stage_kernels);
  return true;
}();

}  // namespace
}  // namespace oar::backends
