#include "inference/predictor/params_reader.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "paddle_core/base/errors.h"
#include "pir/serialize/serialize.h"

namespace oar::inference {
namespace {

using Json = nlohmann::json;

constexpr uint64_t kMaxHeader = 100ull * 1024 * 1024;  // as framework_io: larger is no real header

/// Bytes per element of each safetensors dtype this reader accepts.
const std::map<std::string, size_t>& st_sizes() {
  static const std::map<std::string, size_t> m = {{"BOOL", 1}, {"I8", 1},  {"U8", 1},  {"I16", 2}, {"U16", 2},
                                                  {"I32", 4},  {"U32", 4}, {"I64", 8}, {"U64", 8}, {"F16", 2},
                                                  {"BF16", 2}, {"F32", 4}, {"F64", 8}};
  return m;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  OAR_THROW(InvalidArgument, "'", path, "' is not a valid Oar/safetensors file: ", why);
}

}  // namespace

SafetensorsHeader parse_safetensors(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 8) corrupt(path, "the file is truncated (" + std::to_string(bytes.size()) + " bytes, no header)");
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(bytes[i]);
  if (hlen > kMaxHeader) corrupt(path, "header size " + std::to_string(hlen) + " is implausible");
  if (hlen > bytes.size() - 8)
    corrupt(path, "the file is truncated (header needs " + std::to_string(8 + hlen) + " bytes, file has " +
                      std::to_string(bytes.size()) + ")");
  Json header;
  try {
    header = Json::parse(bytes.substr(8, hlen));
  } catch (const Json::exception& e) {
    corrupt(path, std::string("the header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) corrupt(path, "the header is not a JSON object");

  SafetensorsHeader out;
  out.data_start = 8 + hlen;
  const uint64_t data_size = bytes.size() - out.data_start;
  Json entries = Json::object();  // the header without __metadata__: what the checksum covers
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    entries[it.key()] = it.value();
    SafetensorsEntry e;
    e.name = it.key();
    try {
      e.dtype = it.value().at("dtype").get<std::string>();
      e.shape = it.value().at("shape").get<std::vector<int64_t>>();
      const auto offs = it.value().at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2) throw std::invalid_argument("data_offsets");
      e.begin = offs[0];
      e.end = offs[1];
    } catch (const std::exception&) {
      corrupt(path, "malformed entry for tensor '" + e.name + "'");
    }
    auto size = st_sizes().find(e.dtype);
    if (size == st_sizes().end()) corrupt(path, "tensor '" + e.name + "' has unsupported dtype " + e.dtype);
    uint64_t numel = 1;
    bool negative = false;
    for (int64_t d : e.shape) {
      negative |= d < 0;
      numel *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
    }
    if (negative || e.begin > e.end || e.end - e.begin != numel * size->second) {
      std::ostringstream shape;
      shape << "[";
      for (size_t i = 0; i < e.shape.size(); ++i) shape << (i ? ", " : "") << e.shape[i];
      shape << "]";
      corrupt(path, "tensor '" + e.name + "' byte range [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                        ") does not match shape " + shape.str() + " and dtype " + e.dtype);
    }
    if (e.end > data_size)
      corrupt(path, "the file is truncated (tensor '" + e.name + "' ends at byte " + std::to_string(e.end) +
                        " of the data, which has " + std::to_string(data_size) + ")");
    out.entries.push_back(std::move(e));
  }
  std::stable_sort(out.entries.begin(), out.entries.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });

  const auto meta = header.find("__metadata__");
  if (meta == header.end() || !meta->is_object()) return out;  // a plain safetensors file
  if (auto f = meta->find("format"); f != meta->end() && f->is_string()) out.format = f->get<std::string>();
  if (out.format != kOarSafetensorsFormat) return out;
  // oar.save's CRC-32 over the canonical entries (sorted keys, no spaces, ASCII: Python's
  // json.dumps(sort_keys=True, separators=(",", ":"))), the structure, and the tensors'
  // bytes in data order.
  auto s = meta->find("structure");
  auto c = meta->find("crc32");
  if (s == meta->end() || !s->is_string() || c == meta->end() || !c->is_string())
    corrupt(path, "the metadata has no structure or crc32");
  out.structure = s->get<std::string>();
  uint32_t crc = pir::crc32(entries.dump(-1, ' ', true) + out.structure);
  for (const SafetensorsEntry& e : out.entries)
    crc = pir::crc32(bytes.substr(out.data_start + e.begin, e.end - e.begin), crc);
  if (std::to_string(crc) != c->get<std::string>())
    corrupt(path, "checksum mismatch (the data was modified or damaged)");
  return out;
}

std::map<std::string, std::shared_ptr<DenseTensor>> read_params(const std::string& path) {
  const std::string bytes = pir::read_file(path, "read_params");
  SafetensorsHeader h;
  try {
    h = parse_safetensors(bytes, path);
  } catch (const Error& e) {
    throw Error(e.kind(), "read_params: " + e.message());
  }
  auto bad = [&](const std::string& why) {
    OAR_THROW(InvalidArgument, "read_params: '", path, "' is not a valid Oar/safetensors file: ", why);
  };
  if (h.format != kOarSafetensorsFormat) bad("no Oar metadata (not written by oar.save)");
  static const std::map<std::string, DataType> dtypes = {
      {"BOOL", DataType::BOOL},   {"I8", DataType::INT8},    {"U8", DataType::UINT8},    {"I16", DataType::INT16},
      {"I32", DataType::INT32},   {"I64", DataType::INT64},  {"F16", DataType::FLOAT16}, {"BF16", DataType::BFLOAT16},
      {"F32", DataType::FLOAT32}, {"F64", DataType::FLOAT64}};
  std::map<std::string, std::shared_ptr<DenseTensor>> by_tensor;
  for (const SafetensorsEntry& e : h.entries) {
    auto dt = dtypes.find(e.dtype);
    if (dt == dtypes.end()) bad("tensor '" + e.name + "' has dtype " + e.dtype + ", which no parameter can have");
    auto t = std::make_shared<DenseTensor>(Dims(e.shape), dt->second);
    t->alloc();
    if (e.end > e.begin) std::memcpy(t->raw_data(), bytes.data() + h.data_start + e.begin, e.end - e.begin);
    if (t->dtype() == DataType::BOOL) {
      // A byte other than 0/1 is not a bool (loading it is undefined): a damaged or foreign
      // file's bool bytes are read as byte != 0, as NumPy's astype(bool) does.
      auto* p = static_cast<unsigned char*>(t->raw_data());
      for (int64_t i = 0; i < t->numel(); ++i) p[i] = p[i] != 0;
    }
    by_tensor[e.name] = t;
  }
  std::map<std::string, std::shared_ptr<DenseTensor>> out;
  try {
    const Json root = Json::parse(h.structure);
    if (!root.is_object() || !root.contains("dict")) bad("the saved object is not a dict of tensors");
    for (const Json& item : root.at("dict")) {
      const std::string name = item.at(0).get<std::string>();
      const Json& leaf = item.at(1);
      if (!leaf.is_object() || !leaf.contains("tensor")) bad("entry '" + name + "' is not a tensor");
      auto t = by_tensor.find(leaf.at("tensor").get<std::string>());
      if (t == by_tensor.end()) bad("entry '" + name + "' names a missing tensor");
      out[name] = t->second;
    }
  } catch (const Json::exception& e) {
    bad(std::string("malformed structure (") + e.what() + ")");
  }
  return out;
}

}  // namespace oar::inference
