// Open attribute and type kinds (Note [Attribute and type kinds]): a test dialect,
// defined only here, registers a type kind !test.tile<4x8, f32> and an attribute kind
// #test.pair<3, "x"> without any edit to the IR core, and a program using them prints,
// parses, serializes and uniques like one made of builtin kinds.
#include <cstring>
#include <random>

#include "pir/ir/operation.h"
#include "pir/ir/printer.h"
#include "pir/serialize/binary_io.h"
#include "pir/serialize/serialize.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {
using testing::dedent;
using testing::expect_error;

// ---------------------------------------------------------------- the test dialect
/// !test.tile<4x8, f32>: a tile of positive sizes over a scalar element type.
struct TileStorage : detail::TypeStorage {
  std::vector<int64_t> sizes;
  Type elem;
};
/// #test.pair<3, "x">: a count >= 0 and a non-empty label.
struct PairStorage : detail::AttrStorage {
  int64_t count = 0;
  std::string label;
};

Type tile_type(IrContext* ctx, std::vector<int64_t> sizes, Type elem) {
  TileStorage s;
  s.sizes = std::move(sizes);
  s.elem = elem;
  return ctx->unique_type(ctx->type_kind("test.tile"), std::move(s));
}
Attribute pair_attr(IrContext* ctx, int64_t count, std::string label) {
  PairStorage s;
  s.count = count;
  s.label = std::move(label);
  return ctx->unique_attr(ctx->attr_kind("test.pair"), std::move(s));
}

void tile_key(std::string& k, const detail::TypeStorage& s) {
  const auto& t = static_cast<const TileStorage&>(s);
  key_i64(k, static_cast<int64_t>(t.sizes.size()));
  for (int64_t d : t.sizes) key_i64(k, d);
  key_ptr(k, t.elem.storage());
}
void tile_verify(const detail::TypeStorage& s) {
  const auto& t = static_cast<const TileStorage&>(s);
  OAR_ENFORCE(!t.sizes.empty(), InvalidArgument, "test.tile: needs at least one size");
  for (int64_t d : t.sizes)
    OAR_ENFORCE(d > 0, InvalidArgument, "test.tile: sizes must be positive, got ", d, " in ", t.sizes);
  OAR_ENFORCE(t.elem.is_scalar(), InvalidArgument, "test.tile: the element type must be a scalar, got ",
              t.elem ? t.elem.str() : "none");
}
void tile_print(std::string& out, Type t) {
  const auto& s = t.storage_as<TileStorage>();
  out += "!test.tile<";
  for (size_t i = 0; i < s.sizes.size(); ++i) {
    if (i) out.push_back('x');
    append_int(out, s.sizes[i]);
  }
  out += ", ";
  print_type(out, s.elem);
  out.push_back('>');
}
Type tile_parse(AsmParser& p, TypeKind) {
  p.expect('<');
  std::vector<int64_t> sizes;
  do sizes.push_back(p.integer());
  while (p.accept('x'));
  p.expect(',');
  Type elem = p.type();
  p.expect('>');
  return tile_type(p.ctx(), std::move(sizes), elem);
}
void tile_write(BinaryWriter& w, Type t) {
  const auto& s = t.storage_as<TileStorage>();
  w.varint(s.sizes.size());
  for (int64_t d : s.sizes) w.zigzag(d);
  w.type(s.elem);
}
Type tile_read(BinaryReader& r, TypeKind) {
  std::vector<int64_t> sizes(r.count());
  for (auto& d : sizes) d = r.zigzag();
  return tile_type(r.ctx(), std::move(sizes), r.type());
}

void pair_key(std::string& k, const detail::AttrStorage& s) {
  const auto& a = static_cast<const PairStorage&>(s);
  key_i64(k, a.count);
  key_str(k, a.label);
}
void pair_verify(const detail::AttrStorage& s) {
  const auto& a = static_cast<const PairStorage&>(s);
  OAR_ENFORCE(a.count >= 0, InvalidArgument, "test.pair: the count must be >= 0, got ", a.count);
  OAR_ENFORCE(!a.label.empty(), InvalidArgument, "test.pair: the label must not be empty");
}
void pair_print(std::string& out, Attribute a) {
  const auto& s = a.storage_as<PairStorage>();
  out += "#test.pair<";
  append_int(out, s.count);
  out += ", ";
  print_string(out, s.label);
  out.push_back('>');
}
Attribute pair_parse(AsmParser& p, AttrKind) {
  p.expect('<');
  int64_t count = p.integer();
  p.expect(',');
  std::string label = p.string_lit();
  p.expect('>');
  return pair_attr(p.ctx(), count, std::move(label));
}
void pair_write(BinaryWriter& w, Attribute a) {
  const auto& s = a.storage_as<PairStorage>();
  w.zigzag(s.count);
  w.str(s.label);
}
Attribute pair_read(BinaryReader& r, AttrKind) {
  int64_t count = r.zigzag();
  return pair_attr(r.ctx(), count, r.str());
}

