// Passes and the PassManager. A pass runs on an anchor op (the module, or, in a
// nested pipeline, every op of a given name inside it). The manager verifies after
// each pass (optional), runs instrumentations (IR printing, per-pass timing), and
// can be built from a textual pipeline: "canonicalize,cse,cf.while(dce),dce".
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/place.h"

namespace oar::pir {

class Operation;
class Program;
class IrContext;

class Pass {
 public:
  explicit Pass(std::string name) : name_(std::move(name)) {}
  virtual ~Pass() = default;
  const std::string& name() const { return name_; }
  /// Transforms the regions of `anchor`. Returns true when the IR changed.
  virtual bool run(Operation* anchor) = 0;
  /// An option from a textual pipeline (`dist-partition{rank=1}`); the default throws
  /// InvalidArgument naming the pass and the option.
  virtual void set_option(const std::string& key, const std::string& value);

 private:
  std::string name_;
};

/// Hooks around each pass (MLIR's PassInstrumentation).
class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  virtual void before_pass(const Pass& pass, Operation* anchor) {}
  virtual void after_pass(const Pass& pass, Operation* anchor, bool changed) {}
};

/// Prints the IR (of the anchor) before and/or after each pass whose name matches.
std::unique_ptr<PassInstrumentation> make_ir_printer(std::ostream& os, bool before, bool after,
                                                     std::string only_pass = "");

/// Collects wall time per pass; report() lists them.
class PassTiming : public PassInstrumentation {
 public:
  void before_pass(const Pass& pass, Operation* anchor) override;
  void after_pass(const Pass& pass, Operation* anchor, bool changed) override;
  /// "pass  seconds  runs" lines, in first-run order, then the total.
  std::string report() const;
  struct Entry {
    std::string name;
    double seconds = 0;
    int runs = 0;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
  std::vector<double> starts_;
};

class PassManager {
 public:
  /// `anchor`: the op name this pipeline runs on ("builtin.module" at the top).
  explicit PassManager(std::string anchor = "builtin.module");
  ~PassManager();

  void add_pass(std::unique_ptr<Pass> pass);
  /// Adds a registered pass by name (throws NotFound listing the known passes).
  void add_pass(std::string_view name);
  /// A nested pipeline run on every op named `op_name` in this pipeline's anchor.
  PassManager& nest(const std::string& op_name);
  /// Appends passes from a textual pipeline ("a,b{key=value,k2=v2},cf.while(c,d)") or the passes of a
  /// registered pipeline named `spec` ("jit-train", pir/pass/pipelines.h).
  void add_pipeline(std::string_view spec);
  void add_instrumentation(std::shared_ptr<PassInstrumentation> inst);
  /// Verify the program after every pass (default on).
  void set_verify_each(bool v) { verify_each_ = v; }
  /// The place the program will run on: lower_to_kernel picks its kernels, and DRR
  /// rules check theirs, for this place's device type. Unset, a pipeline compiles for
  /// the enclosing pipeline's place (a pipeline run inside a pass), else the CPU.
  void set_place(const Place& place) {
    place_ = place;
    has_place_ = true;
  }
  Place place() const;

  /// Runs the pipeline; returns true when any pass changed the IR. Set OAR_PIR_PRINT_IR=1
  /// to print the IR after every pass to stderr.
  bool run(Program& program);
  /// Runs the pipeline on one anchor op.
  bool run_on(Operation* anchor);
  /// The pipeline as text (what add_pipeline accepts).
  std::string str() const;
  const std::string& anchor() const { return anchor_; }

 private:
  struct Item;
  std::string anchor_;
  std::vector<std::unique_ptr<Item>> items_;
  std::vector<std::shared_ptr<PassInstrumentation>> inst_;
  bool verify_each_ = true;
  Place place_ = CPUPlace();
  bool has_place_ = false;
  PassManager* parent_ = nullptr;
  const std::vector<std::shared_ptr<PassInstrumentation>>& instrumentations() const;
  bool verify_each() const;
};

// ---- pass registry
using PassFactory = std::function<std::unique_ptr<Pass>()>;
void register_pass(const std::string& name, PassFactory factory);
std::unique_ptr<Pass> create_pass(std::string_view name);
std::vector<std::string> registered_passes();
/// The program PassManager::run(Program&) is running on, on this thread (null when a
/// pipeline runs on a bare op): passes that read or add parameter data use it
/// (fold_parameters).
Program* current_program();
/// The place the running pipeline compiles for (PassManager::set_place), on this
/// thread; the CPU outside a pipeline.
Place current_place();

/// The "standard" registered pipeline as text (pir/pass/pipelines.h).
std::string standard_pipeline();

}  // namespace oar::pir
