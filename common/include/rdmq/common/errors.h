// Per-module error categories in one line each.
//
//   #define RDMQ_STORAGE_ERRORS(X)
//     X(kBadMagic,   kCorruption,   "segment header has a bad magic")
//     X(kTornBatch,  kCorruption,   "record batch is torn")
//   (each X(...) line but the last ending in a backslash)
//   RDMQ_DEFINE_ERRORS(rdmq::storage, StorageErrc, "storage", RDMQ_STORAGE_ERRORS)
//
// defines `enum class rdmq::storage::StorageErrc { kBadMagic = 1, ... }`, a category named
// "storage" whose messages are the strings given, whose codes map onto the generic rdmq::Errc
// conditions given in the second column, and make_error_code() so the enum converts to
// std::error_code and to rdmq::Status. Must be used at global namespace scope.
#pragma once

#include <iterator>
#include <string>
#include <system_error>

#include "rdmq/common/status.h"

namespace rdmq {

template <class Enum>
struct ErrorTraits;  // specialised by RDMQ_DEFINE_ERRORS

template <class Enum>
class ModuleErrorCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return ErrorTraits<Enum>::kName; }
  std::string message(int ev) const override { return ErrorTraits<Enum>::Message(ev); }
  std::error_condition default_error_condition(int ev) const noexcept override {
    return make_error_condition(ErrorTraits<Enum>::Condition(ev));
  }
};

template <class Enum>
const std::error_category& module_error_category() noexcept {
  static const ModuleErrorCategory<Enum> category;
  return category;
}

}  // namespace rdmq

#define RDMQ_ERRORS_ENUM_(name, cond, msg) name,
#define RDMQ_ERRORS_MSG_(name, cond, msg) \
  case static_cast<int>(E::name):         \
    return msg;
#define RDMQ_ERRORS_COND_(name, cond, msg) ::rdmq::Errc::cond,

#define RDMQ_DEFINE_ERRORS(ns, Enum, category_name, LIST)                                               \
  namespace ns {                                                                                        \
  enum class Enum { kOk_ = 0, LIST(RDMQ_ERRORS_ENUM_) };                                                \
  inline std::error_code make_error_code(Enum e) noexcept {                                             \
    return {static_cast<int>(e), ::rdmq::module_error_category<Enum>()};                                \
  }                                                                                                     \
  }                                                                                                     \
  template <>                                                                                           \
  struct std::is_error_code_enum<ns::Enum> : std::true_type {};                                         \
  template <>                                                                                           \
  struct rdmq::ErrorTraits<ns::Enum> {                                                                  \
    using E = ns::Enum;                                                                                 \
    static constexpr const char* kName = category_name;                                                 \
    static std::string Message(int ev) {                                                                \
      switch (ev) {                                                                                     \
        LIST(RDMQ_ERRORS_MSG_)                                                                          \
        default:                                                                                        \
          return std::string(category_name) + " error " + std::to_string(ev);                           \
      }                                                                                                 \
    }                                                                                                   \
    static ::rdmq::Errc Condition(int ev) noexcept {                                                    \
      /* index 0 is kOk_, which no error carries */                                                     \
      static constexpr ::rdmq::Errc kConditions[] = {::rdmq::Errc::kInternal, LIST(RDMQ_ERRORS_COND_)}; \
      constexpr int kCount = static_cast<int>(std::size(kConditions));                                  \
      return ev > 0 && ev < kCount ? kConditions[ev] : ::rdmq::Errc::kInternal;                         \
    }                                                                                                   \
  };
