// The fusion compiler's pipeline: every stage by name, in order (the tinygrad habit: the
// compiler is one list). `cinn_stages` runs them; pir's registered pipeline `cinn` is
// {cinn_stages, lower_to_kernel}.
#include "cinn/pipeline.h"

#include <cstdio>
#include <mutex>
#include <sstream>

#include "cinn/dialect.h"
#include "paddle_core/tensor/place.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/operation.h"
#include "pir/pass/pass.h"

DEFINE_bool(use_cinn, false, "Run to_static programs through the fusion compiler (the CINN pipeline)");
DEFINE_bool(prim_all, false, "Decompose ops that have a decomp: rule into primitive ops (the decompose pass)");
DEFINE_string(allow_cinn_ops, "", "';'-separated ops that may join fused groups (empty: every supported op)");
DEFINE_string(deny_cinn_ops, "", "';'-separated ops that never join fused groups");
DEFINE_string(cinn_cache_dir, "", "The fusion compiler's disk cache (empty: ~/.cache/oar/cinn)");
DEFINE_bool(enable_cinn_compile_cache, true, "Keep compiled groups on disk (FLAGS_cinn_cache_dir)");
DEFINE_bool(cinn_decompose_short_rows, false,
            "Decompose cross_entropy over fewer than 32 classes too (Note [Short rows keep their kernel]; tests)");
DEFINE_bool(cinn_test_fail_compile, false, "Test hook: every group fails to compile (the unfused fallback runs)");
DEFINE_bool(enable_cinn_accuracy_check, false,
            "Run each compiled group's unfused ops too and warn (once per group) where the outputs differ");

DEFINE_int32(cinn_nontemporal_store_mb, 16,
             "A kernel call whose full-size outputs exceed this many MiB writes them with non-temporal "
             "stores (Note [Streaming stores]); 0: never, -1: always (tests)");
DEFINE_int32(cinn_compile_thread_num, -1,
             "Threads that compile a program's fused groups in parallel (-1: one per CPU core, at most one "
             "per group; 1: one after another)");

namespace oar::cinn {
namespace {

thread_local int prim_scope = 0;

// The stages. Decomposition first (primitives are what fusion understands), cleanup,
// grouping, then each group compiled into a kernel step (or inlined back unfused).
const std::vector<std::string> kStages = {
    "canonicalize",  // fold what the tracer left (the op dialect's rewrites)
    "decompose",     // ops with a `decomp:` rule -> primitive ops (Note [Decompositions])
    "canonicalize",  // and what decompositions leave (a reshape of a weight to its own shape)
    "cse",           // decompositions repeat subexpressions (softmax's max, layer_norm's mean)
    "dce",
    "cinn_fuse",           // reduce-centred groups -> cinn.fusion (Note [Fusion legality])
    "cinn_shape",          // symbolic dims: each group's signature and assumptions (Note [Symbolic shapes])
    "cinn_lower",          // cinn.fusion -> loop IR -> LLVM -> kernel.compiled_kernel (Note [Compile cache])
    "cinn_matmul_layout",  // transpose(matmul) -> one product written transposed (Note [Matmul output layout])
};

// Note [Places the compiler serves]: the kernels are host code, which reads and writes its
// buffers through host pointers. A program lowered for another place (a plugin device, whose
// memory the host may not even map) keeps its ops unfused, each lowered to the device's
// kernel as without the compiler; one warning per device type says so. Generated device
// code needs the device ABI to load and launch it (the CUDA C generator's kernels wait for
// the CUDA backend, docs/notes/cinn.md).
bool compiles_for(const Place& place) {
  if (place.is_cpu()) return true;
  static std::mutex mu;
  static bool warned[kMaxDeviceTypes] = {};
  std::lock_guard<std::mutex> lock(mu);
  if (!warned[place.type_id()]) {
    warned[place.type_id()] = true;
    std::fprintf(stderr,
                 "oar: warning: cinn: the fusion compiler generates host code only; the program for %s runs "
                 "unfused\n",
                 place.str().c_str());
  }
  return false;
}

class StagesPass : public pir::Pass {
 public:
  StagesPass() : Pass("cinn_stages") {}
  bool run(pir::Operation* anchor) override {
    if (!compiles_for(pir::current_place())) return false;
    pir::PassManager pm;
    for (const auto& s : kStages) pm.add_pass(s);
    ++prim_scope;  // the CINN pipeline decomposes (Paddle turns FLAGS_prim_all on with CINN)
    struct Exit {
      ~Exit() { --prim_scope; }
    } exit;
    return pm.run_on(anchor);
  }
};

std::vector<std::string> split_ops(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ';')) {
    while (!item.empty() && item.back() == ' ') item.pop_back();
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    if (!item.empty()) out.push_back(item.rfind("pd_op.", 0) == 0 ? item.substr(6) : item);
  }
  return out;
}

bool listed(const std::string& flag, std::string_view op) {
  for (const std::string& o : split_ops(flag))
    if (o == op) return true;
  return false;
}

const bool registered = (register_cinn(), true);

}  // namespace

const std::vector<std::string>& cinn_stages() { return kStages; }

void register_cinn() {
  static std::once_flag once;
  std::call_once(once, [] {
    pir::register_pass("decompose", create_decompose_pass);
    pir::register_pass("cinn_fuse", create_fuse_pass);
    pir::register_pass("cinn_lower", create_lower_fusion_pass);
    pir::register_pass("cinn_shape", create_shape_pass);
    pir::register_pass("cinn_matmul_layout", create_matmul_layout_pass);
    pir::register_pass("print_shapes", create_print_shapes_pass);
    pir::register_pass("cinn_stages", [] { return std::make_unique<StagesPass>(); });
  });
  (void)registered;
}

bool prim_enabled() { return FLAGS_prim_all || prim_scope > 0; }

bool op_allowed(std::string_view op) {
  if (op.rfind("pd_op.", 0) == 0) op.remove_prefix(6);
  if (listed(FLAGS_deny_cinn_ops, op)) return false;
  return FLAGS_allow_cinn_ops.empty() || listed(FLAGS_allow_cinn_ops, op);
}

}  // namespace oar::cinn
