// The builtin attribute and type kinds, registered by the builtin dialect through the
// same hooks a dialect's kinds use (Note [Attribute and type kinds]). Their text and
// binary forms are those of format version 1 (docs/notes/pir.md), unchanged.
#include <limits>

#include "paddle_core/base/errors.h"
#include "paddle_core/tensor/place.h"
#include "pir/ir/ir_context.h"
#include "pir/ir/parser.h"
#include "pir/ir/printer.h"
#include "pir/serialize/binary_io.h"

namespace oar::pir {
namespace {

using AS = detail::AttrStorage;
using TS = detail::TypeStorage;

// A kernel key's device type is printed and parsed by name (cpu, gpu, a plugin's type):
// its id is only meaningful in this process.
const std::string& backend_str(int b) { return device_type_name(static_cast<DeviceType>(b)); }

DataLayout parse_layout(AsmParser& p) {
  std::string_view l = p.ident();
  if (l == "NCHW") return DataLayout::kNCHW;
  if (l == "NHWC") return DataLayout::kNHWC;
  if (l == "ANY") return DataLayout::kAny;
  p.fail("unknown layout '" + std::string(l) + "'");
}
/// Binary dtypes are stored + 1 so UNDEFINED (-1) fits a byte.
void write_dtype(BinaryWriter& w, DataType t) { w.byte(static_cast<uint8_t>(static_cast<int>(t) + 1)); }
DataType read_dtype(BinaryReader& r) {
  int v = static_cast<int>(r.byte()) - 1;
  if (v < -1 || v >= kNumDataTypes) r.fail("bad dtype " + std::to_string(v));
  return static_cast<DataType>(v);
}

// ---------------------------------------------------------------- attributes
// bool: true / false
void bool_key(std::string& k, const AS& s) { k.push_back(static_cast<char>(s.b)); }
void bool_print(std::string& out, Attribute a) { out += a.as_bool() ? "true" : "false"; }
Attribute bool_parse(AsmParser& p, AttrKind) {
  if (p.accept_str("true")) return p.ctx()->bool_attr(true);
  if (p.accept_str("false")) return p.ctx()->bool_attr(false);
  p.fail("expected an attribute");
}
void bool_write(BinaryWriter& w, Attribute a) { w.byte(a.as_bool() ? 1 : 0); }
Attribute bool_read(BinaryReader& r, AttrKind) {
  uint8_t b = r.byte();
  if (b > 1) r.fail("bad bool");
  return r.ctx()->bool_attr(b == 1);
}

// int: -3 (a number literal with '.' or an exponent is a float)
void int_key(std::string& k, const AS& s) { key_i64(k, s.i); }
void int_print(std::string& out, Attribute a) { append_int(out, a.as_int()); }
Attribute number_parse(AsmParser& p, AttrKind) { return p.number(); }
void int_write(BinaryWriter& w, Attribute a) { w.zigzag(a.as_int()); }
Attribute int_read(BinaryReader& r, AttrKind) { return r.ctx()->int_attr(r.zigzag()); }

// float: 1.0, 1e-05, inf, -inf, nan (bitwise-uniqued: -0.0 and 0.0 differ)
void float_key(std::string& k, const AS& s) { key_f64(k, s.f); }
void float_print(std::string& out, Attribute a) { print_float(out, a.as_float()); }
Attribute float_word_parse(AsmParser& p, AttrKind) {
  if (p.accept_str("inf")) return p.ctx()->float_attr(std::numeric_limits<double>::infinity());
  if (p.accept_str("nan")) return p.ctx()->float_attr(std::numeric_limits<double>::quiet_NaN());
  p.fail("expected an attribute");
}
void float_write(BinaryWriter& w, Attribute a) { w.f64(a.as_float()); }
Attribute float_read(BinaryReader& r, AttrKind) { return r.ctx()->float_attr(r.f64()); }

// string: "a\"b"
void string_key(std::string& k, const AS& s) { k += s.s; }
void string_print(std::string& out, Attribute a) { print_string(out, a.as_string()); }
Attribute string_parse(AsmParser& p, AttrKind) { return p.ctx()->str_attr(p.string_lit()); }
void string_write(BinaryWriter& w, Attribute a) { w.str(a.as_string()); }
Attribute string_read(BinaryReader& r, AttrKind) { return r.ctx()->str_attr(r.str()); }

// array: [1, "x", [2.5]]
void array_key(std::string& k, const AS& s) {
  for (const AS* e : s.elems) key_ptr(k, e);
}
void array_verify(const AS& s) {
  for (const AS* e : s.elems) OAR_ENFORCE(e != nullptr, InvalidArgument, "array_attr: null element");
}
void array_print(std::string& out, Attribute a) {
  out.push_back('[');
  for (size_t i = 0; i < a.size(); ++i) {
    if (i) out += ", ";
    print_attr(out, a.element(i));
  }
  out.push_back(']');
}
Attribute array_parse(AsmParser& p, AttrKind) {
  p.expect('[');
  std::vector<Attribute> elems;
  if (!p.accept(']')) {
    do elems.push_back(p.attr());
    while (p.accept(','));
    p.expect(']');
  }
  return p.ctx()->array_attr(elems);
}
void array_write(BinaryWriter& w, Attribute a) {
  w.varint(a.size());
  for (size_t i = 0; i < a.size(); ++i) w.attr(a.element(i));
}
Attribute array_read(BinaryReader& r, AttrKind) {
  size_t n = r.count();
  std::vector<Attribute> elems;
  for (size_t i = 0; i < n; ++i) elems.push_back(r.attr());
  return r.ctx()->array_attr(elems);
}

// dtype: #dtype<float32>
void dtype_key(std::string& k, const AS& s) { k.push_back(static_cast<char>(s.dtype)); }
void dtype_print(std::string& out, Attribute a) {
  out += "#dtype<";
  out += dtype_name(a.as_dtype());
  out.push_back('>');
}
Attribute dtype_parse(AsmParser& p, AttrKind) {
  p.expect('<');
  std::string_view n = p.ident();
  p.expect('>');
  if (n == "undefined") return p.ctx()->dtype_attr(DataType::UNDEFINED);
  DataType t;
  try {
    t = dtype_from_name(n);
  } catch (const Error&) {
    p.fail("unknown dtype '" + std::string(n) + "'");
  }
  return p.ctx()->dtype_attr(t);
}
void dtype_write(BinaryWriter& w, Attribute a) { write_dtype(w, a.as_dtype()); }
Attribute dtype_read(BinaryReader& r, AttrKind) { return r.ctx()->dtype_attr(read_dtype(r)); }

// place: #place<gpu:0>
void place_key(std::string& k, const AS& s) {
  k.push_back(static_cast<char>(s.place.type()));
  key_i64(k, s.place.device_id());
}
void place_print(std::string& out, Attribute a) {
  out += "#place<";
  out += a.as_place().str();
  out.push_back('>');
}
Attribute place_parse(AsmParser& p, AttrKind) {
  p.expect('<');
  std::string text(p.until('>'));
  p.expect('>');
  Place pl;
  try {
    pl = parse_place(text);
  } catch (const Error&) {
    p.fail("bad place '" + text + "'");
  }
  return p.ctx()->place_attr(pl);
}
void place_write(BinaryWriter& w, Attribute a) { w.str(a.as_place().str()); }
Attribute place_read(BinaryReader& r, AttrKind) { return r.ctx()->place_attr(parse_place(r.str())); }

// shape: #shape[2, -1]
void shape_key(std::string& k, const AS& s) {
  for (int64_t v : s.ints) key_i64(k, v);
}
void shape_print(std::string& out, Attribute a) {
  out += "#shape[";
  for (size_t i = 0; i < a.as_shape().size(); ++i) {
    if (i) out += ", ";
    append_int(out, a.as_shape()[i]);
  }
  out.push_back(']');
}
Attribute shape_parse(AsmParser& p, AttrKind) {
  p.expect('[');
  std::vector<int64_t> v;
  if (!p.accept(']')) {
    do v.push_back(p.integer());
    while (p.accept(','));
    p.expect(']');
  }
  return p.ctx()->shape_attr(v);
}
void shape_write(BinaryWriter& w, Attribute a) {
  w.varint(a.as_shape().size());
  for (int64_t v : a.as_shape()) w.zigzag(v);
}
Attribute shape_read(BinaryReader& r, AttrKind) {
  size_t n = r.count();
  std::vector<int64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(r.zigzag());
  return r.ctx()->shape_attr(v);
}

// dense: #dense<tensor<2xi32>, "0x0100000002000000"> (raw little-endian bytes)
void dense_key(std::string& k, const AS& s) {
  key_ptr(k, s.type.storage());
  k += s.s;
}
void dense_verify(const AS& s) {
  OAR_ENFORCE(s.type.is_tensor() && !s.type.has_dynamic_dims(), InvalidArgument,
              "dense_attr: expected a static-shaped tensor type, got ", s.type ? s.type.str() : "null");
  const size_t want = static_cast<size_t>(s.type.numel()) * size_of(s.type.dtype());
  OAR_ENFORCE(s.s.size() == want, InvalidArgument, "dense_attr: ", s.type.str(), " needs ", want,
              " bytes of data, got ", s.s.size());
}
void dense_print(std::string& out, Attribute a) {
  static const char* hex = "0123456789abcdef";
  out += "#dense<";
  print_type(out, a.type());
  out += ", \"0x";
  for (unsigned char c : a.bytes()) {
    out.push_back(hex[c >> 4]);
    out.push_back(hex[c & 15]);
  }
  out += "\">";
}
Attribute dense_parse(AsmParser& p, AttrKind) {
  p.expect('<');
  Type t = p.type();
  p.expect(',');
  std::string hex = p.string_lit();
  p.expect('>');
  if (hex.size() < 2 || hex[0] != '0' || hex[1] != 'x' || hex.size() % 2)
    p.fail("dense data must be \"0x<hex bytes>\"");
  if (!t.is_tensor() || t.has_dynamic_dims()) p.fail("dense data needs a static tensor type");
  std::string bytes((hex.size() - 2) / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    int hi = AsmParser::hex_value(hex[2 + 2 * i]), lo = AsmParser::hex_value(hex[3 + 2 * i]);
    if (hi < 0 || lo < 0) p.fail("bad hex digit in dense data");
    bytes[i] = static_cast<char>(hi * 16 + lo);
  }
  if (bytes.size() != static_cast<size_t>(t.numel()) * size_of(t.dtype()))
    p.fail("dense data has " + std::to_string(bytes.size()) + " bytes, " + t.str() + " needs " +
           std::to_string(t.numel() * size_of(t.dtype())));
  return p.ctx()->dense_attr(t, std::move(bytes));
}
void dense_write(BinaryWriter& w, Attribute a) {
  w.type(a.type());
  w.varint(a.bytes().size());
  w.raw(a.bytes());
}
Attribute dense_read(BinaryReader& r, AttrKind) {
  Type t = r.type();
  size_t n = r.count();
  return r.ctx()->dense_attr(t, std::string(r.raw(n)));
}

// type: #type<tensor<2xf32>>
void type_attr_key(std::string& k, const AS& s) { key_ptr(k, s.type.storage()); }
void type_attr_verify(const AS& s) { OAR_ENFORCE(bool(s.type), InvalidArgument, "type_attr: null type"); }
void type_attr_print(std::string& out, Attribute a) {
  out += "#type<";
  print_type(out, a.type());
  out.push_back('>');
}
Attribute type_attr_parse(AsmParser& p, AttrKind) {
  p.expect('<');
  Type t = p.type();
  p.expect('>');
  return p.ctx()->type_attr(t);
}
void type_attr_write(BinaryWriter& w, Attribute a) { w.type(a.type()); }
Attribute type_attr_read(BinaryReader& r, AttrKind) { return r.ctx()->type_attr(r.type()); }

// kernel_key: #kernel_key<cpu, f32, NCHW>
void kernel_key_key(std::string& k, const AS& s) {
  k.push_back(static_cast<char>(s.i));
  k.push_back(static_cast<char>(s.dtype));
  k.push_back(static_cast<char>(s.layout));
}
void kernel_key_print(std::string& out, Attribute a) {
  out += "#kernel_key<";
  out += backend_str(a.backend());
  out += ", ";
  out += short_dtype_name(a.as_dtype());
  out += ", ";
  out += layout_name(a.layout());
  out.push_back('>');
}
Attribute kernel_key_parse(AsmParser& p, AttrKind) {
  p.expect('<');
  std::string_view b = p.ident();
  int backend = -1;
  try {
    backend = static_cast<int>(device_type_from_name(b));
  } catch (const Error& e) {
    p.fail(std::string("bad device type '") + std::string(b) + "': " + e.what());
  }
  p.expect(',');
  std::string_view d = p.ident();
  DataType dt = dtype_from_short_name(d);
  if (dt == DataType::UNDEFINED && d != "undefined") p.fail("unknown dtype '" + std::string(d) + "'");
  p.expect(',');
  DataLayout layout = parse_layout(p);
  p.expect('>');
  return p.ctx()->kernel_key_attr(backend, dt, layout);
}
void kernel_key_write(BinaryWriter& w, Attribute a) {
  w.byte(static_cast<uint8_t>(a.backend()));
  write_dtype(w, a.as_dtype());
  w.byte(static_cast<uint8_t>(a.layout()));
}
Attribute kernel_key_read(BinaryReader& r, AttrKind) {
  uint8_t b = r.byte();
  if (b >= num_device_types()) r.fail("bad device type " + std::to_string(b));
  DataType dt = read_dtype(r);
  uint8_t l = r.byte();
  if (l > 2) r.fail("bad layout " + std::to_string(l));
  return r.ctx()->kernel_key_attr(b, dt, static_cast<DataLayout>(l));
}

// ---------------------------------------------------------------- types
// scalars: f32, i64, bool, ..., index (no parameters: the kind is the type)
void scalar_key(std::string&, const TS&) {}
void scalar_print(std::string& out, Type t) { out += t.kind_name(); }
Type scalar_parse(AsmParser& p, TypeKind self) { return p.ctx()->scalar_type(self); }
void scalar_write(BinaryWriter&, Type) {}
Type scalar_read(BinaryReader& r, TypeKind self) { return r.ctx()->scalar_type(self); }

// tensor: tensor<2x?xf32[, NHWC]>
void tensor_key(std::string& k, const TS& s) {
  k.push_back(static_cast<char>(s.dtype));
  k.push_back(static_cast<char>(s.layout));
  for (int64_t d : s.dims) key_i64(k, d);
}
void tensor_verify(const TS& s) {
  OAR_ENFORCE(s.dtype != DataType::UNDEFINED && static_cast<int>(s.dtype) < kNumDataTypes, InvalidType,
              "tensor_type: a tensor type needs a defined dtype");
  for (int64_t d : s.dims)
    OAR_ENFORCE(d >= 0 || d == kDynamic, InvalidArgument, "tensor_type: dim ", d,
                " is invalid (expected >= 0, or -1 for a dynamic size) in dims ", s.dims);
  OAR_ENFORCE(s.dims.size() <= 64, InvalidArgument, "tensor_type: rank ", s.dims.size(), " is too large");
}
void tensor_print(std::string& out, Type t) {
  out += "tensor<";
  for (int64_t d : t.dims()) {
    if (d == kDynamic)
      out.push_back('?');
    else
      append_int(out, d);
    out.push_back('x');
  }
  out += short_dtype_name(t.dtype());
  if (t.layout() != DataLayout::kNCHW) {
    out += ", ";
    out += layout_name(t.layout());
  }
  out.push_back('>');
}
Type tensor_parse(AsmParser& p, TypeKind) {
  p.expect('<');
  std::vector<int64_t> dims = p.dimension_list();
  const size_t at = p.pos();
  DataType dt = p.peek('>') || p.peek(',') ? DataType::UNDEFINED : dtype_from_short_name(p.ident());
  if (dt == DataType::UNDEFINED) p.fail_at(at, "expected a tensor element type (f32, i64, ...)");
  DataLayout layout = p.accept(',') ? parse_layout(p) : DataLayout::kNCHW;
  p.expect('>');
  return p.ctx()->tensor_type(dt, dims, layout);
}
void tensor_write(BinaryWriter& w, Type t) {
  w.byte(static_cast<uint8_t>(t.dtype()));
  w.byte(static_cast<uint8_t>(t.layout()));
  w.varint(t.dims().size());
  for (int64_t d : t.dims()) w.zigzag(d);
}
Type tensor_read(BinaryReader& r, TypeKind) {
  int dt = r.byte();
  if (dt >= kNumDataTypes) r.fail("bad tensor dtype " + std::to_string(dt));
  uint8_t layout = r.byte();
  if (layout > 2) r.fail("bad layout " + std::to_string(layout));
  size_t rank = r.count();
  if (rank > 64) r.fail("tensor rank " + std::to_string(rank) + " is too large");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i) dims.push_back(r.zigzag());
  return r.ctx()->tensor_type(static_cast<DataType>(dt), dims, static_cast<DataLayout>(layout));
}

// vec: vec<tensor<2xf32>, index>
void vector_key(std::string& k, const TS& s) {
  for (const TS* e : s.elems) key_ptr(k, e);
}
void vector_verify(const TS& s) {
  for (const TS* e : s.elems) OAR_ENFORCE(e != nullptr, InvalidArgument, "vector_type: null element type");
}
void vector_print(std::string& out, Type t) {
  out += "vec<";
  for (size_t i = 0; i < t.size(); ++i) {
    if (i) out += ", ";
    print_type(out, t.element(i));
  }
  out.push_back('>');
}
Type vector_parse(AsmParser& p, TypeKind) {
  p.expect('<');
  std::vector<Type> elems;
  if (!p.accept('>')) {
    do elems.push_back(p.type());
    while (p.accept(','));
    p.expect('>');
  }
  return p.ctx()->vector_type(elems);
}
void vector_write(BinaryWriter& w, Type t) {
  w.varint(t.size());
  for (size_t i = 0; i < t.size(); ++i) w.type(t.element(i));
}
Type vector_read(BinaryReader& r, TypeKind) {
  size_t n = r.count();
  std::vector<Type> elems;
  for (size_t i = 0; i < n; ++i) elems.push_back(r.type());
  return r.ctx()->vector_type(elems);
}

// ---------------------------------------------------------------- registration
void add_attr(IrContext* ctx, AttrKind expect, const char* literal_chars, void (*key)(std::string&, const AS&),
              void (*print)(std::string&, Attribute), Attribute (*parse)(AsmParser&, AttrKind),
              void (*write)(BinaryWriter&, Attribute), Attribute (*read)(BinaryReader&, AttrKind),
              void (*verify)(const AS&) = nullptr) {
  AttrKindInfo k;
  k.name = attr_kind_name(expect);
  k.literal_chars = literal_chars;
  k.key = key;
  k.print = print;
  k.parse = parse;
  k.write = write;
  k.read = read;
  k.verify = verify;
  OAR_ENFORCE(ctx->register_attr_kind(std::move(k)) == expect, Internal,
              "builtin attribute kinds must be registered first, in AttrKind order");
}
void add_type(IrContext* ctx, TypeKind expect, std::string name, void (*key)(std::string&, const TS&),
              void (*print)(std::string&, Type), Type (*parse)(AsmParser&, TypeKind),
              void (*write)(BinaryWriter&, Type), Type (*read)(BinaryReader&, TypeKind),
              void (*verify)(const TS&) = nullptr) {
  TypeKindInfo k;
  k.name = std::move(name);
  k.key = key;
  k.print = print;
  k.parse = parse;
  k.write = write;
  k.read = read;
  k.verify = verify;
  OAR_ENFORCE(ctx->register_type_kind(std::move(k)) == expect, Internal,
              "builtin type kinds must be registered first, in TypeKind order");
}

}  // namespace

