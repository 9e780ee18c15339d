#include "paddle_core/api/op_utils.h"

#include <cstring>

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/grad_mode.h"
#include "paddle_core/autograd/node.h"
#include "paddle_core/autograd/view.h"
#include "paddle_core/dispatch/dispatch.h"

namespace oar::dispatch {
Tensor cast(const Tensor& t, DataType to) { return ops::cast(t, to); }
}  // namespace oar::dispatch

namespace oar::ops::detail {

void check_defined(const Tensor& t, const char* op, const char* arg) {
  OAR_ENFORCE(t.defined(), InvalidArgument, op, ": argument '", arg, "' is None/undefined");
}

void check_nonempty(const std::vector<Tensor>& ts, const char* op, const char* arg) {
  OAR_ENFORCE(!ts.empty(), InvalidArgument, op, ": argument '", arg,
              "' must be a non-empty list of tensors");
  for (size_t i = 0; i < ts.size(); ++i) {
    OAR_ENFORCE(ts[i].defined(), InvalidArgument, op, ": ", arg, "[", i, "] is None");
  }
}

Tensor cast_if_needed(const Tensor& t, DataType dtype) {
  return t.dtype() == dtype ? t : ops::cast(t, dtype);
}

void check_inplace_allowed(const Tensor& x, const char* op) {
  OAR_ENFORCE(!(autograd::grad_enabled() && x.requires_grad() && x.is_leaf()),
              PreconditionNotMet, op,
              ": a leaf tensor that requires grad (stop_gradient=False) cannot be modified in "
              "place; use the out-of-place op, or wrap the update in oar.no_grad()");
  const DenseTensor& d = x.dense();
  for (int i = 0; i < d.rank(); ++i) {
    OAR_ENFORCE(d.strides()[i] != 0 || d.dims()[i] <= 1, InvalidArgument, op,
                ": the tensor written in place has elements that share memory (stride 0 at "
                "axis ", i, ", as in an expand view of shape ", d.dims(), "); write into a "
                "contiguous() copy instead");
  }
  if (x.is_view()) autograd::check_view_inplace(x, nullptr, op);
}

Tensor inplace_source(const Tensor& x, bool records) {
  return autograd::grad_enabled() && records ? ops::assign(x) : x;
}

Tensor inplace_operand(const Tensor& y, const Tensor& x, bool records) {
  const bool aliases = y.defined() && y.dense().storage() != nullptr &&
                       y.dense().storage() == x.dense().storage();
  return aliases && records && autograd::grad_enabled() ? ops::assign(y) : y;
}

// Note [Views and in-place ops] in docs/notes/autograd.md: the result is computed out of
// place, then written into x's memory. A plain tensor takes the result's history; a view
// gives its base a CopySlices history and remakes its own from the base on next use.
void commit_inplace(const Tensor& x, const Tensor& result, const char* op) {
  OAR_ENFORCE(result.dims() == x.dims(), InvalidArgument, op, ": the result has shape ",
              result.dims(), " but the tensor written in place has shape ", x.dims(),
              " (in-place ops cannot broadcast the destination)");
  if (x.is_view()) autograd::check_view_inplace(x, &result, op);  // before writing anything
  copy_into(result.dense(), x.mutable_dense());
  x.bump_version();
  if (x.is_view()) {
    autograd::rebase_view_history(x, result, op);
    return;
  }
  if (result.requires_grad() && result.grad_fn()) {
    AutogradMeta& meta = x.ensure_autograd_meta();
    meta.stop_gradient = false;
    meta.grad_fn = result.grad_fn();
    meta.output_nr = result.autograd_meta()->output_nr;
  }
}

void adopt_donor(const DenseTensor& donor, DenseTensor* out, bool grows) {
  if (donor.dtype() != out->dtype() || !(donor.place() == out->place())) return;
  if (grows) {
    if (donor.is_contiguous()) out->set_storage(donor.storage(), donor.offset());  // alloc() reuses it if big enough
    return;
  }
  if (donor.dims() != out->dims()) return;
  *out = donor;  // shares the donor's storage: the kernel's alloc() writes into it
}

void write_back(const Tensor& x, const Tensor& result) {
  const DenseTensor& r = result.dense();
  const DenseTensor& d = x.dense();
  if (r.storage() == d.storage() && r.offset() == d.offset() && r.strides() == d.strides()) return;
  copy_into(r, x.mutable_dense());  // the kernel did not take x's memory (a promotion changed the dtype, say)
}

bool writable_in_place(const Tensor& x, std::initializer_list<const Tensor*> others) {
  if (!x.defined() || x.is_view()) return false;
  const DenseTensor& d = x.dense();
  if (d.storage() == nullptr || !d.is_contiguous()) return false;
  for (const Tensor* t : others)
    if (t != nullptr && t->defined() && t->dense().storage() == d.storage()) return false;
  return true;
}

}  // namespace oar::ops::detail
