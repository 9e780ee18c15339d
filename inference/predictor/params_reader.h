// Reads the parameter file of a saved model: oar.save's safe tensor format (a
// safetensors file whose metadata holds the saved dict's structure and a CRC-32; Note
// [Checkpoint format] in docs/notes/training_api.md), without Python.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::inference {

/// The {name: tensor} dict saved by oar.save(dict, path); throws InvalidArgument naming
/// the file on anything malformed (truncation, bad JSON, offsets, checksum).
std::map<std::string, std::shared_ptr<DenseTensor>> read_params(const std::string& path);

}  // namespace oar::inference
