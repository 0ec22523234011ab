#include "rdmq/common/status.h"

#include <cerrno>
#include <cstring>

namespace rdmq {
namespace {

class GenericCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "rdmq"; }
  std::string message(int ev) const override {
    switch (static_cast<Errc>(ev)) {
      case Errc::kOk:
        return "ok";
      case Errc::kInvalidArgument:
        return "invalid argument";
      case Errc::kNotFound:
        return "not found";
      case Errc::kAlreadyExists:
        return "already exists";
      case Errc::kOutOfRange:
        return "out of range";
      case Errc::kCorruption:
        return "corruption";
      case Errc::kIoError:
        return "I/O error";
      case Errc::kNoSpace:
        return "no space left";
      case Errc::kTimeout:
        return "timed out";
      case Errc::kUnavailable:
        return "unavailable";
      case Errc::kPermissionDenied:
        return "permission denied";
      case Errc::kResourceExhausted:
        return "resource exhausted";
      case Errc::kFailedPrecondition:
        return "failed precondition";
      case Errc::kAborted:
        return "aborted";
      case Errc::kCancelled:
        return "cancelled";
      case Errc::kUnsupported:
        return "unsupported";
      case Errc::kInternal:
        return "internal error";
    }
    return "unknown rdmq error " + std::to_string(ev);
  }
  // errno values from the system category map onto our generic conditions too.
  bool equivalent(const std::error_code& code, int condition) const noexcept override {
    if (code.category() == *this) return code.value() == condition;
    if (code.category() == std::system_category() || code.category() == std::generic_category()) {
      return static_cast<int>(FromErrno(code.value())) == condition;
    }
    return false;
  }

  static Errc FromErrno(int e) noexcept {
    switch (e) {
      case ENOENT:
        return Errc::kNotFound;
      case EEXIST:
        return Errc::kAlreadyExists;
      case EINVAL:
        return Errc::kInvalidArgument;
      case ENOSPC:
      case EDQUOT:
      case EFBIG:
        return Errc::kNoSpace;
      case EACCES:
      case EPERM:
      case EROFS:
        return Errc::kPermissionDenied;
      case ETIMEDOUT:
        return Errc::kTimeout;
      case ECONNRESET:
      case ECONNREFUSED:
      case EPIPE:
      case ENOTCONN:
      case ECONNABORTED:
        return Errc::kUnavailable;
      case ENOMEM:
      case EAGAIN:
      case EMFILE:
      case ENFILE:
        return Errc::kResourceExhausted;
      case ECANCELED:
        return Errc::kCancelled;
      case ENOTSUP:
      case ENOSYS:
        return Errc::kUnsupported;
      default:
        return Errc::kIoError;
    }
  }
};

}  // namespace

const std::error_category& generic_category() noexcept {
  static const GenericCategory category;
  return category;
}
std::error_condition make_error_condition(Errc e) noexcept {
  return {static_cast<int>(e), generic_category()};
}
std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), generic_category()}; }

Status::Status(std::error_code code, std::string context) : code_(code) {
  if (code_ && !context.empty()) context_ = std::make_shared<const std::string>(std::move(context));
}

Status Status::FromErrno(int err, std::string context) {
  return Status(std::error_code(err, std::system_category()), std::move(context));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out;
  if (context_) {
    out += *context_;
    out += ": ";
  }
  out += code_.message();
  out += " [";
  out += code_.category().name();
  out += ":";
  out += std::to_string(code_.value());
  out += "]";
  return out;
}

Status Status::WithContext(std::string_view outer) const {
  if (ok()) return *this;
  std::string ctx(outer);
  if (context_) {
    ctx += ": ";
    ctx += *context_;
  }
  return Status(code_, std::move(ctx));
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

}  // namespace rdmq
