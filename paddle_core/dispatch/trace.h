// The trace layer (Note [Tracing] in docs/notes/jit.md, Note [Dispatch layers]): while a
// Tracer is active on this thread, every op call that reaches the trace layer is
// reported to it after the layers below ran it: inputs after promotion, attributes,
// outputs. The core owns the slot; the IR side (pir/trace/) implements the Tracer and
// builds a program from the calls, so the core never includes pir/.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "paddle_core/dispatch/dispatch.h"

namespace oar::trace {

using AttrValue = dispatch::AttrValue;
using NamedAttr = std::pair<const char*, AttrValue>;

/// A tensor argument or result: one tensor, a list (Tensor[]), or neither (an absent
/// optional input).
struct Arg {
  const Tensor* tensor = nullptr;
  const std::vector<Tensor>* list = nullptr;
  Arg(const Tensor& t) : tensor(t.defined() ? &t : nullptr) {}  // NOLINT: implicit by design
  Arg(const std::vector<Tensor>& l) : list(&l) {}                // NOLINT
};

class Tracer {
 public:
  virtual ~Tracer() = default;
  /// An op function `op` ran with these inputs and attributes and produced `outputs`.
  virtual void record(const char* op, std::span<const Arg> inputs, std::span<const NamedAttr> attrs,
                      std::span<const Arg> outputs) = 0;
  /// The in-place op `op` wrote `result` (recorded just before) into `x`'s memory.
  virtual void record_inplace(const char* op, const Tensor& x, const Tensor& result) = 0;
  /// `dst`'s memory was overwritten with `src`'s values outside any op (a raw copy:
  /// running statistics, set_value).
  virtual void record_write(const Tensor& dst, const Tensor& src) = 0;
  /// Refuses, before anything is written, a raw write into `dst` that record_write would
  /// refuse or that the program cannot convert (a trainable tensor written while autograd
  /// records): a refused write must leave `dst` as it was.
  virtual void check_write(const Tensor& dst) { (void)dst; }
  /// `alias` is a new handle on `of`'s data made outside any op (detach).
  virtual void record_alias(const Tensor& alias, const Tensor& of) = 0;
};

/// The tracer active on this thread (nullptr: ops run eagerly only).
Tracer* active();

/// Makes `t` the active tracer for its lifetime (nullptr pauses tracing), then
/// restores the previous one. It switches the trace layer on for the thread.
class TracerGuard {
 public:
  explicit TracerGuard(Tracer* t);
  ~TracerGuard();
  TracerGuard(const TracerGuard&) = delete;
  TracerGuard& operator=(const TracerGuard&) = delete;

 private:
  Tracer* prev_;
};

}  // namespace oar::trace
