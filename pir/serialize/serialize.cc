// Note [PIR binary format]
//   header  magic "\x89OARPIR\n" (8) | version u32 | payload length u64 | crc32 of the payload u32
//           (24 bytes, little endian)
//   payload strings:    n, (len, bytes)*   -- every name and string attribute, deduplicated
//           attr kinds: n, (name str)*     -- version 2: the attribute kinds used, by name
//           type kinds: n, (name str)*     -- version 2: the type kinds used, by name
//           types:      n, (kind, payload)*  -- a type refers to earlier types only
//           params:     n, (name str, type, has_data u8, [len, bytes])*
//           module:     block
//   block   nargs, type*, nops, op*
//   op      name str, noperands, (0 | value id + 1)*, nresults, type*, nattrs, (name str, attr)*,
//           nregions, (nblocks, block*)*
//   attr    kind, then its kind's payload (the kind's write/read hooks, kinds.h)
// A kind is its index in the kind table (a varint); version 1 has no kind tables and
// writes each kind as one byte, the builtin kind's id. Values are numbered in definition
// order (block arguments, then each op's results).
#include "pir/serialize/serialize.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <vector>

#include <libdeflate.h>
#include <zlib.h>

#include "paddle_core/base/errors.h"
#include "phi_kernels/cpu/parallel.h"
#include "pir/ir/operation.h"
#include "pir/ir/program.h"
#include "pir/ir/verifier.h"
#include "pir/serialize/binary_io.h"

namespace oar::pir {

namespace {
constexpr char kMagic[8] = {'\x89', 'O', 'A', 'R', 'P', 'I', 'R', '\n'};
constexpr int kMaxDepth = 200;

// ---------------------------------------------------------------- writer
class Writer : public BinaryWriter {
 public:
  Writer(const Program& p, bool with_data) : p_(p), with_data_(with_data) {}

  std::string run() {
    std::string body;
    out_ = &body;
    const auto& params = p_.parameters();
    varint(params.size());
    for (const auto& [name, stored] : params) {
      const std::shared_ptr<DenseTensor>& data = with_data_ ? stored : kNoData;
      str(name);
      Type t = data ? p_.context()->tensor_type(data->dtype(), data->dims().vec()) : Type();
      varint(t ? type_id(t) + 1 : 0);
      byte(data ? 1 : 0);
      if (data) {
        const size_t n = static_cast<size_t>(data->numel()) * size_of(data->dtype());
        std::string bytes(n, '\0');
        if (n > 0) copy_to_host(*data, bytes.data(), n);  // any view, any place (a device's parameters)
        varint(n);
        raw(bytes);
      }
    }
    block(p_.block());
    std::string payload = tables();  // known only after the body
    payload += body;
    std::string out(kMagic, 8);
    u32(out, kPirFormatVersion);
    u64(out, payload.size());
    u32(out, crc32(payload));
    out += payload;
    return out;
  }

 private:
  static void u32(std::string& o, uint32_t v) { o.append(reinterpret_cast<const char*>(&v), 4); }
  static void u64(std::string& o, uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }

  void define(Value v) { v.impl()->scratch = next_value_++; }
  void block(const Block* b) {
    varint(b->num_arguments());
    for (size_t i = 0; i < b->num_arguments(); ++i) {
      type(b->argument(i).type());
      define(b->argument(i));
    }
    varint(b->size());
    for (const Operation* op : *b) this->op(op);
  }
  void op(const Operation* op) {
    str(op->name());
    varint(op->num_operands());
    for (size_t i = 0; i < op->num_operands(); ++i) {
      Value v = op->operand(i);
      varint(v ? static_cast<uint64_t>(v.impl()->scratch) + 1 : 0);
    }
    varint(op->num_results());
    for (size_t i = 0; i < op->num_results(); ++i) type(op->result(i).type());
    varint(op->attributes().size());
    for (const auto& a : op->attributes()) {
      str(a.name);
      attr(a.value);
    }
    varint(op->num_regions());
    for (size_t r = 0; r < op->num_regions(); ++r) {
      varint(op->region(r).size());
      for (size_t k = 0; k < op->region(r).size(); ++k) block(op->region(r).block(k));
    }
    for (size_t i = 0; i < op->num_results(); ++i) define(op->result(i));
  }

