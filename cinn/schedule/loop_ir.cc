#include "cinn/schedule/loop_ir.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "cinn/dialect.h"
#include "paddle_core/base/errors.h"
#include "pir/dialect/op/op_support.h"
#include "pir/ir/operation.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

namespace {

// How each supported op lowers: the one table the fusion pass and the lowering share.
enum class Form : uint8_t {
  kUnary,
  kBinary,
  kReduce,
  kMean,
  kScale,
  kPow,
  kClip,
  kSquare,
  kSumTo,
  kCompare,  // float operands, a bool result (Note [Select and masks])
  kSelect,   // where(bool mask, x, y)
  kCast,     // a bool mask (or the group's dtype) to the group's dtype
  kFill,     // full_like(x, v): the constant v (x gives only the shape)
  kLogical,  // and/or/xor/not of masks (or of floats: nonzero is true), a bool result
};
struct Lowering {
  Form form;
  const char* op;  // the loop IR op
};
const std::unordered_map<std::string, Lowering>& lowerings() {
  static const std::unordered_map<std::string, Lowering> t = {
      {"pd_op.exp", {Form::kUnary, "exp"}},
      {"pd_op.log", {Form::kUnary, "log"}},
      {"pd_op.log1p", {Form::kUnary, "log1p"}},
      {"pd_op.expm1", {Form::kUnary, "expm1"}},
      {"pd_op.sqrt", {Form::kUnary, "sqrt"}},
      {"pd_op.rsqrt", {Form::kUnary, "rsqrt"}},
      {"pd_op.reciprocal", {Form::kUnary, "reciprocal"}},
      {"pd_op.tanh", {Form::kUnary, "tanh"}},
      {"pd_op.erf", {Form::kUnary, "erf"}},
      {"pd_op.abs", {Form::kUnary, "abs"}},
      {"pd_op.neg", {Form::kUnary, "neg"}},
      {"pd_op.relu", {Form::kUnary, "relu"}},
      {"pd_op.sigmoid", {Form::kUnary, "sigmoid"}},
      {"pd_op.square", {Form::kSquare, "mul"}},
      {"pd_op.add", {Form::kBinary, "add"}},
      {"pd_op.subtract", {Form::kBinary, "sub"}},
      {"pd_op.multiply", {Form::kBinary, "mul"}},
      {"pd_op.divide", {Form::kBinary, "div"}},
      {"pd_op.maximum", {Form::kBinary, "max"}},
      {"pd_op.minimum", {Form::kBinary, "min"}},
      {"pd_op.sum", {Form::kReduce, "sum"}},
      {"pd_op.max", {Form::kReduce, "max"}},
      {"pd_op.min", {Form::kReduce, "min"}},
      {"pd_op.amax", {Form::kReduce, "max"}},  // the values of max (only the gradients differ)
      {"pd_op.amin", {Form::kReduce, "min"}},
      {"pd_op.mean", {Form::kMean, "sum"}},
      {"pd_op.sum_to", {Form::kSumTo, "sum"}},
      {"pd_op.scale", {Form::kScale, ""}},
      {"pd_op.pow", {Form::kPow, ""}},
      {"pd_op.clip", {Form::kClip, ""}},
      // A broadcast to the loop space is a load of the operand's class (batch_norm's
      // backward expands per-channel values: Note [Channel reductions]).
      {"pd_op.expand", {Form::kUnary, "id"}},
      // Note [Select and masks]: masks are 1/0 values of the group's compute type inside a
      // group, bytes in memory.
      {"pd_op.less_than", {Form::kCompare, "lt"}},
      {"pd_op.less_equal", {Form::kCompare, "le"}},
      {"pd_op.greater_than", {Form::kCompare, "gt"}},
      {"pd_op.greater_equal", {Form::kCompare, "ge"}},
      {"pd_op.equal", {Form::kCompare, "eq"}},
      {"pd_op.not_equal", {Form::kCompare, "ne"}},
      {"pd_op.where", {Form::kSelect, "select"}},
      {"pd_op.cast", {Form::kCast, "id"}},
      {"pd_op.full_like", {Form::kFill, ""}},
      // Exact on 1/0 masks: and = a * b, or = max(a, b), xor = a != b, not = a == 0.
      {"pd_op.logical_and", {Form::kLogical, "mul"}},
      {"pd_op.logical_or", {Form::kLogical, "max"}},
      {"pd_op.logical_xor", {Form::kLogical, "ne"}},
      {"pd_op.logical_not", {Form::kLogical, "not"}},
  };
  return t;
}

Attribute attr_of(const Operation* op, const char* name) {
  const int i = op->info()->attr_index(name);
  OAR_ENFORCE(i >= 0, Internal, op->name(), " has no attribute ", name);
  return lookup_attr(op->info(), &op->attributes(), static_cast<size_t>(i));
}
double f_attr(const Operation* op, const char* name) {
  const int i = op->info()->attr_index(name);
  return opgen::a_float(attr_of(op, name), op->info(), static_cast<size_t>(i));
}

bool is_float_tensor(Type t) {
  // bfloat16: loaded as bf16, computed in float32, stored as bf16 (the codegens).
  return t && t.is_tensor() &&
         (t.dtype() == DataType::FLOAT32 || t.dtype() == DataType::FLOAT64 || t.dtype() == DataType::BFLOAT16);
}

bool is_bool_tensor(Type t) { return t && t.is_tensor() && t.dtype() == DataType::BOOL; }

// A reduction over the last axis only (the loop space's column axis).
bool last_axis_reduce(const Operation* op, std::string* why) {
  const int64_t rank = static_cast<int64_t>(op->operand(0).type().dims().size());
  std::vector<int64_t> axis = opgen::a_ints(attr_of(op, "axis"), op->info(), op->info()->attr_index("axis"));
  const bool ok =
      rank >= 1 && ((axis.size() == 1 && (axis[0] == rank - 1 || axis[0] == -1)) || (axis.empty() && rank == 1));
  if (!ok && why) *why = "reduces other than along the last axis";
  if (ok && op->name() == "pd_op.sum") {
    const DataType d = attr_of(op, "dtype").as_dtype();
    if (d != DataType::UNDEFINED && d != op->operand(0).type().dtype()) {
      if (why) *why = "sum with a dtype change";
      return false;
    }
  }
  return ok;
}

bool keepdim(const Operation* op) { return attr_of(op, "keepdim").as_bool(); }

// A column reduction's kept leading axes: sum/max/min/mean over the axes [k, rank - 2]
// (consecutive, ending before the last) keeps k (0: every axis but the last); -1 for
// other axes. sum_to keeps none.
int column_outer(const Operation* op) {
  if (op->name() == "pd_op.sum_to") return 0;
  const int64_t rank = op->operand(0).type().rank();
  std::vector<int64_t> axis = opgen::a_ints(attr_of(op, "axis"), op->info(), op->info()->attr_index("axis"));
  if (axis.empty() || rank < 2) return -1;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axis) {
    const int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank - 1 || seen[n]) return -1;
    seen[n] = true;
  }
  const int64_t k = rank - 1 - static_cast<int64_t>(axis.size());
  for (int64_t i = k; i < rank - 1; ++i)
    if (!seen[i]) return -1;
  return static_cast<int>(k);
}

