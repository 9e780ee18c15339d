// Named pass pipelines: the one table saying which passes a program runs through before
// the executor runs it (Note [Pass pipelines] in docs/notes/jit.md). Everything else
// (oar.jit, oar.inference, the C++ predictor, pir_opt) names a pipeline instead of
// spelling its passes. Every pipeline ends with lower_to_kernel: the executor runs
// kernel-dialect programs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/place.h"

namespace oar::pir {

class Program;

/// The pass every pipeline ends with (op dialect -> kernel dialect).
inline constexpr const char* kLowerPass = "lower_to_kernel";

/// The registered pipeline names, in table order.
std::vector<std::string> registered_pipelines();
/// True when `name` names a registered pipeline.
bool is_pipeline(std::string_view name);
/// The passes of pipeline `name`, in order; throws NotFound listing the known pipelines.
const std::vector<std::string>& pipeline_passes(std::string_view name);
/// Pipeline `name` as text ("canonicalize,cse,dce,lower_to_kernel").
std::string pipeline(std::string_view name);

/// A copy of `program` that shares its parameter data (a round trip through the binary
/// format, parameters by name).
std::unique_ptr<Program> clone_program(const Program& program);

/// Runs pipeline `name` keeping `program` in the op dialect: the passes before its final
/// lower_to_kernel transform `program` itself (what users print, jit.save writes, ONNX
/// export reads), the lowering runs on a copy, which is returned for the executor.
/// The passes compile for `place` (PassManager::set_place).
std::unique_ptr<Program> run_pipeline_lowering_copy(Program& program, std::string_view name,
                                                    const Place& place = CPUPlace());

}  // namespace oar::pir
