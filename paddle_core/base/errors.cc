#include "paddle_core/base/errors.h"

namespace oar {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "InvalidArgument";
    case ErrorKind::kInvalidType: return "InvalidType";
    case ErrorKind::kOutOfRange: return "OutOfRange";
    case ErrorKind::kUnimplemented: return "Unimplemented";
    case ErrorKind::kNotFound: return "NotFound";
    case ErrorKind::kPreconditionNotMet: return "PreconditionNotMet";
    case ErrorKind::kResourceExhausted: return "ResourceExhausted";
    case ErrorKind::kAlreadyExists: return "AlreadyExists";
    case ErrorKind::kInternal: return "Internal";
  }
  return "Unknown";
}

Error::Error(ErrorKind kind, std::string message) : kind_(kind) {
  set_message(std::move(message));
}

void Error::set_message(std::string message) {
  message_ = std::move(message);
  what_ = std::string(error_kind_name(kind_)) + ": " + message_;
}

// Note [Error messages name the op]
// Every message starts with a context tag, "<tag>: <detail>". Code written for one op
// tags with that op's name, but shared code cannot know which op runs it: an
// infer-meta function serving add, subtract... tags "elementwise op", a kernel shared
// by two ops tags with one of them. The generated function of each op catches the
// Error leaving it and calls with_op(<its name>) (then rethrows), so the user reads
// the op they called. The first attribution replaces the tag: the failure happened
// inside this op's own checks or kernel, whatever name the helper gave it. A tag is
// short and made of identifier characters, spaces, '.', '-' (no digits-only, no
// brackets), which tells it apart from a message that has no tag. Later attributions
// come from ops that called the failing op; they keep its name and prefix their own.
namespace {
size_t tag_length(const std::string& m) {
  size_t colon = m.find(": ");
  if (colon == std::string::npos || colon == 0 || colon > 48) return 0;
  for (size_t i = 0; i < colon; ++i) {
    char c = m[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == ' ' || c == '.' || c == '-';
    if (!ok) return 0;
  }
  return colon;
}
}  // namespace

Error& Error::with_op(std::string_view op) {
  if (op.empty()) return *this;
  if (!op_.empty()) {
    if (op_ != op) {
      set_message(std::string(op) + ": " + message_);
      op_ = op;
    }
    return *this;
  }
  op_ = op;
  size_t tag = tag_length(message_);
  if (tag == op.size() && message_.compare(0, tag, op) == 0) return *this;
  std::string detail = tag ? message_.substr(tag + 2) : message_;
  set_message(std::string(op) + ": " + detail);
  return *this;
}

}  // namespace oar