// A column reduction (Note [Column reductions] in docs/notes/cinn.md): a sum, max, min or
// mean over every axis but the last (a bias's or a norm weight's gradient),
// `sum(x, axis=[0..k-2])` (max, min, mean alike) or `sum_to(x, [C])` /
// `sum_to(x, [1, ..., 1, C])`, of a rank >= 2 operand with a static last dim, float32 or
// float64 (its partials live in the result's dtype).
bool column_reduce(const Operation* op, std::string* why) {
  const std::vector<int64_t> in = op->operand(0).type().dims();
  const int64_t rank = static_cast<int64_t>(in.size());
  const auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  if (rank < 2 || in.back() < 0) return fail("reduces other than along the last axis");
  if (op->operand(0).type().dtype() == DataType::BFLOAT16) return fail("column reduction in bfloat16");
  if (op->name() == "pd_op.sum_to") {
    const std::vector<int64_t> shape = opgen::a_ints(attr_of(op, "shape"), op->info(), op->info()->attr_index("shape"));
    bool ok = !shape.empty() && static_cast<int64_t>(shape.size()) <= rank && shape.back() == in.back();
    for (size_t i = 0; ok && i + 1 < shape.size(); ++i) ok = shape[i] == 1;
    return ok || fail("sum_to a shape other than [C] or [1, ..., 1, C]");
  }
  const std::string& name = op->name();
  if (name != "pd_op.sum" && name != "pd_op.max" && name != "pd_op.min" && name != "pd_op.amax" &&
      name != "pd_op.amin" && name != "pd_op.mean")
    return fail("reduces other than along the last axis");
  if (column_outer(op) < 0) return fail("reduces other than along the last axis or the axes before it");
  if (name != "pd_op.sum") return true;
  const DataType d = attr_of(op, "dtype").as_dtype();
  if (d != DataType::UNDEFINED && d != op->operand(0).type().dtype()) return fail("sum with a dtype change");
  return true;
}
bool is_reduce_form(Form f) { return f == Form::kReduce || f == Form::kMean || f == Form::kSumTo; }

