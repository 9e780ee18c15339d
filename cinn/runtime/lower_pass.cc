// The `cinn_lower` pass: each cinn.fusion becomes a kernel.compiled_kernel naming the
// kernel step compile_group registered (the executor runs it like any kernel step). A
// group that fails to compile is inlined back (its unfused ops run) and the reason is
// logged once per distinct reason.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_set>

#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime.h"
#include "pir/ir/builder.h"
#include "pir/pass/pass.h"

namespace oar::cinn {
using namespace pir;  // NOLINT

void note_fallback(const std::string& why);  // counts it and logs a new reason once (runtime.cc)

namespace {

class LowerFusionPass : public Pass {
 public:
  LowerFusionPass() : Pass("cinn_lower") {}
  bool run(Operation* anchor) override {
    register_cinn_dialect(anchor->info()->ctx);
    std::vector<Operation*> fusions;
    anchor->walk([&](Operation* op) {
      if (op->name() == kFusionOp) fusions.push_back(op);
    });
    // Prepare every group (lower, key) on this thread, build the objects (disk cache or
    // LLVM) on FLAGS_cinn_compile_thread_num threads, then load and register in program
    // order. A group whose key an earlier one has is built once.
    const size_t n = fusions.size();
    std::vector<std::optional<PreparedGroup>> prep(n);
    std::vector<std::string> error(n);
    std::vector<size_t> todo;
    std::unordered_set<std::string> keys;
    for (size_t i = 0; i < n; ++i) {
      try {
        prep[i] = prepare_group(fusions[i]);
        if (!prep[i]->in_memory && keys.insert(prep[i]->key).second) todo.push_back(i);
      } catch (const std::exception& e) {
        error[i] = e.what();
      }
    }
    const int flag = FLAGS_cinn_compile_thread_num;
    const size_t hw = std::max(1u, std::thread::hardware_concurrency());
    const size_t threads = std::min(todo.size(), flag > 0 ? static_cast<size_t>(flag) : hw);
    auto build = [&](size_t t) {
      const size_t i = todo[t];
      try {
        build_object(*prep[i]);
      } catch (const std::exception& e) {
        error[i] = e.what();
      }
    };
    if (threads > 1) {
      std::atomic<size_t> next{0};
      std::vector<std::thread> pool;
      for (size_t t = 0; t < threads; ++t)
        pool.emplace_back([&] {
          for (size_t j; (j = next.fetch_add(1)) < todo.size();) build(j);
        });
      for (std::thread& th : pool) th.join();
      note_parallel_compile(static_cast<int>(threads));
    } else {
      for (size_t t = 0; t < todo.size(); ++t) build(t);
    }
    for (size_t i = 0; i < n; ++i) {
      Operation* f = fusions[i];
      std::string kernel;
      try {
        if (!error[i].empty()) throw std::runtime_error(error[i]);
        kernel = install_group(f, *prep[i]);
      } catch (const std::exception& e) {
        note_fallback(e.what());
        inline_fusion(f);
        continue;
      }
      Builder b(f->info()->ctx);
      b.set_insertion_point(f);
      std::vector<Type> types;
      for (Value r : f->results()) types.push_back(r.type());
      Operation* k =
          b.build("kernel.compiled_kernel", f->operands(), {{"kernel_name", f->info()->ctx->str_attr(kernel)}}, types);
      f->replace_all_uses_with(k->results());
      f->erase();
    }
    return !fusions.empty();
  }
};

}  // namespace

std::unique_ptr<Pass> create_lower_fusion_pass() { return std::make_unique<LowerFusionPass>(); }

}  // namespace oar::cinn
