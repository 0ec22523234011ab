// Status and Result<T>: rdmq's one error model.
//
// A Status is an std::error_code plus an optional context string ("segment 00000000000000000100:
// position 4096"). An OK Status holds no context and costs one branch to test. Every module
// defines its own error category (storage, fabric, rpc, ...) whose codes map onto the generic
// conditions in rdmq::Errc, so callers can ask `status.is(Errc::kCorruption)` without knowing
// which module produced the error, or compare against the module's exact code.
//
// No exceptions are thrown on the data path; functions that can fail return Status or Result<T>.
// Both are [[nodiscard]].
//
// Thread safety: Status and Result are values; distinct objects may be used from distinct threads.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace rdmq {

// Generic error conditions shared by every module. Module-specific codes map onto these.
enum class Errc {
  kOk = 0,
  kInvalidArgument = 1,  // the caller passed something malformed or out of its domain
  kNotFound,             // a named thing (topic, segment, key) does not exist
  kAlreadyExists,
  kOutOfRange,  // an offset/position/address outside what exists
  kCorruption,  // stored or received bytes fail validation (CRC, magic, bounds)
  kIoError,     // the operating system refused an I/O operation
  kNoSpace,     // device or file full
  kTimeout,
  kUnavailable,         // peer gone, connection closed, service shutting down
  kPermissionDenied,    // wrong key, missing access right
  kResourceExhausted,   // credits, queue slots, memory
  kFailedPrecondition,  // the object is not in a state that allows the operation
  kAborted,
  kCancelled,
  kUnsupported,  // feature not available on this provider/platform
  kInternal,
};

const std::error_category& generic_category() noexcept;
std::error_condition make_error_condition(Errc e) noexcept;
std::error_code make_error_code(Errc e) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(std::error_code code) noexcept : code_(code) {}  // NOLINT(google-explicit-constructor)
  Status(std::error_code code, std::string context);
  template <class E, std::enable_if_t<std::is_error_code_enum_v<E>, int> = 0>
  Status(E e) noexcept : code_(make_error_code(e)) {}  // NOLINT(google-explicit-constructor)
  template <class E, std::enable_if_t<std::is_error_code_enum_v<E>, int> = 0>
  Status(E e, std::string context) : Status(make_error_code(e), std::move(context)) {}

  // A generic error (module code unknown or irrelevant).
  Status(Errc e) noexcept : code_(make_error_code(e)) {}  // NOLINT(google-explicit-constructor)
  Status(Errc e, std::string context) : Status(make_error_code(e), std::move(context)) {}

  static Status Ok() noexcept { return Status(); }
  // An error from the C library's errno, with context ("open /data/x.seg").
  static Status FromErrno(int err, std::string context);

  bool ok() const noexcept { return !code_; }
  const std::error_code& code() const noexcept { return code_; }
  // The context given where the error was raised, or "" if none.
  std::string_view context() const noexcept {
    return context_ ? std::string_view(*context_) : std::string_view();
  }
  // "<context>: <message of the code> [<category>:<value>]", or "OK".
  std::string ToString() const;

  // True if this status is the given module code, or maps onto the given generic condition.
  template <class E>
  bool is(E e) const noexcept {
    if constexpr (std::is_error_condition_enum_v<E>) {
      return code_ == make_error_condition(e);
    } else {
      return code_ == make_error_code(e);
    }
  }

  // Returns a copy with more context prepended: "<outer>: <inner context>".
  Status WithContext(std::string_view outer) const;

 private:
  std::error_code code_;
  std::shared_ptr<const std::string> context_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Result<T>: a T or a non-OK Status.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "Result<Status> makes no sense");

 public:
  Result(const T& v) : v_(v) {}  // NOLINT(google-explicit-constructor)
  Result(T&& v) noexcept(std::is_nothrow_move_constructible_v<T>) : v_(std::move(v)) {}  // NOLINT
  Result(Status s) : v_(std::move(s)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
  }
  template <class E, std::enable_if_t<std::is_error_code_enum_v<E>, int> = 0>
  Result(E e) : Result(Status(e)) {}     // NOLINT(google-explicit-constructor)
  Result(Errc e) : Result(Status(e)) {}  // NOLINT(google-explicit-constructor)
  template <class U, std::enable_if_t<std::is_convertible_v<U, T> && !std::is_same_v<std::decay_t<U>, T> &&
                                          !std::is_same_v<std::decay_t<U>, Status> &&
                                          !std::is_error_code_enum_v<std::decay_t<U>> &&
                                          !std::is_same_v<std::decay_t<U>, Errc>,
                                      int> = 0>
  Result(U&& u) : v_(T(std::forward<U>(u))) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return v_.index() == 0; }
  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : T(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rdmq

namespace std {
template <>
struct is_error_condition_enum<rdmq::Errc> : true_type {};
}  // namespace std

// Propagate a non-OK Status (or the Status of a failed Result) from an expression.
#define RDMQ_RETURN_IF_ERROR(expr)                        \
  do {                                                    \
    auto rdmq_status_ = ::rdmq::internal::AsStatus(expr); \
    if (!rdmq_status_.ok()) return rdmq_status_;          \
  } while (0)

#define RDMQ_CONCAT_INNER_(a, b) a##b
#define RDMQ_CONCAT_(a, b) RDMQ_CONCAT_INNER_(a, b)
// RDMQ_ASSIGN_OR_RETURN(auto x, Compute()); declares/assigns x or returns the error.
#define RDMQ_ASSIGN_OR_RETURN(lhs, expr) \
  RDMQ_ASSIGN_OR_RETURN_IMPL_(RDMQ_CONCAT_(rdmq_result_, __LINE__), lhs, expr)
#define RDMQ_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

namespace rdmq::internal {
inline Status AsStatus(Status s) { return s; }
template <class T>
Status AsStatus(const Result<T>& r) {
  return r.status();
}
}  // namespace rdmq::internal