// A channel reduction (Note [Channel reductions] in docs/notes/cinn.md): a sum or mean
// over the last axis and other axes, keeping at least one row axis (axes (0, 2, 3) of
// [N, C, H, W]: batch_norm's statistics), or a sum_to such a shape ([1, C, 1, 1] of
// [N, C, H, W]); float32/float64, the kept axes and every axis after the first kept one
// static. Returns the kept axes' dims with 1 elsewhere (the operand's rank, last 1);
// empty when `op` is no such reduction.
std::vector<int64_t> chan_keep(const Operation* op) {
  const std::string& name = op->name();
  if (name != "pd_op.sum" && name != "pd_op.mean" && name != "pd_op.sum_to") return {};
  const std::vector<int64_t> in = op->operand(0).type().dims();
  const int64_t rank = static_cast<int64_t>(in.size());
  const DataType dt = op->operand(0).type().dtype();
  if (rank < 2 || in.back() == 1 || (dt != DataType::FLOAT32 && dt != DataType::FLOAT64)) return {};
  std::vector<int64_t> keep(rank, 1);
  if (name == "pd_op.sum_to") {
    std::vector<int64_t> s = opgen::a_ints(attr_of(op, "shape"), op->info(), op->info()->attr_index("shape"));
    if (s.empty() || static_cast<int64_t>(s.size()) > rank || s.back() != 1) return {};
    s.insert(s.begin(), rank - static_cast<int64_t>(s.size()), 1);
    for (int64_t i = 0; i + 1 < rank; ++i) {
      if (s[i] != 1 && s[i] != in[i]) return {};
      keep[i] = s[i];
    }
  } else {
    if (name == "pd_op.sum") {
      const DataType d = attr_of(op, "dtype").as_dtype();
      if (d != DataType::UNDEFINED && d != dt) return {};
    }
    std::vector<int64_t> axis = opgen::a_ints(attr_of(op, "axis"), op->info(), op->info()->attr_index("axis"));
    std::vector<bool> red(rank, false);
    for (int64_t a : axis) {
      const int64_t n = a < 0 ? a + rank : a;
      if (n < 0 || n >= rank) return {};
      red[n] = true;
    }
    if (axis.empty() || !red[rank - 1]) return {};
    for (int64_t i = 0; i + 1 < rank; ++i) keep[i] = red[i] ? 1 : in[i];
  }
  int64_t first = -1;
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (keep[i] != 1 && first < 0) first = i;
  if (first < 0) return {};  // no kept axis: a full reduction
  for (int64_t i = first; i + 1 < rank; ++i)
    if (in[i] < 0) return {};
  return keep;
}
bool is_chan(const Operation* op, Form f) {
  return (f == Form::kSumTo || ((f == Form::kReduce || f == Form::kMean) && !last_axis_reduce(op, nullptr))) &&
         !chan_keep(op).empty();
}

// Whether a reduction op (of a reduce form) sums over the rows rather than the columns.
bool is_column(const Operation* op, Form f) {
  return (f == Form::kSumTo || ((f == Form::kReduce || f == Form::kMean) && !last_axis_reduce(op, nullptr))) &&
         !is_chan(op, f);
}

// pow with an exponent the loop IR writes without a pow function.
bool pow_supported(double y) { return y == 1.0 || y == 2.0 || y == 0.5 || y == -0.5 || y == -1.0 || y == 3.0; }

}  // namespace

namespace {
thread_local std::function<std::vector<int64_t>(Value)> t_dims;
}  // namespace

std::vector<int64_t> value_dims(Value v) { return t_dims ? t_dims(v) : v.type().dims(); }
DimsScope::DimsScope(std::function<std::vector<int64_t>(Value)> f) : prev(std::move(t_dims)) { t_dims = std::move(f); }
DimsScope::~DimsScope() { t_dims = std::move(prev); }

bool same_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) { return a == b; }

VClass classify(const std::vector<int64_t>& dims, const std::vector<int64_t>& space) {
  const size_t k = space.size();
  if (dims.size() > k) return VClass::kNone;
  if (dims == space) return VClass::kFull;
  bool ones = true;
  for (int64_t d : dims) ones &= d == 1;
  if (k >= 1 && dims.size() == k && dims.back() == 1 && std::equal(dims.begin(), dims.end() - 1, space.begin()))
    return VClass::kRow;
  if (ones) return VClass::kScalar;
  if (k >= 1 && !dims.empty() && dims.back() == space.back() && dims.back() >= 0) {
    bool lead_ones = true;
    for (size_t i = 0; i + 1 < dims.size(); ++i) lead_ones &= dims[i] == 1;
    if (lead_ones) return VClass::kCol;
  }
  // One value per row, shared by rows (Note [Channel reductions]): every row axis 1 or the
  // space's, the last 1; static from the first non-1 axis on (row_terms).
  if (k >= 2 && !dims.empty() && dims.back() == 1 && space.back() != 1) {
    const size_t pad = k - dims.size();
    int64_t first = -1;
    for (size_t i = 0; i + 1 < k; ++i) {
      const int64_t d = i < pad ? 1 : dims[i - pad];
      if (d != 1 && (d < 0 || d != space[i])) return VClass::kNone;
      if (d != 1 && first < 0) first = static_cast<int64_t>(i);
    }
    for (size_t i = first < 0 ? k : static_cast<size_t>(first); i + 1 < k; ++i)
      if (space[i] < 0) return VClass::kNone;
    return first < 0 ? VClass::kNone : VClass::kBrow;
  }
  // A broadcast input (Note [Broadcast inputs]): every axis 1 or the space's, the last the
  // space's; all static, so the kernel maps a loop row to the input's row with constants.
  if (k < 2 || dims.empty() || dims.back() != space.back()) return VClass::kNone;
  const size_t pad = k - dims.size();
  for (size_t i = 0; i < k; ++i) {
    const int64_t d = i < pad ? 1 : dims[i - pad];
    if (space[i] < 0 || d < 0 || (d != 1 && d != space[i])) return VClass::kNone;
  }
  return VClass::kBcast;
}

