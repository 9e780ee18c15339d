#include "pir/serialize/binary_io.h"

#include <cstring>

#include "paddle_core/base/errors.h"

namespace oar::pir {

namespace {
constexpr int kMaxDepth = 200;
}  // namespace

// ---------------------------------------------------------------- writer
void BinaryWriter::attr(Attribute a) {
  varint(kind_index(attr_kind_index_, attr_kinds_, a.kind_info()));
  a.kind_info().write(*this, a);
}

uint64_t BinaryWriter::str_id(std::string_view s) {
  auto [it, ins] = str_ids_.emplace(std::string(s), strings_.size());
  if (ins) strings_.emplace_back(s);
  return it->second;
}

// A type's definition goes to the type table after those of the types it refers to
// (the hook's nested type() calls define them first), so a reader only ever looks back.
uint64_t BinaryWriter::type_id(Type t) {
  auto it = type_ids_.find(t);
  if (it != type_ids_.end()) return it->second;
  std::string def;
  std::string* saved = out_;
  out_ = &def;
  varint(kind_index(type_kind_index_, type_kinds_, t.kind_info()));
  t.kind_info().write(*this, t);
  out_ = saved;
  types_buf_ += def;
  uint64_t id = num_types_++;
  type_ids_.emplace(t, id);
  return id;
}

template <typename Info>
uint64_t BinaryWriter::kind_index(std::vector<int64_t>& index, std::vector<const Info*>& table, const Info& info) {
  const auto id = static_cast<size_t>(info.id);
  if (id >= index.size()) index.resize(id + 1, -1);
  if (index[id] < 0) {
    index[id] = static_cast<int64_t>(table.size());
    table.push_back(&info);
    str_id(info.name);
  }
  return static_cast<uint64_t>(index[id]);
}

std::string BinaryWriter::tables() const {
  std::string o;
  BinaryWriter w;  // only its primitives, into `o`
  w.out_ = &o;
  w.varint(strings_.size());
  for (const auto& s : strings_) {
    w.varint(s.size());
    o += s;
  }
  w.varint(attr_kinds_.size());
  for (const auto* k : attr_kinds_) w.varint(str_ids_.at(k->name));
  w.varint(type_kinds_.size());
  for (const auto* k : type_kinds_) w.varint(str_ids_.at(k->name));
  w.varint(num_types_);
  o += types_buf_;
  return o;
}

// ---------------------------------------------------------------- reader
void BinaryReader::fail(const std::string& msg) const {
  OAR_THROW(InvalidArgument, "deserialize: ", msg, " (at byte ", base_ + pos_, ")");
}
uint64_t BinaryReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = byte();
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("varint is too long");
}
double BinaryReader::f64() {
  double f;
  std::memcpy(&f, raw(8).data(), 8);
  return f;
}
std::string_view BinaryReader::raw(size_t n) {
  if (n > d_.size() - pos_) fail("truncated payload (need " + std::to_string(n) + " bytes)");
  std::string_view s = d_.substr(pos_, n);
  pos_ += n;
  return s;
}
size_t BinaryReader::count(size_t min_bytes) {
  uint64_t n = varint();
  if (n > (d_.size() - pos_) / min_bytes)
    fail("truncated payload: count " + std::to_string(n) + " exceeds the remaining data");
  return static_cast<size_t>(n);
}
const std::string& BinaryReader::str() {
  uint64_t i = varint();
  if (i >= strings_.size()) fail("string index " + std::to_string(i) + " out of range");
  return strings_[i];
}
Type BinaryReader::type() {
  uint64_t i = varint();
  if (i >= types_.size()) fail("type index " + std::to_string(i) + " out of range");
  return types_[i];
}
Attribute BinaryReader::attr() {
  if (depth_ >= kMaxDepth) fail("attributes nest too deeply");
  const uint64_t k = version_ == 1 ? byte() : varint();
  if (k >= attr_kinds_.size()) fail("bad attribute kind " + std::to_string(k));
  const AttrKindInfo* info = attr_kinds_[k];
  ++depth_;
  Attribute a = info->read(*this, info->id);
  --depth_;
  return a;
}

void BinaryReader::tables(uint32_t version) {
  version_ = version;
  size_t ns = count();
  strings_.reserve(ns);
  for (size_t i = 0; i < ns; ++i) strings_.emplace_back(raw(count()));
  if (version == 1) {
    for (int k = 0; k < kNumBuiltinAttrKinds; ++k)
      attr_kinds_.push_back(ctx_->attr_kind_info(static_cast<AttrKind>(k)));
    for (int k = 0; k < kNumBuiltinTypeKinds; ++k)
      type_kinds_.push_back(ctx_->type_kind_info(static_cast<TypeKind>(k)));
  } else {
    size_t na = count();
    for (size_t i = 0; i < na; ++i) {
      const std::string& n = str();
      const AttrKindInfo* k = ctx_->find_attr_kind(n);
      if (!k) fail("unknown attribute kind '" + n + "' (is its dialect loaded?)");
      attr_kinds_.push_back(k);
    }
    size_t nt = count();
    for (size_t i = 0; i < nt; ++i) {
      const std::string& n = str();
      const TypeKindInfo* k = ctx_->find_type_kind(n);
      if (!k) fail("unknown type kind '" + n + "' (is its dialect loaded?)");
      type_kinds_.push_back(k);
    }
  }
  size_t nt = count();
  for (size_t i = 0; i < nt; ++i) {
    const uint64_t k = version_ == 1 ? byte() : varint();
    if (k >= type_kinds_.size()) fail("bad type kind " + std::to_string(k));
    types_.push_back(type_kinds_[k]->read(*this, type_kinds_[k]->id));
  }
}

}  // namespace oar::pir
