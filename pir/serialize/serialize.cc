// Note [PIR binary format]
//   header  magic "\x89OARPIR\n" (8) | version u32 | payload length u64 | crc32 of the payload u32
//           (24 bytes, little endian)
//   payload strings: n, (len, bytes)*        -- every name and string attribute, deduplicated
//           types:   n, (kind u8, ...)*       -- a type refers to earlier types only
//           params:  n, (name str, type, has_data u8, [len, bytes])*
//           module:  block
//   block   nargs, type*, nops, op*
//   op      name str, noperands, (0 | value id + 1)*, nresults, type*, nattrs, (name str, attr)*,
//           nregions, (nblocks, block*)*
//   attr    kind u8 then its value (ints zigzag varint, floats 8 raw bytes, dense: type + bytes)
// Values are numbered in definition order (block arguments, then each op's results).
#include "pir/serialize/serialize.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "paddle_core/base/errors.h"
#include "pir/ir/operation.h"
#include "pir/ir/program.h"
#include "pir/ir/verifier.h"

namespace oar::pir {

namespace {
constexpr char kMagic[8] = {'\x89', 'O', 'A', 'R', 'P', 'I', 'R', '\n'};
constexpr int kMaxDepth = 200;

const uint32_t* crc_table() {
  static uint32_t table[256] = {};
  static bool init = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)init;
  return table;
}

// ---------------------------------------------------------------- writer
class Writer {
 public:
  Writer(const Program& p, bool with_data) : p_(p), with_data_(with_data) {}

  std::string run() {
    std::string body;
    const auto& params = p_.parameters();
    varint(body, params.size());
    for (const auto& [name, stored] : params) {
      const std::shared_ptr<DenseTensor>& data = with_data_ ? stored : kNoData;
      varint(body, str_id(name));
      Type t = data ? p_.context()->tensor_type(data->dtype(), data->dims().vec()) : Type();
      varint(body, t ? type_id(t) + 1 : 0);
      body.push_back(data ? 1 : 0);
      if (data) {
        DenseTensor c = contiguous(*data);
        size_t n = static_cast<size_t>(c.numel()) * size_of(c.dtype());
        varint(body, n);
        body.append(static_cast<const char*>(c.raw_data()), n);
      }
    }
    block(body, p_.block());
    // payload = strings, types, body (the tables are known only after the body)
    std::string payload;
    varint(payload, strings_.size());
    for (const auto& str : strings_) {
      varint(payload, str.size());
      payload += str;
    }
    varint(payload, num_types_);
    payload += types_buf_;
    payload += body;
    std::string out(kMagic, 8);
    u32(out, kPirFormatVersion);
    u64(out, payload.size());
    u32(out, crc32(payload));
    out += payload;
    return out;
  }

