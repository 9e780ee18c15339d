// Reads safetensors files: the one reader of oar.save's safe tensor format (a safetensors
// file whose metadata holds the saved object's structure and a CRC-32; Note [Checkpoint
// format] in docs/notes/training_api.md). The predictor reads a saved model's parameters
// with read_params; oar.load (python/oar/framework_io.py) parses and checks its files with
// parse_safetensors and only turns the checked byte ranges into arrays.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "paddle_core/tensor/dense_tensor.h"

namespace oar::inference {

/// One tensor of a safetensors header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // safetensors' dtype name: "F32", "BF16", "U16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

/// A checked safetensors header.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in data order
  uint64_t data_start = 0;                // byte offset of the data section in the file
  std::string format;                     // __metadata__.format; "" for a plain safetensors file
  std::string structure;                  // oar.save's: the saved object's structure (JSON)
};

/// The format oar.save writes (its metadata carries the structure and the CRC-32).
inline constexpr const char* kOarSafetensorsFormat = "oar.safetensors.v1";

/// Parses and checks a whole file's bytes (`path` names it in errors): the header size,
/// its JSON, every entry's dtype, shape and byte range, and for oar.save's format the
/// CRC-32 over the entries, the structure and the data. Throws InvalidArgument
/// "'<path>' is not a valid Oar/safetensors file: <what is wrong>".
SafetensorsHeader parse_safetensors(std::string_view bytes, const std::string& path);

/// The {name: tensor} dict saved by oar.save(dict, path); throws NotFound when the file
/// cannot be opened, InvalidArgument naming the file on anything malformed (truncation,
/// bad JSON, offsets, checksum, not a dict of tensors).
std::map<std::string, std::shared_ptr<DenseTensor>> read_params(const std::string& path);

}  // namespace oar::inference