std::vector<BcastTerm> bcast_terms(const LoopKernel& k, int input) { return row_terms(k.space, k.bcast.at(input)); }

std::vector<BcastTerm> row_terms(const std::vector<int64_t>& space, const std::vector<int64_t>& d) {
  const int64_t rank = static_cast<int64_t>(space.size());
  std::vector<BcastTerm> t;
  // Row axes 0 .. rank-2: axis i's index is r / div % mod with div the product of the
  // space's later row axes; the input's row advances by the product of its later row dims.
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (d[i] == 1) continue;
    int64_t div = 1, stride = 1;
    for (int64_t j = i + 1; j < rank - 1; ++j) {
      div *= space[j];
      stride *= d[j];
    }
    t.push_back({div, space[i], stride});
  }
  return t;
}

bool can_lower_op(const Operation* op, std::string* why) {
  auto it = lowerings().find(op->name());
  if (it == lowerings().end()) {
    if (why) *why = "no lowering";
    return false;
  }
  const Form f = it->second.form;
  const auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  // Note [Select and masks]: one float dtype per group (group_dtype); masks are bool. An op
  // on masks only computes in its group's dtype, whichever it is.
  const DataType dt = group_dtype(op);
  const bool masks = masks_only(op);
  if (op->num_results() != 1 || (dt == DataType::UNDEFINED && !masks))
    return fail("result dtype is not float32/float64/bfloat16");
  const Type rt = op->result(0).type();
  if (f == Form::kCompare || f == Form::kLogical || masks ? !is_bool_tensor(rt) : rt.dtype() != dt)
    return fail("result of another dtype");
  for (size_t i = 0; i < op->num_operands(); ++i) {
    const Value v = op->operand(i);
    if (!v || !v.type().is_tensor()) return fail("operands of another dtype");
    const bool mask =
        masks || (f == Form::kSelect && i == 0) || ((f == Form::kCast || f == Form::kFill) && is_bool_tensor(v.type()));
    if (mask ? !is_bool_tensor(v.type()) : v.type().dtype() != dt) return fail("operands of another dtype");
  }
  if (f == Form::kFill) {
    const DataType want = attr_of(op, "dtype").as_dtype();
    if (want != DataType::UNDEFINED && want != dt) return fail("full_like with a dtype change");
    if (opgen::a_scalar(attr_of(op, "fill_value"), op->info(), op->info()->attr_index("fill_value")).is_complex())
      return fail("full_like with a complex value");
  }
  if (f == Form::kSumTo && !is_chan(op, f) && !column_reduce(op, why)) return false;
  if ((f == Form::kReduce || f == Form::kMean) && !last_axis_reduce(op, why) && !is_chan(op, f)) {
    std::string col_why;
    if (!column_reduce(op, &col_why)) return false;
  }
  if (f == Form::kScale && !attr_of(op, "bias_after_scale").as_bool() && f_attr(op, "bias") != 0.0) {
    if (why) *why = "scale with bias before scale";
    return false;
  }
  if (f == Form::kClip && !(f_attr(op, "min") <= f_attr(op, "max"))) {
    // Lowered as max(min(x, hi), lo): the kernel's `x < lo ? lo : x > hi ? hi : x` only
    // when lo <= hi (Python's clip raises otherwise; a program may still hold one).
    if (why) *why = "clip with min > max";
    return false;
  }
  if (f == Form::kPow && !pow_supported(f_attr(op, "y"))) {
    if (why) *why = "pow with a general exponent";
    return false;
  }
  return true;
}

DataType group_dtype(const Operation* op) {
  auto it = lowerings().find(op->name());
  if (it == lowerings().end() || op->num_results() != 1) return DataType::UNDEFINED;
  // A compare's or a logical op's dtype is its operands'; every other op's its result's.
  const Form f = it->second.form;
  const Type t = f == Form::kCompare || f == Form::kLogical ? (op->num_operands() ? op->operand(0).type() : Type())
                                                            : op->result(0).type();
  return is_float_tensor(t) ? t.dtype() : DataType::UNDEFINED;
}