  const Program& p_;
  bool with_data_;
  inline static const std::shared_ptr<DenseTensor> kNoData;
  int64_t next_value_ = 0;
};

// ---------------------------------------------------------------- reader
class Reader : public BinaryReader {
 public:
  Reader(IrContext* ctx, std::string_view data, size_t base) : BinaryReader(ctx, data, base) {}

  void block(Block* b, int depth) {
    if (depth > kMaxDepth) fail("regions nest too deeply");
    size_t nargs = count();
    for (size_t i = 0; i < nargs; ++i) values_.push_back(b->add_argument(type()));
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
    for (size_t i = 0; i < nr; ++i) types.push_back(type());
    size_t na = count(2);
    std::vector<NamedAttribute> attrs;
    for (size_t i = 0; i < na; ++i) {
      std::string an = str();
      for (const auto& a : attrs)
        if (a.name == an) fail("attribute '" + an + "' appears twice");
      attrs.push_back(NamedAttribute{std::move(an), attr()});
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

  std::unique_ptr<Program> program(uint32_t version) {
    tables(version);
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
      std::string_view bytes = raw(nbytes);
      if (nbytes) std::memcpy(data->raw_data(), bytes.data(), nbytes);
      p->set_parameter(name, data);
    }
    block(p->block(), 0);
    if (!at_end()) fail(std::to_string(left()) + " unexpected bytes after the program");
    return p;
  }

 private:
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
  // zlib's CRC-32 (the value Python's zlib.crc32 gives). libdeflate folds 64 bytes at a time
  // with carry-less multiplies (PCLMULQDQ, chosen at run time): 14.5 GB/s a thread on Zen 4
  // against zlib 1.2.13's 4.2 (47 MB: 3.3 ms against 11). A checkpoint's tensors (oar.load
  // checks every byte) are split over the pool in pieces joined with zlib's crc32_combine.
  const auto one = [](const char* p, size_t n, uint32_t c) { return libdeflate_crc32(c, p, n); };
  constexpr size_t kPiece = size_t{1} << 18;
  const size_t n = data.size();
  if (n < 2 * kPiece) return one(data.data(), n, crc);
  const int64_t pieces = static_cast<int64_t>((n + kPiece - 1) / kPiece);
  std::vector<uint32_t> part(static_cast<size_t>(pieces));
  const auto run = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const size_t lo = static_cast<size_t>(i) * kPiece;
      part[static_cast<size_t>(i)] = one(data.data() + lo, std::min(kPiece, n - lo), 0);
    }
  };
  phi::parallel_for(pieces, run, static_cast<int64_t>(n / 4));  // 4 bytes cost about a float add (the pool's unit)
  uLong c = crc;
  for (int64_t i = 0; i < pieces; ++i) {
    const size_t lo = static_cast<size_t>(i) * kPiece;
    c = crc32_combine(c, part[static_cast<size_t>(i)], static_cast<z_off_t>(std::min(kPiece, n - lo)));
  }
  return static_cast<uint32_t>(c);
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
  OAR_ENFORCE(version >= 1 && version <= kPirFormatVersion, InvalidArgument, "deserialize: unsupported format version ",
              version, " (this build reads versions 1 to ", kPirFormatVersion, ")");
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
    p = r.program(version);
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
  return deserialize_program(ctx, read_file(path, "load_program"));
}

std::string read_file(const std::string& path, const char* who) {
  std::error_code ec;
  OAR_ENFORCE(!std::filesystem::is_directory(path, ec), InvalidArgument, who, ": '", path,
              "' is a directory, not a file");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  OAR_ENFORCE(bool(f), NotFound, who, ": cannot open '", path, "'");
  const std::streamoff size = f.tellg();
  OAR_ENFORCE(size >= 0, NotFound, who, ": cannot read '", path, "'");
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(bytes.data(), size);
  OAR_ENFORCE(f.gcount() == size, NotFound, who, ": reading '", path, "' stopped after ", f.gcount(), " of ", size,
              " bytes");
  return bytes;
}

}  // namespace oar::pir