void register_builtin_kinds(IrContext* ctx) {
  add_attr(ctx, AttrKind::kBool, "tf", bool_key, bool_print, bool_parse, bool_write, bool_read);
  add_attr(ctx, AttrKind::kInt, "-0123456789", int_key, int_print, number_parse, int_write, int_read);
  add_attr(ctx, AttrKind::kFloat, "in", float_key, float_print, float_word_parse, float_write, float_read);
  add_attr(ctx, AttrKind::kString, "\"", string_key, string_print, string_parse, string_write, string_read);
  add_attr(ctx, AttrKind::kArray, "[", array_key, array_print, array_parse, array_write, array_read, array_verify);
  add_attr(ctx, AttrKind::kDType, "", dtype_key, dtype_print, dtype_parse, dtype_write, dtype_read);
  add_attr(ctx, AttrKind::kPlace, "", place_key, place_print, place_parse, place_write, place_read);
  add_attr(ctx, AttrKind::kShape, "", shape_key, shape_print, shape_parse, shape_write, shape_read);
  add_attr(ctx, AttrKind::kDense, "", dense_key, dense_print, dense_parse, dense_write, dense_read, dense_verify);
  add_attr(ctx, AttrKind::kType, "", type_attr_key, type_attr_print, type_attr_parse, type_attr_write, type_attr_read,
           type_attr_verify);
  add_attr(ctx, AttrKind::kKernelKey, "", kernel_key_key, kernel_key_print, kernel_key_parse, kernel_key_write,
           kernel_key_read);
  for (int k = 0; k < static_cast<int>(TypeKind::kIndex); ++k) {
    TypeKind kind = static_cast<TypeKind>(k);
    add_type(ctx, kind, short_dtype_name(dtype_of_kind(kind)), scalar_key, scalar_print, scalar_parse, scalar_write,
             scalar_read);
  }
  add_type(ctx, TypeKind::kIndex, "index", scalar_key, scalar_print, scalar_parse, scalar_write, scalar_read);
  add_type(ctx, TypeKind::kDenseTensor, "tensor", tensor_key, tensor_print, tensor_parse, tensor_write, tensor_read,
           tensor_verify);
  add_type(ctx, TypeKind::kVector, "vec", vector_key, vector_print, vector_parse, vector_write, vector_read,
           vector_verify);
}

}  // namespace oar::pir