bool masks_only(const Operation* op) {
  auto it = lowerings().find(op->name());
  if (it == lowerings().end() || op->num_results() != 1 || op->num_operands() == 0 ||
      !is_bool_tensor(op->result(0).type()))
    return false;
  const Form f = it->second.form;
  if (f != Form::kLogical && f != Form::kSelect && op->name() != "pd_op.expand") return false;
  for (Value v : op->operands())
    if (!v || !is_bool_tensor(v.type())) return false;
  return true;
}

int column_outer_of(const Operation* op) {
  auto it = lowerings().find(op->name());
  if (it == lowerings().end() || !is_reduce_form(it->second.form) || !is_column(op, it->second.form)) return -1;
  return std::max(column_outer(op), 0);
}

bool cross_row_reduction(const Operation* op) {
  auto it = lowerings().find(op->name());
  return it != lowerings().end() && is_reduce_form(it->second.form) &&
         (is_column(op, it->second.form) || is_chan(op, it->second.form));
}

std::vector<int64_t> op_space(const Operation* op) {
  auto it = lowerings().find(op->name());
  const bool reduce = it != lowerings().end() && is_reduce_form(it->second.form);
  return value_dims(reduce ? op->operand(0) : op->result(0));
}

namespace {
// A reduction without keepdim yields [R] (rank k-1): a kRow value that elementwise ops
// would broadcast along the columns (numpy), so nothing in a group may read it.
bool is_dropped_row(Value v) {
  const Operation* d = v.defining_op();
  if (!d) return false;
  auto it = lowerings().find(d->name());
  return it != lowerings().end() && (it->second.form == Form::kReduce || it->second.form == Form::kMean) &&
         !is_column(d, it->second.form) && !is_chan(d, it->second.form) && !keepdim(d);
}
// A column reduction's result is complete only after every row: no member reads it.
bool is_column_sum(Value v) {
  const Operation* d = v.defining_op();
  if (!d) return false;
  auto it = lowerings().find(d->name());
  return it != lowerings().end() && is_reduce_form(it->second.form) && is_column(d, it->second.form);
}
}  // namespace

bool fits_space(const Operation* op, const std::vector<int64_t>& space, bool sums_in_group) {
  auto it = lowerings().find(op->name());
  if (it == lowerings().end() || space.empty()) return false;
  const bool reduce = is_reduce_form(it->second.form);
  for (Value v : op->operands()) {
    const VClass c = classify(value_dims(v), space);
    if (c == VClass::kNone || is_dropped_row(v) || (sums_in_group && is_column_sum(v)) ||
        (reduce && c != VClass::kFull))
      return false;
  }
  if (reduce && is_chan(op, it->second.form)) return value_dims(op->operand(0)) == space;
  if (reduce && is_column(op, it->second.form)) {  // a column reduction: [C] or [1, ..., 1, C]
    const std::vector<int64_t> r = value_dims(op->result(0));
    if (space.size() < 2 || value_dims(op->operand(0)) != space) return false;
    const int k = column_outer(op);
    if (k <= 0) return classify(r, space) == VClass::kCol;
    // kept leading axes: [a, C] or [a, 1, C] of [a, b, C] (the outer axes' dims as the space's)
    std::vector<int64_t> want(space.begin(), space.begin() + k);
    if (keepdim(op)) want.resize(space.size() - 1, 1);
    want.push_back(space.back());
    return r == want;
  }
  if (reduce) {
    const std::vector<int64_t> r = value_dims(op->result(0));
    return keepdim(op) ? classify(r, space) == VClass::kRow
                       : std::equal(r.begin(), r.end(), space.begin()) && r.size() + 1 == space.size();
  }
  const VClass c = classify(value_dims(op->result(0)), space);
  return c == VClass::kFull || c == VClass::kRow;
}

std::vector<int64_t> merge_cols(const std::vector<int64_t>& dims, size_t rank, int col_axes) {
  std::vector<int64_t> d(dims);
  if (col_axes <= 1 || d.size() > rank) return d;
  d.insert(d.begin(), rank - d.size(), 1);
  int64_t c = 1;
  for (size_t i = rank - col_axes; i < rank; ++i) c = (c < 0 || d[i] < 0) ? -1 : c * d[i];
  d.resize(rank - col_axes);
  d.push_back(c);
  return d;
}

