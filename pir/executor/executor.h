// Executor: runs a program lowered to kernels (kernel.phi_kernel, kernel.compiled_kernel),
// with cf.if / cf.while, on the same kernels as eager mode (Note [Executor] in
// docs/notes/jit.md, Note [Kernel-level programs] in docs/notes/dispatch.md). A program
// that still holds op-dialect ops is lowered for the executor's place first (on a copy;
// the caller's program is not changed). Construction plans the run once: every value
// gets a slot, every op a step with its operand and result slots, its resolved kernel
// and its decoded attributes, and every slot the step after which nothing reads it; a
// run drops each buffer right after its last use, so the caching allocator hands it to
// the next op (static memory reuse). Steps call the kernel and its shape function
// directly: no amp, promotion, autograd or tracing runs inside a program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "paddle_core/dispatch/kernel_registry.h"
#include "paddle_core/tensor/tensor.h"
#include "pir/ir/program.h"

namespace oar::pir {

/// Note [Input writes] (docs/notes/jit.md): while a kernel step runs, per output (or
/// null) the input or parameter memory the program writes that output back into. A step
/// that may write there (a compiled elementwise group, cinn/runtime) leaves the output
/// sharing that memory; others ignore it and the executor copies. Null outside such steps.
const std::vector<const DenseTensor*>*& write_into_targets();

struct OpProfile {
  std::string name;   // the op ("pd_op.matmul")
  int64_t calls = 0;
  double seconds = 0.0;
};

class Executor {
 public:
  /// Plans `program`'s run on `place`; the program must outlive the executor.
  explicit Executor(const Program& program, const Place& place = CPUPlace());
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Input names in builtin.input order, with their declared types.
  const std::vector<std::string>& input_names() const { return input_names_; }
  std::vector<Type> input_types() const;
  /// Output names in builtin.output order.
  const std::vector<std::string>& output_names() const { return output_names_; }

  /// Runs the program: `inputs` in input order (dtype and static dims are checked);
  /// `params` overrides the program's parameter data by name (to_static passes the
  /// layer's own tensors so gradients reach them). Returns the outputs in order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::unordered_map<std::string, Tensor>* params = nullptr);

  /// Runs steps through the ops' eager API instead of their kernels, so autograd records
  /// them when inputs or parameters require grad (fine-tuning a loaded program). Slower;
  /// off by default.
  void set_differentiable(bool on) { differentiable_ = on; }
  /// Per-op timing of later runs (off by default).
  void set_profiling(bool on) { profiling_ = on; }
  /// Accumulated per-op profile, slowest first.
  std::vector<OpProfile> profile() const;
  void reset_profile();
  /// The largest number of live intermediate tensors during a run (memory planning check).
  size_t peak_live_slots() const { return peak_live_; }
  size_t num_steps() const;
  /// The place the program runs on.
  const Place& place() const { return place_; }
  /// The program the steps run: `program` itself, or its lowered copy.
  const Program& lowered_program() const { return lowered_ ? *lowered_ : program_; }

 private:
  struct Step;
  using Steps = std::vector<Step>;
  Steps plan_block(const Block* block);
  void plan_kernel(Step& st, const Operation* op);
  void run_differentiable(const Step& st);
  void plan_liveness(Steps& steps, const std::vector<int>& block_args = {});
  /// Note [Input writes]: gives the last writer of each value written back into an input
  /// or parameter that memory, when nothing reads the old value after it.
  void plan_writes();
  /// The tensor a write step (builtin.set_parameter, output write_input:<name>) writes into.
  Tensor write_target(const Step& st, const std::vector<Tensor>& inputs,
                      const std::unordered_map<std::string, Tensor>* params) const;
  /// Whether `t` may take a program value in place: its memory is its own (no view, no
  /// other argument of this run shares it).
  bool writable_target(const Tensor& t, const std::vector<Tensor>& inputs,
                       const std::unordered_map<std::string, Tensor>* params) const;
  /// Runs one block's steps; returns what its cf.yield yields (nothing for the module).
  std::vector<Tensor> run_steps(const Steps& steps, const std::vector<Tensor>& inputs,
                                const std::unordered_map<std::string, Tensor>* params, std::vector<Tensor>& results);
  int slot_of(Value v);
  /// A parameter's tensor: the caller's by name, else the program's data.
  Tensor parameter(const Step& st, const std::unordered_map<std::string, Tensor>* params) const;

  const Program& program_;
  std::unique_ptr<Program> lowered_;  // set when `program_` held op-dialect ops
  Place place_;
  std::vector<Step> steps_;
  std::unordered_map<const void*, int> slot_index_;
  int num_slots_ = 0;
  int num_loops_ = 0;  // cf.while ops planned so far (their default names)
  std::vector<std::string> input_names_, output_names_;
  std::vector<int> written_inputs_;  // inputs the program writes in place (Note [Input writes])
  std::vector<Value> input_values_;
  std::vector<std::vector<Tensor>> slots_;
  bool profiling_ = false;
  bool differentiable_ = false;
  std::vector<OpProfile> profile_;  // indexed like the distinct op names of steps
  size_t peak_live_ = 0;
  size_t live_ = 0;
};

}  // namespace oar::pir
