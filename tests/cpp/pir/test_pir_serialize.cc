// Binary serialization round trips; corrupt, truncated and future-version input is
// rejected with a clear error; and a bounded-time fuzz of the text parser and the
// deserializer (random mutations) never crashes and only ever throws oar::Error.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include "pir/ir/printer.h"
#include "pir/serialize/serialize.h"
#include "tests/cpp/pir/pir_sample_programs.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {
using testing::ctx;
using testing::expect_error;

/// Rewrites the header's length and checksum so a mutated payload reaches the decoder.
std::string reseal(std::string bytes) {
  if (bytes.size() < kPirHeaderSize) return bytes;
  uint64_t len = bytes.size() - kPirHeaderSize;
  std::memcpy(&bytes[12], &len, 8);
  uint32_t crc = crc32(std::string_view(bytes).substr(kPirHeaderSize));
  std::memcpy(&bytes[20], &crc, 4);
  return bytes;
}

TEST(PirSerialize, RoundTrip) {
  auto p = testing::kitchen_sink(ctx());
  std::string bytes = serialize_program(*p);
  auto q = deserialize_program(ctx(), bytes);
  EXPECT_EQ(q->str(), p->str());
  EXPECT_EQ(serialize_program(*q), bytes);  // deterministic
  ASSERT_NE(q->parameter("w"), nullptr);
  EXPECT_EQ(q->parameter("w")->dims(), (Dims{2, 3}));
  EXPECT_EQ(q->parameter("w")->data<float>()[5], 1.5f);
  // through a file
  std::string path = ::testing::TempDir() + "/pir_roundtrip.oarpir";
  save_program(*p, path);
  EXPECT_EQ(load_program(ctx(), path)->str(), p->str());
  expect_error([&] { load_program(ctx(), path + ".missing"); }, "cannot open");
}

TEST(PirSerialize, RejectsBadInput) {
  auto p = testing::kitchen_sink(ctx());
  const std::string good = serialize_program(*p);
  expect_error([&] { deserialize_program(ctx(), "module {}"); }, "not an Oar PIR program (bad magic");
  expect_error([&] { deserialize_program(ctx(), good.substr(0, 12)); }, "truncated header");
  std::string future = good;
  future[8] = static_cast<char>(kPirFormatVersion + 1);
  expect_error([&] { deserialize_program(ctx(), future); },
               "unsupported format version 3 (this build reads versions 1 to 2)");
  future[8] = 0;
  expect_error([&] { deserialize_program(ctx(), future); }, "unsupported format version 0");
  expect_error([&] { deserialize_program(ctx(), good.substr(0, good.size() - 5)); },
               "truncated input: the header announces");
  expect_error([&] { deserialize_program(ctx(), good + "x"); }, "1 unexpected bytes after the payload");
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  expect_error([&] { deserialize_program(ctx(), flipped); }, "checksum mismatch");
  // a payload cut short but resealed: the decoder itself reports truncation
  expect_error([&] { deserialize_program(ctx(), reseal(good.substr(0, good.size() - 7))); },
               "truncated payload");
  // an op name the context does not know
  std::string unk = good;
  size_t at = unk.find("pd_op.relu");
  ASSERT_NE(at, std::string::npos);
  unk[at + 6] = 'Z';
  expect_error([&] { deserialize_program(ctx(), reseal(unk)); }, "unknown op 'pd_op.Zelu'");
}