namespace {
// The trailing axes of `space` a group computes as one column axis (Note [Channel
// reductions], "Merged columns"): while the columns are short (fewer than kShortCols, so
// the vector loops would be mostly tails) and the next axis is static and not 1, the most for which
// every value of the group (padded to the space's rank) is the space's or all 1s over
// them, and every channel reduction keeps none of them; at least one row axis stays (the
// threads split the rows). 1 (no merge) for a group with column reductions.
constexpr int64_t kShortCols = 128;
int merged_col_axes(const Block* body, const std::vector<int64_t>& space) {
  const size_t rank = space.size();
  if (rank < 3 || space.back() < 0) return 1;
  std::vector<std::vector<int64_t>> vals;
  auto pad = [&](std::vector<int64_t> d) {
    d.insert(d.begin(), rank - std::min(rank, d.size()), 1);
    return d;
  };
  for (size_t i = 0; i < body->num_arguments(); ++i) vals.push_back(pad(body->argument(i).type().dims()));
  for (const Operation* op : *body) {
    if (op->name() == kYieldOp) continue;
    const Form f = lowerings().at(op->name()).form;
    if (is_reduce_form(f) && is_column(op, f)) return 1;  // its kept axes are the space's
    vals.push_back(pad(is_chan(op, f) ? chan_keep(op) : op->result(0).type().dims()));
  }
  int best = 1;
  int64_t cols = space.back();
  for (size_t q = rank - 2; q >= 1 && cols < kShortCols && space[q] > 1; --q) {  // merge axes [q, rank)
    cols *= space[q];
    bool ok = true;
    for (const std::vector<int64_t>& v : vals) {
      if (v.size() != rank) return best;
      bool full = true, ones = true;
      for (size_t i = q; i < rank; ++i) {
        full &= v[i] == space[i];
        ones &= v[i] == 1;
      }
      ok &= full || ones;
    }
    if (!ok) break;
    best = static_cast<int>(rank - q);
  }
  return best;
}
}  // namespace

