#include "inference/predictor/saved_model.h"

#include <filesystem>

#include "inference/predictor/params_reader.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/operation.h"
#include "pir/serialize/serialize.h"

namespace oar::inference {

std::unique_ptr<pir::Program> load_saved_model(const std::string& prog_file, const std::string& params_file) {
  for (const std::string& f : {prog_file, params_file})
    OAR_ENFORCE(std::filesystem::exists(f), NotFound, "load_saved_model: '", f,
                "' does not exist (saved models are <prefix>.pdmodel and <prefix>.pdiparams)");
  const std::string bytes = pir::read_file(prog_file, "load_saved_model");
  std::unique_ptr<pir::Program> program;
  try {
    program = pir::deserialize_program(pir::IrContext::global(), bytes);
  } catch (const Error& e) {
    throw Error(e.kind(), "load_saved_model: '" + prog_file + "' is not a valid program: " + e.message());
  }
  auto params = read_params(params_file);
  // Attach each parameter's data, checking it against the program's declaration.
  for (pir::Operation* op : *program->block()) {
    if (op->name() != "builtin.parameter") continue;
    const std::string name = op->attr("name").as_string();
    auto it = params.find(name);
    OAR_ENFORCE(it != params.end(), InvalidArgument, "load_saved_model: '", params_file,
                "' has no data for parameter '", name, "'");
    const pir::Type t = op->result(0).type();
    const auto& d = it->second->dims();
    OAR_ENFORCE(t.dtype() == it->second->dtype() && std::vector<int64_t>(d.begin(), d.end()) == t.dims(),
                InvalidArgument, "load_saved_model: parameter '", name, "' in '", params_file, "' has shape ", d, " ",
                dtype_name(it->second->dtype()), ", the program expects ", t.str());
    program->set_parameter(name, it->second);
  }
  return program;
}

}  // namespace oar::inference
