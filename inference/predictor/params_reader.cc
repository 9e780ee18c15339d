#include "inference/predictor/params_reader.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "paddle_core/base/errors.h"
#include "pir/serialize/serialize.h"

namespace oar::inference {
namespace {

using Json = nlohmann::json;

DataType st_dtype(const std::string& s, const std::string& path) {
  static const std::map<std::string, DataType> m = {
      {"BOOL", DataType::BOOL},   {"I8", DataType::INT8},     {"U8", DataType::UINT8},
      {"I16", DataType::INT16},   {"I32", DataType::INT32},   {"I64", DataType::INT64},
      {"F16", DataType::FLOAT16}, {"BF16", DataType::BFLOAT16}, {"F32", DataType::FLOAT32},
      {"F64", DataType::FLOAT64}};
  auto it = m.find(s);
  OAR_ENFORCE(it != m.end(), InvalidArgument, "read_params: '", path, "' holds a tensor of unsupported dtype ", s);
  return it->second;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  OAR_THROW(InvalidArgument, "read_params: '", path, "' is not a valid Oar/safetensors parameter file: ", why);
}

}  // namespace

std::map<std::string, std::shared_ptr<DenseTensor>> read_params(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  OAR_ENFORCE(f.good(), NotFound, "read_params: cannot open '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.size() < 8) corrupt(path, "shorter than the 8-byte header size");
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(bytes[i]);
  if (hlen > bytes.size() - 8) corrupt(path, "the header size exceeds the file (truncated?)");
  Json header;
  try {
    header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(hlen));
  } catch (const Json::exception& e) {
    corrupt(path, std::string("bad JSON header: ") + e.what());
  }
  if (!header.is_object()) corrupt(path, "the header is not a JSON object");
  const size_t data_start = 8 + hlen;
  const size_t data_size = bytes.size() - data_start;

  Json entries = Json::object();
  std::map<std::string, std::shared_ptr<DenseTensor>> by_tensor;
  try {
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      const Json& e = it.value();
      entries[it.key()] = e;
      const DataType dt = st_dtype(e.at("dtype").get<std::string>(), path);
      std::vector<int64_t> shape = e.at("shape").get<std::vector<int64_t>>();
      const auto offs = e.at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_size)
        corrupt(path, "tensor '" + it.key() + "' has data offsets outside the file (truncated?)");
      int64_t numel = 1;
      for (int64_t d : shape) {
        if (d < 0) corrupt(path, "tensor '" + it.key() + "' has a negative size");
        numel *= d;
      }
      if (static_cast<uint64_t>(numel) * size_of(dt) != offs[1] - offs[0])
        corrupt(path, "tensor '" + it.key() + "' has " + std::to_string(offs[1] - offs[0]) +
                          " bytes, its shape and dtype need " + std::to_string(numel * size_of(dt)));
      auto t = std::make_shared<DenseTensor>(Dims(shape), dt);
      t->alloc();
      if (numel > 0) std::memcpy(t->raw_data(), bytes.data() + data_start + offs[0], offs[1] - offs[0]);
      by_tensor[it.key()] = t;
    }
  } catch (const Json::exception& e) {
    corrupt(path, std::string("bad tensor entry: ") + e.what());
  }

  // Oar's metadata: the structure (a dict of name -> tensor) and the CRC-32 over the
  // canonical entries, the structure and the data.
  if (!header.contains("__metadata__")) corrupt(path, "no __metadata__ (not written by oar.save)");
  std::map<std::string, std::shared_ptr<DenseTensor>> out;
  try {
    const Json& meta = header.at("__metadata__");
    const std::string structure = meta.at("structure").get<std::string>();
    const uint32_t want = static_cast<uint32_t>(std::stoull(meta.at("crc32").get<std::string>()));
    std::string crc_in = entries.dump(-1, ' ', true) + structure;
    crc_in.append(bytes, data_start, std::string::npos);
    if (pir::crc32(crc_in) != want) corrupt(path, "checksum mismatch (the file is corrupt)");
    const Json root = Json::parse(structure);
    if (!root.is_object() || !root.contains("dict")) corrupt(path, "the saved object is not a dict of tensors");
    for (const Json& item : root.at("dict")) {
      const std::string name = item.at(0).get<std::string>();
      const Json& leaf = item.at(1);
      if (!leaf.contains("tensor")) corrupt(path, "entry '" + name + "' is not a tensor");
      auto t = by_tensor.find(leaf.at("tensor").get<std::string>());
      if (t == by_tensor.end()) corrupt(path, "entry '" + name + "' names a missing tensor");
      out[name] = t->second;
    }
  } catch (const Json::exception& e) {
    corrupt(path, std::string("bad metadata: ") + e.what());
  } catch (const std::invalid_argument&) {
    corrupt(path, "bad checksum field");
  } catch (const std::out_of_range&) {
    corrupt(path, "bad checksum field");
  }
  return out;
}

}  // namespace oar::inference