LoopKernel lower_fusion(const Operation* fusion) {
  OAR_ENFORCE(fusion->name() == kFusionOp, InvalidArgument, "lower_fusion: expected cinn.fusion, got ", fusion->name());
  const Block* body = fusion->region(0).front();
  LoopKernel k;
  // The loop space: the largest space of the group's ops (the fusion pass checked that
  // every op fits it).
  bool first = true;
  std::vector<std::vector<int64_t>> spaces;  // the ops' spaces of the largest rank
  for (const Operation* op : *body) {
    if (op->name() == kYieldOp) continue;
    std::string why;
    OAR_ENFORCE(can_lower_op(op, &why), Unimplemented, "cinn: cannot lower ", op->name(), " (", why, ")");
    std::vector<int64_t> s = op_space(op);
    if (!spaces.empty() && s.size() > spaces[0].size()) spaces.clear();
    if (spaces.empty() || (s.size() == spaces[0].size() && std::find(spaces.begin(), spaces.end(), s) == spaces.end()))
      spaces.push_back(s);
    const DataType dt = group_dtype(op);
    if (dt == DataType::UNDEFINED) continue;  // masks only: the group's dtype
    OAR_ENFORCE(first || k.dtype == dt, Unimplemented, "cinn: a group of two float dtypes (", op->name(), ")");
    k.dtype = dt;
    first = false;
  }
  // A group of masks only computes in float32 (exact: its values are 1 and 0).
  if (first) k.dtype = DataType::FLOAT32;
  // The one every op fits (the fuser's: a row op [R, 1] may come before the [R, C] ones).
  const char* misfit = nullptr;
  for (const std::vector<int64_t>& s : spaces) {
    misfit = nullptr;
    for (const Operation* op : *body)
      if (op->name() != kYieldOp && !misfit && !fits_space(op, s)) misfit = op->name().c_str();
    k.space = s;
    if (!misfit) break;
  }
  OAR_ENFORCE(!misfit, Unimplemented, "cinn: ", misfit, " does not fit the loop space");
  // Note [Channel reductions]: a group computes over [N, C, H*W] rather than [N, C, H, W]
  // when W is short and every value allows it (longer rows for the vector loops).
  const size_t rank0 = k.space.size();
  k.col_axes = merged_col_axes(body, k.space);
  const auto cdims = [&](const std::vector<int64_t>& d) { return merge_cols(d, rank0, k.col_axes); };
  k.space = cdims(k.space);
  std::unordered_map<const void*, int> node_of;
  auto add = [&](Node n) {
    k.nodes.push_back(std::move(n));
    return static_cast<int>(k.nodes.size()) - 1;
  };
  auto konst = [&](double v) {
    Node n;
    n.kind = Node::kConst;
    n.value = v;
    n.cls = VClass::kScalar;
    return add(n);
  };
  auto bin = [&](const char* o, int a, int b, VClass cls) {
    Node n;
    n.kind = Node::kBinary;
    n.op = o;
    n.a = a;
    n.b = b;
    n.cls = cls;
    return add(n);
  };
  auto un = [&](const char* o, int a, VClass cls) {
    Node n;
    n.kind = Node::kUnary;
    n.op = o;
    n.a = a;
    n.cls = cls;
    return add(n);
  };
  for (size_t i = 0; i < body->num_arguments(); ++i) {
    const VClass c = classify(cdims(body->argument(i).type().dims()), k.space);
    OAR_ENFORCE(c != VClass::kNone, Unimplemented, "cinn: group input ", i, " ", body->argument(i).type().str(),
                " does not fit the loop space");
    k.inputs.push_back(c);
    k.bool_in.push_back(body->argument(i).type().dtype() == DataType::BOOL ? 1 : 0);
    std::vector<int64_t> b;
    if (c == VClass::kBcast || c == VClass::kBrow) {
      b = cdims(body->argument(i).type().dims());
      b.insert(b.begin(), k.space.size() - b.size(), 1);
    }
    k.bcast.push_back(std::move(b));
    if (c == VClass::kFull && k.ref_input < 0) k.ref_input = static_cast<int>(i);
    Node n;
    n.kind = Node::kInput;
    n.input = static_cast<int>(i);
    n.cls = c;
    node_of[body->argument(i).impl()] = add(n);
  }
  OAR_ENFORCE(k.ref_input >= 0, Unimplemented, "cinn: no group input spans the loop space");
  std::unordered_map<int, LoopKernel::ChanOut> chan_of;  // channel reductions' nodes
  std::unordered_set<const void*> cross_row;             // their results and column sums'
  for (const Operation* op : *body) {
    if (op->name() == kYieldOp) {
      for (Value v : op->operands()) {
        const int n = node_of.at(v.impl());
        const VClass c = k.nodes[n].cls;
        OAR_ENFORCE(c == VClass::kFull || c == VClass::kRow || c == VClass::kCol, Unimplemented,
                    "cinn: a group output must span rows or the loop space");
        k.outputs.push_back(n);
        k.bool_out.push_back(v.type().dtype() == DataType::BOOL ? 1 : 0);
        k.out_rank_drop.push_back(static_cast<int>(rank0 - v.type().dims().size()));
        auto ch = chan_of.find(n);
        k.chan.push_back(ch == chan_of.end() ? LoopKernel::ChanOut{} : ch->second);
      }
      break;
    }
    const Lowering& l = lowerings().at(op->name());
    for (Value v : op->operands())
      OAR_ENFORCE(!cross_row.count(v.impl()), Unimplemented, "cinn: ", op->name(),
                  " reads a column or channel reduction of its own group");
    if (cross_row_reduction(op)) cross_row.insert(op->result(0).impl());
    const int a = node_of.at(op->operand(0).impl());
    const int b = op->num_operands() > 1 ? node_of.at(op->operand(1).impl()) : -1;
    const int c3 = op->num_operands() > 2 ? node_of.at(op->operand(2).impl()) : -1;
    const bool reduce = is_reduce_form(l.form);
    const bool chan = reduce && is_chan(op, l.form);
    const bool column = reduce && is_column(op, l.form);
    const VClass cls = column   ? VClass::kCol
                       : reduce ? VClass::kRow
                                : classify(cdims(op->result(0).type().dims()), k.space);
    int r = -1;
    switch (l.form) {
      case Form::kUnary:
        r = un(l.op, a, cls);
        break;
      case Form::kBinary:
        r = bin(l.op, a, b, cls);
        break;
      case Form::kSquare:
        r = bin("mul", a, a, cls);
        break;
      case Form::kReduce:
      case Form::kMean:
      case Form::kSumTo: {
        Node n;
        n.kind = Node::kReduce;
        // A column mean is its own op: the sum over the rows, divided by their count at
        // run time (the count is known only after every row).
        n.op = column && l.form == Form::kMean ? "mean" : l.op;
        if (column) {
          const int outer = std::max(column_outer(op), 0);
          const bool first = std::none_of(k.nodes.begin(), k.nodes.end(), [](const Node& m) {
            return m.kind == Node::kReduce && m.cls == VClass::kCol;
          });
          OAR_ENFORCE(first || outer == k.col_outer, Unimplemented,
                      "cinn: column reductions keeping different leading axes in one group");
          k.col_outer = outer;
        }
        n.a = a;
        n.cls = cls;
        r = add(n);
        if (chan) {  // a row sum the run time folds (Note [Channel reductions])
          chan_of[r] = {cdims(chan_keep(op)), op->result(0).type().dims(), l.form == Form::kMean};
          break;
        }
        if (l.form == Form::kMean && !column) {
          // mean = sum / C; C comes at run time: the codegen's "divc" divides by it.
          r = un("divc", r, VClass::kRow);
        }
        break;
      }
      case Form::kScale: {
        const double s = f_attr(op, "scale"), bias = f_attr(op, "bias");
        r = s == 1.0 ? a : bin("mul", a, konst(s), cls);
        if (bias != 0.0) r = bin("add", r, konst(bias), cls);
        if (r == a) r = un("id", a, cls);
        break;
      }
      case Form::kPow: {
        const double y = f_attr(op, "y");
        if (y == 1.0) r = un("id", a, cls);
        if (y == 2.0) r = bin("mul", a, a, cls);
        if (y == 3.0) r = bin("mul", bin("mul", a, a, cls), a, cls);
        if (y == 0.5) r = un("sqrt", a, cls);
        if (y == -0.5) r = un("rsqrt", a, cls);
        if (y == -1.0) r = un("reciprocal", a, cls);
        break;
      }
      case Form::kClip:
        r = bin("max", bin("min", a, konst(f_attr(op, "max")), cls), konst(f_attr(op, "min")), cls);
        break;
      case Form::kCompare:
        r = bin(l.op, a, b, cls);
        break;
      case Form::kSelect: {
        Node n;
        n.kind = Node::kSelect;
        n.op = l.op;
        n.a = a;
        n.b = b;
        n.c = c3;
        n.cls = cls;
        r = add(n);
        break;
      }
      case Form::kCast:
        r = un("id", a, cls);
        break;
      case Form::kLogical: {
        // Note [Select and masks]: a mask is 1 or 0, a float operand true when nonzero (NaN
        // too, as the eager kernels' static_cast<bool>): ne(x, 0) makes it a mask.
        const auto truth = [&](int n, size_t i) {
          return is_bool_tensor(op->operand(i).type()) ? n : bin("ne", n, konst(0.0), cls);
        };
        if (std::string_view(l.op) == "not") {
          const int zero = konst(0.0);
          r = bin("eq", a, zero, cls);
          break;
        }
        const int ta = truth(a, 0);  // in order: the node list is the cache key
        const int tb = truth(b, 1);
        r = bin(l.op, ta, tb, cls);
        break;
      }
      case Form::kFill: {
        const int i = op->info()->attr_index("fill_value");
        r = un("id", konst(opgen::a_scalar(attr_of(op, "fill_value"), op->info(), static_cast<size_t>(i)).to_double()),
               cls);
        break;
      }
    }
    node_of[op->result(0).impl()] = r;
  }
  one_pass_variance(k);
  share_erf_exp(k);
  return k;
}

