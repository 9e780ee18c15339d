// Open attribute and type kinds (Note [Attribute and type kinds], docs/notes/pir.md).
// A kind is registered into an IrContext by its dialect with a name and hooks; the
// printer, parser and binary format dispatch to the hooks by the kind's id or name
// and know no kind themselves. The builtin kinds (int, string, tensor, vec, ...) are
// registered the same way by the builtin dialect, first, so their ids are the
// AttrKind / TypeKind enum values; a dialect's kinds get the ids after them (per
// context, in registration order: an id is never persisted, names are).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pir/ir/attribute.h"
#include "pir/ir/type.h"

namespace oar::pir {

class AsmParser;     // parser.h: what a kind's text hook reads with
class BinaryWriter;  // pir/serialize/binary_io.h: what a kind's binary hooks use
class BinaryReader;

/// An attribute kind: its name and hooks. Every hook but `verify` is required.
struct AttrKindInfo {
  /// Unique in the context: a builtin kind's bare name ("int", "dtype"), or a
  /// dialect's "<dialect>.<kind>" ("dist.placements"), written `#<name>...` in text.
  std::string name;
  /// Builtin literals only (bool, int, float, string, array): the characters their
  /// bare text starts with ("-0123456789" for numbers). Empty: the text is `#<name>...`.
  std::string literal_chars;
  /// Uniquing (hash and equality): appends the value's canonical bytes; two values are
  /// the same attribute exactly when their bytes are equal. Nested attributes and
  /// types may be keyed by their storage pointer (they are uniqued already).
  void (*key)(std::string& out, const detail::AttrStorage& s) = nullptr;
  /// Appends the whole text form ("#test.pair<3, \"x\">").
  void (*print)(std::string& out, Attribute a) = nullptr;
  /// Parses the text after `#<name>` (or, for a literal, from its first character).
  Attribute (*parse)(AsmParser& p, AttrKind self) = nullptr;
  /// Binary form (Note [PIR binary format]): the payload after the kind's index.
  void (*write)(BinaryWriter& w, Attribute a) = nullptr;
  Attribute (*read)(BinaryReader& r, AttrKind self) = nullptr;
  /// Optional: rejects a bad value (throws InvalidArgument naming the kind and the
  /// value) before it is uniqued; runs once per distinct value.
  void (*verify)(const detail::AttrStorage& s) = nullptr;

  AttrKind id{};  // set by IrContext::register_attr_kind
};

/// A type kind: the same hooks for types. Text: builtin types are bare ("f32",
/// "tensor<2xf32>"), a dialect's are `!<name>...` ("!test.tile<4x8, f32>").
struct TypeKindInfo {
  std::string name;
  void (*key)(std::string& out, const detail::TypeStorage& s) = nullptr;
  void (*print)(std::string& out, Type t) = nullptr;
  /// Parses the text after the name (after `!<name>` for a dialect's kind).
  Type (*parse)(AsmParser& p, TypeKind self) = nullptr;
  void (*write)(BinaryWriter& w, Type t) = nullptr;
  Type (*read)(BinaryReader& r, TypeKind self) = nullptr;
  void (*verify)(const detail::TypeStorage& s) = nullptr;

  TypeKind id{};
};

/// Helpers for `key` hooks: fixed-width native bytes (keys never leave the process).
inline void key_i64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void key_f64(std::string& out, double v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void key_ptr(std::string& out, const void* p) { out.append(reinterpret_cast<const char*>(&p), sizeof(p)); }
/// A length-prefixed string, so ("ab", "c") and ("a", "bc") differ.
inline void key_str(std::string& out, std::string_view s) {
  key_i64(out, static_cast<int64_t>(s.size()));
  out.append(s);
}

}  // namespace oar::pir