// Bytes written by the version-1 writer (before kinds were open, commit 7290946): every
// builtin attribute and type kind. They still load, and print as they did then.
TEST(PirSerialize, ReadsVersion1) {
  const std::string hex =
      "894f41525049520a010000005d01000000000000fc7b06d31c116275696c74696e2e706172616d65746572046e616d65"
      "0177106275696c74696e2e636f6e7374616e740576616c75650f6275696c74696e2e636f6d62696e65116b65726e656c"
      "2e7068695f6b65726e656c0361727201780162026474016601690a6b65726e656c5f6b65790b6b65726e656c5f6e616d"
      "65016b016e076f705f6e616d650770645f6f702e7802706c056770753a310173046122620a02736802747901750e6275"
      "696c74696e2e6f7574707574036f7574070b08010204010b040001040c020001050a070c030304050000050000010001"
      "0103020003000101010408010801000000020000000005020102010200000602020301010e0704050102020000000000"
      "0004400308040100000200000000000000800900010a05070b02000000000000f0ff0c010d0d0a0009010e030f100200"
      "0000000000f87f1103121306141503161707020401180906190500001a0104000101031b00";
  std::string bytes(hex.size() / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  ASSERT_EQ(bytes[8], 1);
  const std::string text = testing::dedent(R"(
    module {
      %0 = "builtin.parameter"() {name = "w"} : () -> (tensor<2x?xf32, NHWC>)
      %1 = "builtin.constant"() {value = #dense<tensor<2xi32>, "0x0100000002000000">} : () -> (tensor<2xi32>)
      %2 = "builtin.combine"(%0, %1) : (tensor<2x?xf32, NHWC>, tensor<2xi32>) -> (vec<tensor<2x?xf32, NHWC>, tensor<2xi32>>)
      %3 = "kernel.phi_kernel"(%1, %2) {arr = [1, 2.5, "x", [false], -0.0], b = true, dt = #dtype<float16>, f = -inf, i = -7, kernel_key = #kernel_key<cpu, f32, NHWC>, kernel_name = "k", n = nan, op_name = "pd_op.x", pl = #place<gpu:1>, s = "a\"b\n", sh = #shape[2, -1], ty = #type<vec<i64, index, bf16>>, u = #dtype<undefined>} : (tensor<2xi32>, vec<tensor<2x?xf32, NHWC>, tensor<2xi32>>) -> (tensor<2xi32>)
      "builtin.output"(%3) {name = "out"} : (tensor<2xi32>) -> ()
    }
  )");
  auto p = deserialize_program(ctx(), bytes);
  EXPECT_EQ(p->str(), text);
  EXPECT_EQ(parse_program(ctx(), text)->str(), text);
  // written again, it is version 2 and reads back the same
  std::string again = serialize_program(*p);
  EXPECT_EQ(again[8], static_cast<char>(kPirFormatVersion));
  EXPECT_EQ(deserialize_program(ctx(), again)->str(), text);
  // a version-1 kind byte past the builtin kinds is an error, not a crash
  std::string bad = bytes;
  size_t at = bad.find("\x07\x0b\x08\x01", 24);  // the type table: 7 types, the first a tensor (kind 11)
  ASSERT_NE(at, std::string::npos);
  bad[at + 1] = 40;
  expect_error([&] { deserialize_program(ctx(), reseal(bad)); }, "bad type kind 40");
}

// ---------------------------------------------------------------- fuzz
std::string mutate(std::string s, std::mt19937& rng, bool text) {
  std::uniform_int_distribution<int> kind(0, 5);
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t at = rng() % s.size();
    switch (kind(rng)) {
      case 0: s[at] = static_cast<char>(rng()); break;                        // random byte
      case 1: s.erase(at, 1 + rng() % 16); break;                             // delete a run
      case 2: s.insert(at, s.substr(rng() % s.size(), 1 + rng() % 32)); break;  // duplicate a run
      case 3: s.resize(at); break;                                            // truncate
      case 4: {                                                               // structural chars
        static const char kText[] = "{}()[]<>%,=:\"#^x?-0123456789";
        s[at] = text ? kText[rng() % (sizeof(kText) - 1)] : static_cast<char>(rng() % 4);
        break;
      }
      default: s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8))); break;  // bit flip
    }
  }
  return s;
}

/// OAR_PIR_FUZZ_SECONDS scales the time budget and OAR_PIR_FUZZ_SEED changes the
/// seed, for longer runs by hand; the defaults keep the suite fast and reproducible.
template <typename Fn> void fuzz(const char* what, double seconds, Fn&& one) {
  const char* scale = std::getenv("OAR_PIR_FUZZ_SECONDS");
  const char* seed = std::getenv("OAR_PIR_FUZZ_SEED");
  const bool long_run = scale != nullptr;
  if (long_run) seconds = std::atof(scale);
  std::mt19937 rng(seed ? static_cast<unsigned>(std::atol(seed)) : 12345u);
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int runs = 0, accepted = 0;
  while (std::chrono::steady_clock::now() < end && (long_run || runs < 200000)) {
    ++runs;
    try {
      accepted += one(rng);
    } catch (const Error&) {
      // rejected with a typed error: fine
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": untyped exception: " << e.what();
      return;
    }
  }
  EXPECT_GT(runs, 100) << what;
  std::printf("[ fuzz ] %s: %d inputs, %d accepted\n", what, runs, accepted);
}

TEST(PirFuzz, TextParserNeverCrashes) {
  const std::string text = testing::kitchen_sink(ctx())->str();
  fuzz("text", 1.5, [&](std::mt19937& rng) {
    std::string m = mutate(text, rng, true);
    auto p = parse_program(ctx(), m);
    // anything accepted must round-trip
    std::string printed = p->str();
    EXPECT_EQ(parse_program(ctx(), printed)->str(), printed);
    return 1;
  });
}

TEST(PirFuzz, DeserializerNeverCrashes) {
  const std::string bytes = serialize_program(*testing::kitchen_sink(ctx()));
  fuzz("binary (raw)", 0.5, [&](std::mt19937& rng) {
    deserialize_program(ctx(), mutate(bytes, rng, false));
    return 1;
  });
  fuzz("binary (resealed payload)", 1.5, [&](std::mt19937& rng) {
    std::string m = mutate(bytes, rng, false);
    if (m.size() >= kPirHeaderSize) std::memcpy(&m[0], bytes.data(), 12);  // keep magic and version
    auto p = deserialize_program(ctx(), reseal(m));
    EXPECT_EQ(deserialize_program(ctx(), serialize_program(*p))->str(), p->str());
    return 1;
  });
}

}  // namespace
}  // namespace oar::pir
