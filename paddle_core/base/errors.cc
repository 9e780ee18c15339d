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

Error::Error(ErrorKind kind, std::string message)
    : kind_(kind), message_(std::move(message)) {
  what_ = std::string(error_kind_name(kind_)) + ": " + message_;
}

}  // namespace oar
