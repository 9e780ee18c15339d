// Typed errors raised by every layer of Oar. The Python binding maps each kind to
// a Python exception class (see python/csrc/errors_py.cc), so a bad input never
// aborts the process: it reaches the user as ValueError, IndexError, TypeError...
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oar {

enum class ErrorKind {
  kInvalidArgument,     // -> ValueError
  kInvalidType,         // -> TypeError (wrong dtype or argument type)
  kOutOfRange,          // -> IndexError
  kUnimplemented,       // -> NotImplementedError
  kNotFound,            // -> RuntimeError (missing kernel, key, file)
  kPreconditionNotMet,  // -> RuntimeError (state is wrong for the call)
  kResourceExhausted,   // -> MemoryError
  kAlreadyExists,       // -> RuntimeError
  kInternal,            // -> RuntimeError (a bug in Oar)
};

const char* error_kind_name(ErrorKind kind);

/// The one exception type Oar throws; `what()` is "<Kind>: <message>".
/// Messages start with a context tag, "<op>: <detail>" (see with_op).
class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message);
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const char* what() const noexcept override { return what_.c_str(); }
  /// The op the error was attributed to by with_op ("" when none was).
  const std::string& op() const { return op_; }

  /// Attributes the error to the op `op` the user called, so the message names it.
  /// The first call replaces the message's context tag: shared helpers tag their
  /// messages generically ("elementwise op: shapes ... cannot be broadcast",
  /// "reduce: axis ..."), and "add: shapes ..." is what the user should read. A later
  /// call (an op that called the failing op) prefixes its name: "outer: inner: ...".
  /// Generated op functions call it on every Error that leaves them; it costs nothing
  /// unless something throws. See Note [Error messages name the op] in errors.cc.
  Error& with_op(std::string_view op);

 private:
  void set_message(std::string message);

  ErrorKind kind_;
  std::string message_;
  std::string what_;
  std::string op_;
};

namespace detail {
template <typename T>
void put(std::ostream& os, const T& v) {
  os << v;
}
template <typename T>
void put(std::ostream& os, const std::vector<T>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) os << ", ";
    put(os, v[i]);
  }
  os << ']';
}
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (put(os, args), ...);
  return os.str();
}
}  // namespace detail

}  // namespace oar

/// Throws oar::Error of `kind` (an ErrorKind name without the k, e.g. InvalidArgument)
/// with the streamed arguments as message: OAR_THROW(OutOfRange, "gather: index ", i, ...).
#define OAR_THROW(kind, ...) \
  throw ::oar::Error(::oar::ErrorKind::k##kind, ::oar::detail::str_cat(__VA_ARGS__))

/// Throws like OAR_THROW when `cond` is false.
#define OAR_ENFORCE(cond, kind, ...)     \
  do {                                   \
    if (__builtin_expect(!(cond), 0)) {  \
      OAR_THROW(kind, __VA_ARGS__);      \
    }                                    \
  } while (0)
