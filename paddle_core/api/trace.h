// The trace slot (Note [Tracing] in docs/notes/jit.md): while a Tracer is active on
// this thread, every generated op function reports its call (inputs after promotion,
// attributes, outputs) after running it eagerly. The core only owns the slot; the IR
// side (pir/trace/) implements the Tracer and builds a program from the calls, so the
// core never includes pir/.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "paddle_core/api/tensor.h"
#include "paddle_core/tensor/scalar.h"

namespace oar::trace {

/// An attribute of a traced call, in the op definition's types.
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, DataType, Place, Scalar>;
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
  virtual void record(const char* op, std::initializer_list<Arg> inputs,
                      std::initializer_list<NamedAttr> attrs, std::initializer_list<Arg> outputs) = 0;
  /// The in-place op `op` wrote `result` (recorded just before) into `x`'s memory.
  virtual void record_inplace(const char* op, const Tensor& x, const Tensor& result) = 0;
  /// `dst`'s memory was overwritten with `src`'s values outside any op (a raw copy:
  /// running statistics, set_value).
  virtual void record_write(const Tensor& dst, const Tensor& src) = 0;
  /// `alias` is a new handle on `of`'s data made outside any op (detach).
  virtual void record_alias(const Tensor& alias, const Tensor& of) = 0;
};

/// The tracer active on this thread (nullptr: ops run eagerly only).
Tracer* active();

/// Makes `t` the active tracer for its lifetime (nullptr pauses tracing), then
/// restores the previous one.
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
