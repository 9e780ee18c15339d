// The one saved-model loader (Note [Saved model] in docs/notes/jit.md): the C++
// predictor, oar.inference and oar.jit.load all read <prefix>.pdmodel + .pdiparams here.
#pragma once

#include <memory>
#include <string>

#include "pir/ir/program.h"

namespace oar::inference {

/// The program of `prog_file` (PIR's binary format) with the data of each of its
/// parameters from `params_file` (oar.save's safe tensor format) attached after checking
/// its name, shape and dtype. Throws NotFound when a file does not exist, InvalidArgument
/// naming the file and what is wrong when one is corrupt, truncated or does not match.
std::unique_ptr<pir::Program> load_saved_model(const std::string& prog_file, const std::string& params_file);

}  // namespace oar::inference
