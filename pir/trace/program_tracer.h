// ProgramTracer: the IR's implementation of the core's trace slot (Note [Tracing] in
// docs/notes/jit.md). While active, every op call the eager code makes is appended to
// a program as its pd_op op; tensors map to the values that produced them. Inputs and
// parameters are declared first; any other tensor an op reads becomes a constant.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "paddle_core/dispatch/trace.h"
#include "pir/ir/builder.h"
#include "pir/ir/program.h"

namespace oar::pir {

class ProgramTracer final : public trace::Tracer {
 public:
  explicit ProgramTracer(IrContext* ctx = IrContext::global());
  ~ProgramTracer() override;

  /// Declares `t` as the program input `name` (builtin.input); dims may hold -1 where
  /// the size is dynamic, and must otherwise equal t's.
  void add_input(const Tensor& t, const std::string& name, const std::vector<int64_t>& dims);
  /// Declares `t` as the parameter `name` (builtin.parameter); the program shares t's
  /// memory (no copy), so later updates of t are what a run reads.
  void add_parameter(const Tensor& t, const std::string& name);
  /// Takes back the declaration of parameter `name` if no op has read it yet (a static
  /// program replacing a parameter of another program by name); false when one has.
  bool drop_parameter(const std::string& name);
  /// Appends builtin.output for each tensor (named out0, out1...), verifies and returns
  /// the program; the tracer is spent afterwards.
  std::unique_ptr<Program> finish(const std::vector<Tensor>& outputs);
  /// A verified copy of the program traced so far with builtin.output `names[i]` for
  /// each of `outputs`; tracing goes on (static mode runs a Program while it is still
  /// being built, Note [Static mode] in docs/notes/static.md). With `prune`, the copy
  /// keeps only what the outputs need and writes no parameter (an inference program):
  /// set_parameter ops, unused pure ops, parameters, constants, and inputs not named in
  /// `keep_inputs` are dropped; with `writes_as_outputs` each write becomes the output
  /// "write:<parameter>" (a caller replaying the program applies them).
  std::unique_ptr<Program> snapshot(const std::vector<Tensor>& outputs, const std::vector<std::string>& names,
                                    bool prune = false, const std::vector<std::string>& keep_inputs = {},
                                    bool writes_as_outputs = false);

  void record(const char* op, std::span<const trace::Arg> inputs, std::span<const trace::NamedAttr> attrs,
              std::span<const trace::Arg> outputs) override;
  void record_inplace(const char* op, const Tensor& x, const Tensor& result) override;
  /// A write into a parameter becomes builtin.set_parameter; into a computed tensor, a
  /// new value for it; into an input, a new value written back at the end when
  /// allow_input_writes is on (else an error); into an outside tensor, an error.
  void record_write(const Tensor& dst, const Tensor& src) override;
  void check_write(const Tensor& dst) override;
  /// Note [Input writes] (docs/notes/jit.md): whether writes into inputs become program
  /// outputs "write_input:<name>" that the executor writes back (to_static), or errors.
  void allow_input_writes(bool on) { allow_input_writes_ = on; }
  /// The op that last wrote `t` in place while tracing ("" when none did).
  std::string write_op(const Tensor& t) const;
  void record_alias(const Tensor& alias, const Tensor& of) override;
  /// Appends op `name` of a dialect without shape inference (the dist dialect's
  /// collectives, Note [DistModel]): it reads `inputs`, and `outputs` (the eager results)
  /// give its result types and become its results.
  /// Sets attribute `name` (a string: `text`) on the pd_op op that computed `t` (the dist
  /// layer's layouts of a DistModel step, Note [DistModel]); no-op for other values.
  void annotate(const Tensor& t, const std::string& name, const std::string& text);
  void record_custom(const std::string& name, const std::vector<Tensor>& inputs, std::vector<NamedAttribute> attrs,
                     const std::vector<Tensor>& outputs);

  // ---- control flow (Note [Tracing control flow] in docs/notes/jit.md). A branch or a
  // loop body is traced into a detached region; tensors made inside it are visible
  // only there. The caller runs the real computation eagerly with tracing paused and
  // binds its results to the op's results.

  /// Starts tracing a cf.if branch (then first, else second).
  void begin_branch();
  /// Ends the branch: cf.yield(outs).
  void end_branch(const std::vector<Tensor>& outs);
  /// The tensors from outside the region last ended (end_branch / end_loop) that its
  /// ops read, in first-read order, and whether it recorded a random op. A gradient
  /// through the region flows into exactly these tensors (Python's cond recomputes the
  /// branch in the backward program, Note [Gradients through cf.if]).
  const std::vector<Tensor>& region_captures() const { return last_captures_; }
  /// Drops the region last ended, to trace it again (a loop that needs gradients is
  /// traced anew with its history carried).
  void discard_region();
  bool region_random() const { return last_random_; }
  /// Whether the loop body last ended computes a condition that no iteration changes
  /// (loop_condition_is_fixed, Note [Bounded loops]).
  bool region_condition_fixed() const;
  /// Appends cf.if(pred) with the two traced branches; `results` (the eager values)
  /// become its results.
  void finish_if(const Tensor& pred, const std::vector<Tensor>& results);
  /// Starts tracing a cf.while body: `placeholders` (fresh tensors holding the initial
  /// values) become the body's block arguments, typed like `init`, except where `dims`
  /// gives a (possibly dynamic, -1) shape for a variable whose size changes per iteration.
  void begin_loop(const std::vector<Tensor>& init, const std::vector<Tensor>& placeholders,
                  const std::vector<std::vector<int64_t>>& dims = {});
  /// Ends the body: cf.yield(next_cond, next...).
  void end_loop(const Tensor& next_cond, const std::vector<Tensor>& next);
  /// Appends cf.while(cond, init...) with the traced body; `results` become its results.
  /// A non-empty `name` (the loop's source line, or while_loop's name) is its `name`
  /// attribute, which the executor's errors cite.
  void finish_while(const Tensor& cond, const std::vector<Tensor>& init, const std::vector<Tensor>& results,
                    const std::string& name = "");

