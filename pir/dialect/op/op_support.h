// Helpers the generated op dialect (gen_pir_ops.py -> <build>/generated/oar_generated/
// pir_ops.cc) calls: operand types <-> DenseTensor metadata for the infer-meta
// functions, typed attribute getters with errors naming the op, and the eval context
// constant folding runs the eager op API through.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "paddle_core/tensor/scalar.h"
#include "paddle_core/tensor/tensor.h"
#include "pir/ir/infer.h"

namespace oar::pir {

/// Inputs and attributes of an op evaluated eagerly on constant data.
struct EvalContext {
  const OpInfo* info = nullptr;
  const std::vector<NamedAttribute>* attrs = nullptr;  // sorted by name
  std::vector<std::vector<Tensor>> inputs;  // per input spec: 1 tensor, 0 (absent optional) or a list
  std::vector<Tensor> outputs;              // one per output (list outputs are flattened)
  Attribute attr(size_t i) const;
};

/// The attribute of schema entry i from a sorted list (its default when absent).
Attribute lookup_attr(const OpInfo* info, const std::vector<NamedAttribute>* attrs, size_t i);
/// The attribute kinds a definition-file type accepts ("int[]" -> shape ...).
bool attr_kind_matches(const std::string& type, Attribute a);

namespace opgen {

/// A stand-in size for dynamic dims while infer-meta runs (mapped back to -1 after).
constexpr int64_t kDynamicSentinel = 1000000007;

DenseTensor meta(const InferContext& c, size_t i);
/// nullptr for an absent optional input; otherwise fills `storage`.
const DenseTensor* opt_meta(const InferContext& c, size_t i, DenseTensor& storage);
std::vector<DenseTensor> list_meta(const InferContext& c, size_t i);
std::vector<const DenseTensor*> ptrs(const std::vector<DenseTensor>& v);
void set_out(InferContext& c, const DenseTensor& d);
void set_out_list(InferContext& c, const std::vector<DenseTensor>& d);
/// The output set last has sizes the kernel takes from the data (nonzero, unique...):
/// the 0 dims its infer-meta put there as placeholders become dynamic.
void mark_data_dependent(InferContext& c);
/// True when an input (or a list element) has a dynamic dim.
bool any_dynamic(const InferContext& c);
/// The input dtype (for promotion); list inputs use their first element.
DataType in_dtype(const InferContext& c, size_t i);

int64_t a_int(Attribute a, const OpInfo* info, size_t i);
double a_float(Attribute a, const OpInfo* info, size_t i);
bool a_bool(Attribute a, const OpInfo* info, size_t i);
std::string a_str(Attribute a, const OpInfo* info, size_t i);
std::vector<int64_t> a_ints(Attribute a, const OpInfo* info, size_t i);
std::vector<double> a_floats(Attribute a, const OpInfo* info, size_t i);
DataType a_dtype(Attribute a, const OpInfo* info, size_t i);
Place a_place(Attribute a, const OpInfo* info, size_t i);
Scalar a_scalar(Attribute a, const OpInfo* info, size_t i);

inline void set_eval_out(EvalContext& c, const Tensor& t) { c.outputs.push_back(t); }
inline void set_eval_out(EvalContext& c, const std::vector<Tensor>& t) {
  c.outputs.insert(c.outputs.end(), t.begin(), t.end());
}
template <typename... T> void set_eval_out(EvalContext& c, const std::tuple<T...>& t) {
  std::apply([&](const auto&... x) { (set_eval_out(c, x), ...); }, t);
}
const Tensor& e_tensor(const EvalContext& c, size_t i);
Tensor e_opt(const EvalContext& c, size_t i);

/// Runs a generated inference body: dynamic dims enter as kDynamicSentinel; when that
/// fails (e.g. broadcasting ? against 3) it retries with them as 1, and output dims
/// that come out 1 where an input was dynamic stay dynamic. Errors are rethrown with
/// the IR op's name.
void run_infer(InferContext& c, void (*body)(InferContext&));

}  // namespace opgen
}  // namespace oar::pir
