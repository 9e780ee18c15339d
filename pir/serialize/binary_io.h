// The primitives of the binary format (Note [PIR binary format]) that a kind's write
// and read hooks (kinds.h) use: little-endian varints, zigzag ints, raw bytes, and
// references into the string and type tables. serialize.cc builds programs on top.
// Every read is bounds-checked; a bad byte throws InvalidArgument "deserialize: ...
// (at byte N)" and never crashes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pir/ir/ir_context.h"

namespace oar::pir {

class BinaryWriter {
 public:
  void byte(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_->push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_->push_back(static_cast<char>(v));
  }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  /// 8 raw bytes (bitwise: -0.0 and NaN payloads survive).
  void f64(double v) { out_->append(reinterpret_cast<const char*>(&v), 8); }
  void raw(std::string_view b) { out_->append(b); }
  /// A string, as its index in the string table.
  void str(std::string_view s) { varint(str_id(s)); }
  /// A type, as its index in the type table.
  void type(Type t) { varint(type_id(t)); }
  /// A nested attribute: its kind's index in the kind table, then the kind's payload.
  void attr(Attribute a);

 protected:
  BinaryWriter() = default;
  uint64_t str_id(std::string_view s);
  uint64_t type_id(Type t);
  /// strings | attribute kinds | type kinds | types (the tables, known after the body).
  std::string tables() const;

  std::string* out_ = nullptr;  // where the primitives write

 private:
  template <typename Info>
  uint64_t kind_index(std::vector<int64_t>& index, std::vector<const Info*>& table, const Info& info);
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint64_t> str_ids_;
  std::string types_buf_;
  std::unordered_map<Type, uint64_t> type_ids_;
  uint64_t num_types_ = 0;
  std::vector<int64_t> attr_kind_index_, type_kind_index_;  // by kind id, -1: not in the table yet
  std::vector<const AttrKindInfo*> attr_kinds_;
  std::vector<const TypeKindInfo*> type_kinds_;
};

class BinaryReader {
 public:
  IrContext* ctx() const { return ctx_; }
  [[noreturn]] void fail(const std::string& msg) const;
  uint8_t byte() {
    if (pos_ >= d_.size()) fail("truncated payload");
    return static_cast<uint8_t>(d_[pos_++]);
  }
  uint64_t varint();
  int64_t zigzag() {
    uint64_t v = varint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  double f64();
  std::string_view raw(size_t n);
  /// A count of items each taking at least `min_bytes`, bounded by what is left.
  size_t count(size_t min_bytes = 1);
  const std::string& str();
  Type type();
  Attribute attr();

 protected:
  BinaryReader(IrContext* ctx, std::string_view data, size_t base) : ctx_(ctx), d_(data), base_(base) {}
  /// Reads the tables; version 1 files have no kind tables: their kind bytes are the
  /// builtin kinds' ids.
  void tables(uint32_t version);
  bool at_end() const { return pos_ == d_.size(); }
  size_t left() const { return d_.size() - pos_; }

  IrContext* ctx_;
  std::vector<Type> types_;

 private:
  std::string_view d_;
  size_t base_;
  size_t pos_ = 0;
  uint32_t version_ = 0;
  int depth_ = 0;
  std::vector<std::string> strings_;
  std::vector<const AttrKindInfo*> attr_kinds_;
  std::vector<const TypeKindInfo*> type_kinds_;
};

}  // namespace oar::pir