  /// Paddle's legacy `While` block (Note [Static While] in docs/notes/static.md): starts
  /// a cf.while body whose loop variables are not known yet. A write inside it (an
  /// in-place op, copy_/assign(output=)) into a tensor of the enclosing block makes that
  /// tensor a loop variable: a block argument, with the body's earlier reads of it
  /// rewired to the argument.
  void begin_open_loop();
  /// Ends the open body and appends its cf.while: `cond` must be one of its loop
  /// variables (the block writes the next condition into it); after the loop each loop
  /// variable holds the while's result.
  void end_open_loop(const Tensor& cond, const std::string& name);
  /// Drops an open body that raised while being traced.
  void abandon_open_loop();

  // ---- backward programs (Note [Backward program] in docs/notes/jit.md)
  /// Traces against a finished-or-not forward tracer: a tensor this tracer has not seen
  /// but `forward` computed becomes an input `saved<k>` here (parameters of `forward`
  /// stay parameters), so a backward traced after the forward reads the forward's values.
  void set_source(const ProgramTracer* forward) { source_ = forward; }
  /// The forward tensors that became `saved<k>` inputs, in order.
  const std::vector<Tensor>& saved() const { return saved_; }
  /// The dims of the value `t` maps to (-1 where dynamic); throws when `t` is unmapped.
  std::vector<int64_t> dims_of(const Tensor& t) const;

  size_t num_constants() const { return num_constants_; }
  /// Ops recorded so far (0 once finished): a static Program's change counter.
  size_t num_ops() const { return program_ ? program_->num_ops() : 0; }
  /// True when `t` was computed from the inputs or parameters (its value differs from
  /// run to run, so Python must not read it while tracing).
  bool is_traced(const Tensor& t) const;

 private:
  struct Mapped {
    Value value;
    uint32_t version;
    size_t depth;  // how many regions deep the value is defined
  };
  /// dst's mapping, or the error a raw write into it gets (check_write, record_write).
  const Mapped& refuse_write(const Tensor& dst);
  struct Scope {
    std::unique_ptr<Region> region;  // detached until the cf op takes it
    std::vector<const TensorImpl*> bound;  // mappings made inside (dropped at the end)
    std::vector<Tensor> captures;          // outside tensors read inside (region_captures)
    std::unordered_set<const TensorImpl*> captured;
    bool random = false;
    bool yielded = false;
    bool open = false;                              // an open loop body (begin_open_loop)
    std::vector<std::pair<Tensor, Value>> carried;  // its loop variables and their values outside
  };
  /// In an open loop body, makes `t` (a tensor of the enclosing block about to be
  /// written) a loop variable; a no-op elsewhere.
  void carry(const Tensor& t, const char* op);
  void push_scope();
  void pop_scope();
  Value cond_value(const Tensor& pred, const char* what);
  Value value_of(const Tensor& t, const char* op);
  /// The value of `t` (own map, then the source tracer's values); null when unknown.
  Value lookup(const Tensor& t, const char* op);
  void bind(const Tensor& t, Value v);
  /// Notes that the open regions deeper than `depth` read `t` from outside.
  void note_capture(const Tensor& t, size_t depth);
  Attribute to_attr(const trace::AttrValue& v);

  IrContext* ctx_;
  std::unique_ptr<Program> program_;
  Builder builder_;
  std::unordered_map<const TensorImpl*, Mapped> map_;
  // Every mapped tensor stays alive while tracing, so a freed tensor's address is never
  // taken for a new one.
  std::vector<std::shared_ptr<TensorImpl>> keep_;
  size_t num_constants_ = 0;
  std::vector<Scope> scopes_;          // open regions, innermost last
  const ProgramTracer* source_ = nullptr;
  std::vector<Tensor> saved_;
  std::vector<std::unique_ptr<Region>> done_;  // finished branch/body regions awaiting their op
  std::vector<Tensor> last_captures_;
  bool last_random_ = false;
  bool allow_input_writes_ = false;
  // Inputs and parameters as declared (Note [Input writes]): the tensor, its value and name.
  struct Declared {
    Tensor tensor;
    Value value;
    std::string name;
    bool parameter;
  };
  std::vector<Declared> declared_;
  std::unordered_map<const TensorImpl*, std::string> write_ops_;  // the last in-place op per tensor
  std::unordered_map<std::string, Value> param_written_;          // the value set_parameter last wrote
  /// Appends the write-backs of the inputs and parameters the code wrote in place.
  void finish_writes();
};

}  // namespace oar::pir
