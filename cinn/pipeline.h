// The fusion compiler's entry points (docs/notes/cinn.md). cinn/pipeline.cc lists every
// stage by name; the stages are passes registered into pir's pass registry, and the
// registered pipeline `cinn` (pir/pass/pipelines.cc) runs them through the `cinn_stages`
// pass, so `pir_opt --pipeline=cinn` and to_static(backend='CINN') run the same list.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gflags/gflags.h>

DECLARE_bool(use_cinn);
DECLARE_bool(prim_all);
DECLARE_string(allow_cinn_ops);
DECLARE_string(deny_cinn_ops);
DECLARE_string(cinn_cache_dir);
DECLARE_bool(enable_cinn_compile_cache);
DECLARE_bool(cinn_test_fail_compile);
DECLARE_bool(cinn_decompose_short_rows);
DECLARE_bool(enable_cinn_accuracy_check);
DECLARE_int32(cinn_compile_thread_num);
DECLARE_int32(cinn_nontemporal_store_mb);

namespace oar::pir {
class Pass;
}

namespace oar::cinn {

/// The stages of the `cinn` pipeline, in order (pass names).
const std::vector<std::string>& cinn_stages();
/// Registers the dialect and the passes (idempotent; also done when the library loads).
void register_cinn();
/// True when decompositions run: FLAGS_prim_all, or inside the cinn pipeline.
bool prim_enabled();
/// True when `op` ("pd_op.exp" or "exp") may join a group under the allow/deny flags.
bool op_allowed(std::string_view op);
/// True when the LLVM code generator was built (OAR_WITH_CINN).
bool compiled_with_cinn();

std::unique_ptr<pir::Pass> create_decompose_pass();
std::unique_ptr<pir::Pass> create_fuse_pass();
std::unique_ptr<pir::Pass> create_lower_fusion_pass();
std::unique_ptr<pir::Pass> create_shape_pass();         // cinn/shape/shape_pass.cc
std::unique_ptr<pir::Pass> create_print_shapes_pass();  // pir_opt --pipeline=print_shapes
std::unique_ptr<pir::Pass> create_matmul_layout_pass();  // cinn/runtime/matmul_layout.cc

}  // namespace oar::cinn
