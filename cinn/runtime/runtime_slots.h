// The compiled kernels' slots, shared inside cinn/runtime by the compile side (runtime.cc:
// the compile cache, which fills a slot when it installs a kernel) and the kernel step
// (kernel_step.cc: what the executor runs, which reads its slot). Not a public header.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cinn/codegen/codegen.h"
#include "cinn/runtime/runtime.h"
#include "cinn/schedule/loop_ir.h"
#include "paddle_core/dispatch/dispatch.h"
#include "pir/executor/executor.h"
#include "pir/ir/program.h"

namespace oar::cinn {

struct Compiled {
  LoopKernel kernel;
  KernelFn fn = nullptr;
  std::string name;
  // FLAGS_enable_cinn_accuracy_check: the group's ops as a program of their own, and
  // its executor (made on the first check).
  std::shared_ptr<pir::Program> unfused;
  std::shared_ptr<pir::Executor> check;
  std::shared_ptr<pir::Executor> fallback;  // inputs that break an assumption (made once)
  bool warned_shapes = false;
  std::string ops;  // "exp, subtract, ..." for the warning
  bool reported = false;
  // Note [Symbolic shapes]: per input, its dims as the group's signature names them
  // ("S0", "64", or an expression: not checked), and the equalities the program assumed.
  std::vector<std::vector<std::string>> sym_inputs;
  std::string sym_assumed;
  // Note [Recompilation]: the compile-cache key and the fusion's operand types, from
  // which a new shape class's program is typed.
  std::string key;
  std::vector<pir::Type> in_types;
  pir::IrContext* ctx = nullptr;
  // Note [Input writes]: overwrite[o][i] when output o may be written into input i's
  // memory (overwrite_table).
  std::vector<std::vector<char>> overwrite;
};

// Kernel steps are plain function pointers (dispatch::KernelStep): kernel_step(I) runs slot I.
// Slots are never reused (a program may still hold a step), so a long process (the CINN
// test suite: ~1,100 distinct kernels since cinn37's tests) needs many.
constexpr size_t kSlots = 4096;
extern std::array<Compiled, kSlots> g_slots;  // filled up to state().used (kernel_step.cc)

struct State {
  std::mutex mu;
  std::unordered_map<std::string, size_t> by_key;  // key -> slot
  size_t used = 0;
  CacheStats stats;
  bool warned_dir = false;
};
State& state();  // runtime.cc

// Note [Input writes] (docs/notes/jit.md): output o of a group may take the memory of
// its input i when the kernel reads element e of i only to compute element e of its
// outputs, before storing it: no node is a reduction or a per-row or per-column value
// (those read other elements of a row or column; broadcast inputs and scalars are
// other tensors and may stay), i is a full input, o
// a full output, and every output stored after o that reads i reads it through a load
// that the outputs stored up to o already made (the codegen evaluates a chunk's outputs
// in order with one memo, so such a load is not repeated after o's store).
std::vector<std::vector<char>> overwrite_table(const LoopKernel& k);

/// The kernel step that runs slot `slot` (registered by install_group).
dispatch::KernelStep kernel_step(size_t slot);
/// Compares a kernel run with its group's unfused ops (FLAGS_enable_cinn_accuracy_check).
void check_accuracy(size_t slot, const std::vector<DenseTensor>& ins, const std::vector<DenseTensor>& outs);
/// Forgets the recompiled shape classes (Note [Recompilation]; forget_memory_cache).
void forget_classes();

}  // namespace oar::cinn
