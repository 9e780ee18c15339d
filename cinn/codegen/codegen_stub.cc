// Built instead of llvm_codegen.cc when LLVM 19 is missing (OAR_WITH_CINN=OFF): every
// group fails to compile and runs unfused (the switches warn once).
#include "cinn/codegen/codegen.h"
#include "cinn/pipeline.h"
#include "paddle_core/base/errors.h"

namespace oar::cinn {

bool compiled_with_cinn() { return false; }
std::string codegen_target() { return ""; }
std::string compile_object(const LoopKernel&, const std::string&) {
  OAR_THROW(Unimplemented, "cinn: Oar was built without LLVM 19 (OAR_WITH_CINN=OFF)");
}
KernelFn load_object(const std::string&, const std::string&) {
  OAR_THROW(Unimplemented, "cinn: Oar was built without LLVM 19 (OAR_WITH_CINN=OFF)");
}
std::string kernel_llvm_ir(const LoopKernel&, const std::string&) { return ""; }

}  // namespace oar::cinn