// test.make {pair = #test.pair<..>} -> !test.tile<..>; test.use(x) consumes any value.
void verify_make(const Operation* op) {
  OAR_ENFORCE(op->num_operands() == 0 && op->num_results() == 1, InvalidArgument, "expected () -> (tile)");
  OAR_ENFORCE(op->attr("pair").is(op->info()->ctx->attr_kind("test.pair")), InvalidArgument,
              "attribute 'pair' must be a #test.pair");
  OAR_ENFORCE(op->result(0).type().kind_name() == "test.tile", InvalidArgument, "the result must be a !test.tile, got ",
              op->result(0).type().str());
}

class TestDialect : public Dialect {
 public:
  TestDialect() : Dialect("test") {}
  void initialize(IrContext* ctx) override {
    TypeKindInfo tile;
    tile.name = "test.tile";
    tile.key = tile_key;
    tile.print = tile_print;
    tile.parse = tile_parse;
    tile.write = tile_write;
    tile.read = tile_read;
    tile.verify = tile_verify;
    ctx->register_type_kind(tile);
    AttrKindInfo pair;
    pair.name = "test.pair";
    pair.key = pair_key;
    pair.print = pair_print;
    pair.parse = pair_parse;
    pair.write = pair_write;
    pair.read = pair_read;
    pair.verify = pair_verify;
    ctx->register_attr_kind(pair);
    OpInfo make;
    make.name = "test.make";
    make.dialect = "test";
    make.verify = verify_make;
    ctx->register_op(make);
    OpInfo use;
    use.name = "test.use";
    use.dialect = "test";
    ctx->register_op(use);
  }
};

std::unique_ptr<IrContext> test_context() {
  auto c = std::make_unique<IrContext>();
  c->register_dialect(std::make_unique<TestDialect>());
  return c;
}

