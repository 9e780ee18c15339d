// Versioned binary serialization of programs (the saved-model format; layout in
// Note [PIR binary format], docs/notes/pir.md). A 24-byte header (magic, version,
// payload length, CRC-32 of the payload) guards the payload; the reader rejects an
// unknown version, a bad magic, a length or checksum mismatch, and any malformed
// payload with InvalidArgument naming the byte offset; it never crashes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "pir/ir/ir_context.h"

namespace oar::pir {

class Program;

/// The format version this build writes; it reads every version from 1 (version 2
/// added the kind tables: Note [Attribute and type kinds]).
constexpr uint32_t kPirFormatVersion = 2;
constexpr size_t kPirHeaderSize = 24;

/// The program's bytes; without parameter data, parameters are written by name only
/// (the saved-model layout keeps their data in a separate file).
std::string serialize_program(const Program& p, bool with_parameter_data = true);
/// Parses bytes written by serialize_program; verifies the program unless told not to.
std::unique_ptr<Program> deserialize_program(IrContext* ctx, std::string_view bytes, bool verify = true);

void save_program(const Program& p, const std::string& path);
std::unique_ptr<Program> load_program(IrContext* ctx, const std::string& path);

/// A whole file's bytes, read with one read of its size (a stringstream grew its buffer by
/// doubling, then copied it out). Throws NotFound "<who>: cannot open '<path>'".
std::string read_file(const std::string& path, const char* who);

/// CRC-32 (IEEE) of `data`; pass the CRC of the bytes before `data` to continue it
/// (zlib.crc32(data, crc)).
uint32_t crc32(std::string_view data, uint32_t crc = 0);

}  // namespace oar::pir