 private:
  static void varint(std::string& o, uint64_t v) {
    while (v >= 0x80) {
      o.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    o.push_back(static_cast<char>(v));
  }
  static void zigzag(std::string& o, int64_t v) { varint(o, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  static void u32(std::string& o, uint32_t v) { o.append(reinterpret_cast<const char*>(&v), 4); }
  static void u64(std::string& o, uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }

  uint64_t str_id(const std::string& s) {
    auto [it, ins] = str_ids_.emplace(s, strings_.size());
    if (ins) strings_.push_back(s);
    return it->second;
  }
  uint64_t type_id(Type t) {
    auto it = type_ids_.find(t);
    if (it != type_ids_.end()) return it->second;
    std::string& o = types_buf_;
    if (t.is_vector()) {
      std::vector<uint64_t> elems;
      for (size_t i = 0; i < t.size(); ++i) elems.push_back(type_id(t.element(i)));
      o.push_back(static_cast<char>(t.kind()));
      varint(o, elems.size());
      for (auto e : elems) varint(o, e);
    } else {
      o.push_back(static_cast<char>(t.kind()));
      if (t.is_tensor()) {
        o.push_back(static_cast<char>(t.dtype()));
        o.push_back(static_cast<char>(t.layout()));
        varint(o, t.dims().size());
        for (int64_t d : t.dims()) zigzag(o, d);
      }
    }
    uint64_t id = num_types_++;
    type_ids_.emplace(t, id);
    return id;
  }
  void attr(std::string& o, Attribute a) {
    o.push_back(static_cast<char>(a.kind()));
    switch (a.kind()) {
      case AttrKind::kBool: o.push_back(a.as_bool() ? 1 : 0); break;
      case AttrKind::kInt: zigzag(o, a.as_int()); break;
      case AttrKind::kFloat: {
        double f = a.as_float();
        o.append(reinterpret_cast<const char*>(&f), 8);
        break;
      }
      case AttrKind::kString: varint(o, str_id(a.as_string())); break;
      case AttrKind::kArray:
        varint(o, a.size());
        for (size_t i = 0; i < a.size(); ++i) attr(o, a.element(i));
        break;
      case AttrKind::kDType: o.push_back(static_cast<char>(static_cast<int>(a.as_dtype()) + 1)); break;
      case AttrKind::kPlace: varint(o, str_id(a.as_place().str())); break;
      case AttrKind::kShape:
        varint(o, a.as_shape().size());
        for (int64_t v : a.as_shape()) zigzag(o, v);
        break;
      case AttrKind::kDense:
        varint(o, type_id(a.type()));
        varint(o, a.bytes().size());
        o += a.bytes();
        break;
      case AttrKind::kType: varint(o, type_id(a.type())); break;
      case AttrKind::kKernelKey:
        o.push_back(static_cast<char>(a.backend()));
        o.push_back(static_cast<char>(static_cast<int>(a.as_dtype()) + 1));
        o.push_back(static_cast<char>(a.layout()));
        break;
    }
  }
  void define(Value v) { v.impl()->scratch = next_value_++; }
  void block(std::string& o, const Block* b) {
    varint(o, b->num_arguments());
    for (size_t i = 0; i < b->num_arguments(); ++i) {
      varint(o, type_id(b->argument(i).type()));
      define(b->argument(i));
    }
    varint(o, b->size());
    for (const Operation* op : *b) this->op(o, op);
  }
  void op(std::string& o, const Operation* op) {
    varint(o, str_id(op->name()));
    varint(o, op->num_operands());
    for (size_t i = 0; i < op->num_operands(); ++i) {
      Value v = op->operand(i);
      varint(o, v ? static_cast<uint64_t>(v.impl()->scratch) + 1 : 0);
    }
    varint(o, op->num_results());
    for (size_t i = 0; i < op->num_results(); ++i) varint(o, type_id(op->result(i).type()));
    varint(o, op->attributes().size());
    for (const auto& a : op->attributes()) {
      varint(o, str_id(a.name));
      attr(o, a.value);
    }
    varint(o, op->num_regions());
    for (size_t r = 0; r < op->num_regions(); ++r) {
      varint(o, op->region(r).size());
      for (size_t k = 0; k < op->region(r).size(); ++k) block(o, op->region(r).block(k));
    }
    for (size_t i = 0; i < op->num_results(); ++i) define(op->result(i));
  }

  const Program& p_;
  bool with_data_;
  inline static const std::shared_ptr<DenseTensor> kNoData;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint64_t> str_ids_;
  std::string types_buf_;
  std::unordered_map<Type, uint64_t> type_ids_;
  uint64_t num_types_ = 0;
  int64_t next_value_ = 0;
};

// ---------------------------------------------------------------- reader
class Reader {
 public:
  Reader(IrContext* ctx, std::string_view data, size_t base) : ctx_(ctx), d_(data), base_(base) {}

  [[noreturn]] void fail(const std::string& msg) const {
    OAR_THROW(InvalidArgument, "deserialize: ", msg, " (at byte ", base_ + pos_, ")");
  }
  uint8_t byte() {
    if (pos_ >= d_.size()) fail("truncated payload");
    return static_cast<uint8_t>(d_[pos_++]);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint is too long");
  }
  int64_t zigzag() {
    uint64_t v = varint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  /// A count of items each taking at least `min_bytes`, bounded by what is left.
  size_t count(size_t min_bytes = 1) {
    uint64_t n = varint();
    if (n > (d_.size() - pos_) / min_bytes) fail("truncated payload: count " + std::to_string(n) + " exceeds the remaining data");
    return static_cast<size_t>(n);
  }
  std::string_view bytes(size_t n) {
    if (n > d_.size() - pos_) fail("truncated payload (need " + std::to_string(n) + " bytes)");
    std::string_view s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  const std::string& str() {
    uint64_t i = varint();
    if (i >= strings_.size()) fail("string index " + std::to_string(i) + " out of range");
    return strings_[i];
  }
  Type type_ref() {
    uint64_t i = varint();
    if (i >= types_.size()) fail("type index " + std::to_string(i) + " out of range");
    return types_[i];
  }
  DataType dtype_byte(bool allow_undefined) {
    int v = static_cast<int>(byte()) - 1;
    if (v < (allow_undefined ? -1 : 0) || v >= kNumDataTypes) fail("bad dtype " + std::to_string(v));
    return static_cast<DataType>(v);
  }

  void tables() {
    size_t ns = count();
    strings_.reserve(ns);
    for (size_t i = 0; i < ns; ++i) strings_.emplace_back(bytes(count(1) * 1));
    size_t nt = count();
    for (size_t i = 0; i < nt; ++i) types_.push_back(type_def());
  }
  Type type_def() {
    uint8_t k = byte();
    if (k > static_cast<uint8_t>(TypeKind::kVector)) fail("bad type kind " + std::to_string(k));
    TypeKind kind = static_cast<TypeKind>(k);
    if (kind == TypeKind::kVector) {
      size_t n = count();
      std::vector<Type> elems;
      for (size_t i = 0; i < n; ++i) elems.push_back(type_ref());
      return ctx_->vector_type(elems);
    }
    if (kind != TypeKind::kDenseTensor) return ctx_->scalar_type(kind);
    int dt = byte();
    if (dt >= kNumDataTypes) fail("bad tensor dtype " + std::to_string(dt));
    uint8_t layout = byte();
    if (layout > 2) fail("bad layout " + std::to_string(layout));
    size_t rank = count();
    if (rank > 64) fail("tensor rank " + std::to_string(rank) + " is too large");
    std::vector<int64_t> dims;
    for (size_t i = 0; i < rank; ++i) dims.push_back(zigzag());
    return ctx_->tensor_type(static_cast<DataType>(dt), dims, static_cast<DataLayout>(layout));
  }
  Attribute attr(int depth) {
    if (depth > kMaxDepth) fail("attributes nest too deeply");
    uint8_t k = byte();
    switch (static_cast<AttrKind>(k)) {
      case AttrKind::kBool: {
        uint8_t b = byte();
        if (b > 1) fail("bad bool");
        return ctx_->bool_attr(b == 1);
      }
      case AttrKind::kInt: return ctx_->int_attr(zigzag());
      case AttrKind::kFloat: {
        double f;
        std::memcpy(&f, bytes(8).data(), 8);
        return ctx_->float_attr(f);
      }
      case AttrKind::kString: return ctx_->str_attr(str());
      case AttrKind::kArray: {
        size_t n = count();
        std::vector<Attribute> elems;
        for (size_t i = 0; i < n; ++i) elems.push_back(attr(depth + 1));
        return ctx_->array_attr(elems);
      }
      case AttrKind::kDType: return ctx_->dtype_attr(dtype_byte(true));
      case AttrKind::kPlace: return ctx_->place_attr(parse_place(str()));
      case AttrKind::kShape: {
        size_t n = count();
        std::vector<int64_t> v;
        for (size_t i = 0; i < n; ++i) v.push_back(zigzag());
        return ctx_->shape_attr(v);
      }
      case AttrKind::kDense: {
        Type t = type_ref();
        size_t n = count();
        return ctx_->dense_attr(t, std::string(bytes(n)));
      }
      case AttrKind::kType: return ctx_->type_attr(type_ref());
      case AttrKind::kKernelKey: {
        uint8_t b = byte();
        if (b > 2) fail("bad backend " + std::to_string(b));
        DataType dt = dtype_byte(true);
        uint8_t l = byte();
        if (l > 2) fail("bad layout " + std::to_string(l));
        return ctx_->kernel_key_attr(b, dt, static_cast<DataLayout>(l));
      }
    }
    fail("bad attribute kind " + std::to_string(k));
  }

  void block(Block* b, int depth) {
    if (depth > kMaxDepth) fail("regions nest too deeply");
    size_t nargs = count();
    for (size_t i = 0; i < nargs; ++i) values_.push_back(b->add_argument(type_ref()));
    size_t nops = count();
    for (size_t i = 0; i < nops; ++i) op(b, depth);
  }
  void op(Block* b, int depth) {
    const std::string& name = str();
    const OpInfo* info = ctx_->find_op(name);
    if (!info) fail("unknown op '" + name + "' (is its dialect loaded?)");
    size_t n = count();
    std::vector<Value> operands;
    for (size_t i = 0; i < n; ++i) {
      uint64_t id = varint();
      if (id > values_.size()) fail("operand refers to value " + std::to_string(id - 1) + " which is not defined yet");
      operands.push_back(id ? values_[id - 1] : Value());
    }
    size_t nr = count();
    std::vector<Type> types;
    for (size_t i = 0; i < nr; ++i) types.push_back(type_ref());
    size_t na = count(2);
    std::vector<NamedAttribute> attrs;
    for (size_t i = 0; i < na; ++i) {
      std::string an = str();
      for (const auto& a : attrs)
        if (a.name == an) fail("attribute '" + an + "' appears twice");
      attrs.push_back(NamedAttribute{std::move(an), attr(0)});
    }
    size_t nreg = count();
    Operation* o = Operation::create(info, operands, types, std::move(attrs), static_cast<int>(nreg));
    b->push_back(o);  // owned by the block from here on, so errors below cannot leak it
    for (size_t r = 0; r < nreg; ++r) {
      size_t nb = count();
      for (size_t k = 0; k < nb; ++k) block(o->region(r).add_block(), depth + 1);
    }
    for (size_t i = 0; i < nr; ++i) values_.push_back(o->result(i));
  }

  std::unique_ptr<Program> program() {
    tables();
    auto p = std::make_unique<Program>(ctx_);
    size_t np = count();
    for (size_t i = 0; i < np; ++i) {
      std::string name = str();
      uint64_t t = varint();
      if (t > types_.size()) fail("parameter type index out of range");
      uint8_t has = byte();
      if (has > 1) fail("bad parameter flag");
      if (!has) {
        p->set_parameter(name, nullptr);
        continue;
      }
      if (t == 0 || !types_[t - 1].is_tensor() || types_[t - 1].has_dynamic_dims())
        fail("parameter '" + name + "' needs a static tensor type");
      Type ty = types_[t - 1];
      size_t nbytes = count();
      if (nbytes != static_cast<size_t>(ty.numel()) * size_of(ty.dtype()))
        fail("parameter '" + name + "' has " + std::to_string(nbytes) + " bytes, its type needs " +
             std::to_string(ty.numel() * size_of(ty.dtype())));
      auto data = std::make_shared<DenseTensor>(Dims(ty.dims()), ty.dtype());
      data->alloc();
      std::string_view raw = bytes(nbytes);
      if (nbytes) std::memcpy(data->raw_data(), raw.data(), nbytes);
      p->set_parameter(name, data);
    }
    block(p->block(), 0);
    if (pos_ != d_.size()) fail(std::to_string(d_.size() - pos_) + " unexpected bytes after the program");
    return p;
  }

 private:
  IrContext* ctx_;
  std::string_view d_;
  size_t base_;
  size_t pos_ = 0;
  std::vector<std::string> strings_;
  std::vector<Type> types_;
  std::vector<Value> values_;
};

uint32_t read_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t read_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
}  // namespace

uint32_t crc32(std::string_view data, uint32_t crc) {
  const uint32_t* t = crc_table();
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (unsigned char ch : data) c = t[(c ^ ch) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string serialize_program(const Program& p, bool with_parameter_data) {
  return Writer(p, with_parameter_data).run();
}

std::unique_ptr<Program> deserialize_program(IrContext* ctx, std::string_view bytes, bool verify) {
  OAR_ENFORCE(bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0, InvalidArgument,
              "deserialize: not an Oar PIR program (bad magic; expected the \\x89OARPIR header)");
  OAR_ENFORCE(bytes.size() >= kPirHeaderSize, InvalidArgument, "deserialize: truncated header (",
              bytes.size(), " bytes, the header has ", kPirHeaderSize, ")");
  const uint32_t version = read_u32(bytes.data() + 8);
  OAR_ENFORCE(version == kPirFormatVersion, InvalidArgument, "deserialize: unsupported format version ",
              version, " (this build reads version ", kPirFormatVersion, ")");
  const uint64_t length = read_u64(bytes.data() + 12);
  const uint32_t stored = read_u32(bytes.data() + 20);
  std::string_view payload = bytes.substr(kPirHeaderSize);
  OAR_ENFORCE(payload.size() >= length, InvalidArgument, "deserialize: truncated input: the header announces ",
              length, " payload bytes, only ", payload.size(), " are present");
  OAR_ENFORCE(payload.size() == length, InvalidArgument, "deserialize: ", payload.size() - length,
              " unexpected bytes after the payload");
  const uint32_t actual = crc32(payload);
  if (actual != stored) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "stored 0x%08x, computed 0x%08x", stored, actual);
    OAR_THROW(InvalidArgument, "deserialize: checksum mismatch (", buf, "): the data is corrupt");
  }
  Reader r(ctx, payload, kPirHeaderSize);
  std::unique_ptr<Program> p;
  try {
    p = r.program();
  } catch (const Error& e) {
    if (e.message().rfind("deserialize:", 0) == 0) throw;
    throw Error(ErrorKind::kInvalidArgument, "deserialize: malformed program: " + e.message());
  }
  if (verify) verify_program(*p);
  return p;
}

void save_program(const Program& p, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  OAR_ENFORCE(bool(f), NotFound, "save_program: cannot open '", path, "' for writing");
  std::string bytes = serialize_program(p);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  OAR_ENFORCE(bool(f), ResourceExhausted, "save_program: writing '", path, "' failed");
}

std::unique_ptr<Program> load_program(IrContext* ctx, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  OAR_ENFORCE(bool(f), NotFound, "load_program: cannot open '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return deserialize_program(ctx, ss.str());
}

}  // namespace oar::pir