const std::string kProgram = dedent(R"(
  module {
    %0 = "test.make"() {info = [#test.pair<0, "a \"b\"">, 7, #type<!test.tile<2, i64>>], pair = #test.pair<3, "x">} : () -> (!test.tile<4x8, f32>)
    %1 = "test.make"() {pair = #test.pair<3, "x">} : () -> (!test.tile<4x8, f32>)
    %2 = "builtin.combine"(%0, %1) : (!test.tile<4x8, f32>, !test.tile<4x8, f32>) -> (vec<!test.tile<4x8, f32>, !test.tile<4x8, f32>>)
    "test.use"(%2) : (vec<!test.tile<4x8, f32>, !test.tile<4x8, f32>>) -> ()
  }
)");

// ---------------------------------------------------------------- tests
TEST(PirKinds, BuiltinKindsAreRegisteredKindsWithTheEnumIds) {
  IrContext c;
  EXPECT_EQ(c.attr_kind("int"), AttrKind::kInt);
  EXPECT_EQ(c.attr_kind("kernel_key"), AttrKind::kKernelKey);
  EXPECT_EQ(c.type_kind("f32"), TypeKind::kFloat32);
  EXPECT_EQ(c.type_kind("tensor"), TypeKind::kDenseTensor);
  EXPECT_EQ(c.int_attr(3).kind_name(), "int");
  EXPECT_EQ(c.tensor_type(DataType::FLOAT32, {2}).kind_name(), "tensor");
  EXPECT_EQ(&c.str_attr("s").kind_info(), c.find_attr_kind("string"));
  EXPECT_EQ(c.find_attr_kind("test.pair"), nullptr);
  expect_error([&] { c.attr_kind("test.pair"); }, "attribute kind 'test.pair' is not registered");
}

TEST(PirKinds, DialectKindsAreUniqued) {
  auto c = test_context();
  const AttrKind pair = c->attr_kind("test.pair");
  const TypeKind tile = c->type_kind("test.tile");
  EXPECT_GE(static_cast<int>(pair), kNumBuiltinAttrKinds);
  EXPECT_GE(static_cast<int>(tile), kNumBuiltinTypeKinds);
  Type f32 = c->scalar_type(DataType::FLOAT32);
  Type t = tile_type(c.get(), {4, 8}, f32);
  EXPECT_EQ(t, tile_type(c.get(), {4, 8}, f32));
  EXPECT_NE(t, tile_type(c.get(), {8, 4}, f32));
  EXPECT_NE(t, tile_type(c.get(), {4, 8}, c->scalar_type(DataType::FLOAT64)));
  EXPECT_EQ(t.kind(), tile);
  EXPECT_FALSE(t.is_tensor() || t.is_vector() || t.is_scalar());
  EXPECT_EQ(t.storage_as<TileStorage>().sizes, (std::vector<int64_t>{4, 8}));
  Attribute a = pair_attr(c.get(), 3, "x");
  EXPECT_EQ(a, pair_attr(c.get(), 3, "x"));
  EXPECT_NE(a, pair_attr(c.get(), 4, "x"));
  EXPECT_NE(pair_attr(c.get(), 1, "ab"), pair_attr(c.get(), 1, "abc"));
  EXPECT_TRUE(a.is(pair));
  EXPECT_FALSE(a.is(AttrKind::kInt));
  EXPECT_EQ(a.as_int(), 0);  // a builtin accessor on a dialect kind reads the default, not garbage
  EXPECT_EQ(a.kind_name(), "test.pair");
  const size_t na = c->num_uniqued_attrs(), nt = c->num_uniqued_types();
  pair_attr(c.get(), 3, "x");
  tile_type(c.get(), {4, 8}, f32);
  c->vector_type({t, t});
  EXPECT_EQ(c->vector_type({t, t}), c->vector_type({tile_type(c.get(), {4, 8}, f32), t}));
  EXPECT_EQ(c->num_uniqued_attrs(), na);
  EXPECT_EQ(c->num_uniqued_types(), nt + 1);  // only the vector is new
}

TEST(PirKinds, VerifyHooksRejectBadValues) {
  auto c = test_context();
  Type f32 = c->scalar_type(DataType::FLOAT32);
  const size_t na = c->num_uniqued_attrs(), nt = c->num_uniqued_types();
  expect_error([&] { tile_type(c.get(), {4, 0}, f32); }, "test.tile: sizes must be positive, got 0 in [4, 0]");
  expect_error([&] { tile_type(c.get(), {4}, c->tensor_type(DataType::FLOAT32, {2})); },
               "test.tile: the element type must be a scalar, got tensor<2xf32>");
  expect_error([&] { pair_attr(c.get(), -1, "x"); }, "test.pair: the count must be >= 0, got -1");
  expect_error([&] { pair_attr(c.get(), 1, ""); }, "test.pair: the label must not be empty");
  EXPECT_EQ(c->num_uniqued_attrs(), na);      // a rejected value is not kept
  EXPECT_EQ(c->num_uniqued_types(), nt + 1);  // (the tensor<2xf32> element of the second case)
  // through the text format: the hook's error at the position of the value
  expect_error([&] { parse_type(c.get(), "!test.tile<0x8, f32>"); },
               "parse error at 1:1: test.tile: sizes must be positive, got 0 in [0, 8]");
  expect_error([&] { parse_attribute(c.get(), "[1, #test.pair<-2, \"x\">]"); },
               "parse error at 1:5: test.pair: the count must be >= 0, got -2");
  expect_error([&] { parse_type(c.get(), "!test.tile<4, f32"); }, "expected '>'");
}

TEST(PirKinds, TextRoundTrip) {
  auto c = test_context();
  auto p = parse_program(c.get(), kProgram);
  EXPECT_EQ(p->str(), kProgram);
  EXPECT_EQ(parse_program(c.get(), p->str())->str(), kProgram);
  Operation* make = p->block()->front();
  EXPECT_EQ(make->attr("pair"), pair_attr(c.get(), 3, "x"));
  EXPECT_EQ(make->result(0).type(), tile_type(c.get(), {4, 8}, c->scalar_type(DataType::FLOAT32)));
  EXPECT_EQ(parse_type(c.get(), " !test.tile< 2 x 3 , bf16 >").str(), "!test.tile<2x3, bf16>");
  EXPECT_EQ(parse_attribute(c.get(), "#type<vec<!test.tile<1, i8>, f32>>").str(), "#type<vec<!test.tile<1, i8>, f32>>");
  // the op's verify hook sees the kinds
  expect_error(
      [&] { parse_program(c.get(), "module {\n  %0 = \"test.make\"() {pair = 1} : () -> (!test.tile<1, f32>)\n}"); },
      "attribute 'pair' must be a #test.pair");
}

TEST(PirKinds, BinaryRoundTrip) {
  auto c = test_context();
  auto p = parse_program(c.get(), kProgram);
  const std::string bytes = serialize_program(*p);
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  EXPECT_EQ(version, kPirFormatVersion);
  EXPECT_NE(bytes.find("test.tile"), std::string::npos);  // kinds are written by name
  EXPECT_NE(bytes.find("test.pair"), std::string::npos);
  auto q = deserialize_program(c.get(), bytes);
  EXPECT_EQ(q->str(), kProgram);
  EXPECT_EQ(serialize_program(*q), bytes);  // deterministic
  // into another context, whose kind ids differ (a kind registered before the dialect's)
  IrContext other;
  AttrKindInfo extra = *other.find_attr_kind("int");
  extra.name = "zz.first";
  extra.literal_chars.clear();
  other.register_attr_kind(extra);
  other.register_dialect(std::make_unique<TestDialect>());
  EXPECT_NE(other.attr_kind("test.pair"), c->attr_kind("test.pair"));
  EXPECT_EQ(deserialize_program(&other, bytes)->str(), kProgram);
}

TEST(PirKinds, UnregisteredKindsAreErrorsNamingTheKind) {
  auto c = test_context();
  IrContext plain;  // no test dialect
  expect_error([&] { parse_type(&plain, "!test.tile<4, f32>"); },
               "parse error at 1:1: unknown type kind 'test.tile' (is its dialect loaded?)");
  expect_error([&] { parse_attribute(&plain, "[#test.pair<1, \"x\">]"); },
               "parse error at 1:2: unknown attribute kind 'test.pair' (is its dialect loaded?)");
  expect_error([&] { parse_attribute(&plain, "#int<1>"); }, "unknown attribute kind 'int'");  // a literal has no #form
  expect_error([&] { parse_type(c.get(), "!f32"); }, "the builtin type 'f32' is written without '!'");
  expect_error([&] { parse_type(c.get(), "test.tile<1, f32>"); }, "the type 'test.tile' is written !test.tile");
  expect_error([&] { parse_type(c.get(), "tile<1, f32>"); }, "unknown type 'tile'");
  const std::string bytes = serialize_program(*parse_program(c.get(), kProgram));
  expect_error([&] { deserialize_program(&plain, bytes); },
               "deserialize: unknown attribute kind 'test.pair' (is its dialect loaded?)");
  auto types_only = parse_program(c.get(), dedent(R"(
    module {
      %0 = "test.make"() {pair = #test.pair<1, "y">} : () -> (!test.tile<2, f32>)
    }
  )"));
  plain.register_attr_kind(*c->find_attr_kind("test.pair"));  // the type kind stays unknown
  expect_error([&] { deserialize_program(&plain, serialize_program(*types_only)); },
               "deserialize: unknown type kind 'test.tile' (is its dialect loaded?)");
}

TEST(PirKinds, RegistrationErrors) {
  auto c = test_context();
  AttrKindInfo pair = *c->find_attr_kind("test.pair");
  expect_error([&] { c->register_attr_kind(pair); }, "attribute kind 'test.pair' is already registered");
  AttrKindInfo bare = pair;
  bare.name = "pair";
  expect_error([&] { c->register_attr_kind(bare); }, "attribute kind 'pair' must be named \"<dialect>.<kind>\"");
  AttrKindInfo no_print = pair;
  no_print.name = "test.other";
  no_print.print = nullptr;
  expect_error([&] { c->register_attr_kind(no_print); }, "attribute kind 'test.other' has no print hook");
  AttrKindInfo literal = pair;
  literal.name = "test.lit";
  literal.literal_chars = "7";
  expect_error([&] { c->register_attr_kind(literal); }, "only builtin kinds have bare literals");
  TypeKindInfo tile = *c->find_type_kind("test.tile");
  tile.name = "test.t i";
  expect_error([&] { c->register_type_kind(tile); }, "must be made of letters, digits");
}

// Mutated text and binary input using the dialect's kinds is rejected with oar::Error
// (any other exception or a crash fails the test); what is accepted round-trips.
TEST(PirKinds, MutatedDialectInputOnlyThrowsTypedErrors) {
  auto c = test_context();
  const std::string bytes = serialize_program(*parse_program(c.get(), kProgram));
  std::mt19937 rng(7);
  int rejected = 0;
  for (int i = 0; i < 4000; ++i) {
    const bool text = i % 2;
    std::string m = text ? kProgram : bytes;
    for (int e = 0; e < 2; ++e) {
      const size_t at = text ? rng() % m.size() : kPirHeaderSize + rng() % (m.size() - kPirHeaderSize);
      m[at] = text ? "<>x,!#\"09-"[rng() % 10] : static_cast<char>(rng());
    }
    try {
      std::unique_ptr<Program> p;
      if (text) {
        p = parse_program(c.get(), m);
      } else {  // reseal the checksum so the mutation reaches the decoder
        uint32_t crc = crc32(std::string_view(m).substr(kPirHeaderSize));
        std::memcpy(&m[20], &crc, 4);
        p = deserialize_program(c.get(), m);
      }
      const std::string printed = p->str();
      EXPECT_EQ(parse_program(c.get(), printed)->str(), printed);
      EXPECT_EQ(deserialize_program(c.get(), serialize_program(*p))->str(), printed);
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace oar::pir