std::string LoopKernel::text() const {
  static const char* cls[] = {"full", "row", "col", "scalar", "bcast", "brow", "none"};
  std::ostringstream os;
  os << dtype_name(dtype) << " space=[";
  for (size_t i = 0; i < space.size(); ++i) os << (i ? "," : "") << space[i];
  os << "] ref=" << ref_input;
  if (col_outer) os << " col_outer=" << col_outer;
  if (col_axes > 1) os << " col_axes=" << col_axes;
  os << "\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    os << "n" << i << ":" << cls[static_cast<int>(n.cls)] << " = ";
    if (n.kind == Node::kInput) os << "in" << n.input;
    if (n.kind == Node::kInput && (n.cls == VClass::kBcast || n.cls == VClass::kBrow)) {  // dims: in the cache key
      os << " [";
      for (size_t d = 0; d < bcast[n.input].size(); ++d) os << (d ? "," : "") << bcast[n.input][d];
      os << "]";
    }
    if (n.kind == Node::kConst) os << "const " << std::hexfloat << n.value << std::defaultfloat;
    if (n.kind == Node::kUnary) os << n.op << "(n" << n.a << ")";
    if (n.kind == Node::kBinary) os << n.op << "(n" << n.a << ", n" << n.b << ")";
    if (n.kind == Node::kReduce) os << "reduce_" << n.op << "(n" << n.a << ")";
    if (n.kind == Node::kSelect) os << "select(n" << n.a << ", n" << n.b << ", n" << n.c << ")";
    if (n.kind == Node::kInput && n.input < static_cast<int>(bool_in.size()) && bool_in[n.input]) os << " bool";
    os << "\n";
  }
  os << "out";
  for (size_t i = 0; i < outputs.size(); ++i) {
    os << " n" << outputs[i];
    if (i < chan.size() && !chan[i].keep.empty()) {  // the fold's kept dims and the output's
      os << (chan[i].mean ? "/chan_mean[" : "/chan_sum[");
      for (size_t d = 0; d < chan[i].keep.size(); ++d) os << (d ? "," : "") << chan[i].keep[d];
      os << "->";
      for (size_t d = 0; d < chan[i].shape.size(); ++d) os << (d ? "," : "") << chan[i].shape[d];
      os << "]";
      continue;
    }
    os << (i < bool_out.size() && bool_out[i] ? "/bool" : "");
    os << (out_rank_drop[i] ? "/drop" : "");
    if (out_rank_drop[i] > 1) os << out_rank_drop[i];  // a column sum's dropped leading axes
  }
  return os.str();
}

}  // namespace oar::cinn
