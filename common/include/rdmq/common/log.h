// Structured logging: one line per event, key=value fields (text) or one JSON object (json).
//
//   RDMQ_LOG(kInfo, "storage", "segment rolled").kv("topic", name).kv("base", base);
//   2026-11-21T10:00:00.123456Z INFO storage: segment rolled topic=orders base=100
//
// The level and format come from RDMQ_LOG_LEVEL (trace|debug|info|warn|error|off, default info)
// and RDMQ_LOG_FORMAT (text|json, default text) at first use, or from SetLevel/SetFormat.
// A disabled level costs one relaxed atomic load; arguments are not evaluated.
// Thread safety: every function may be called from any thread; each line is written with one
// write(2), so lines from different threads or processes never interleave.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"

namespace rdmq::log {

enum class Level : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };
enum class Format { kText, kJson };

void SetLevel(Level level);
Level GetLevel();
void SetFormat(Format format);
// Replaces the sink (default: stderr). The sink receives complete lines ending in '\n'.
// Pass nullptr to restore stderr.
void SetSink(std::function<void(std::string_view)> sink);
bool Enabled(Level level);
// Parses "info", "debug", ...; false when the name is unknown.
bool ParseLevel(std::string_view name, Level* out);

class Line {
 public:
  Line(Level level, std::string_view module, std::string_view message);
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  Line& kv(std::string_view key, std::string_view value);
  Line& kv(std::string_view key, const char* value) { return kv(key, std::string_view(value)); }
  Line& kv(std::string_view key, const std::string& value) { return kv(key, std::string_view(value)); }
  Line& kv(std::string_view key, bool value);
  Line& kv(std::string_view key, double value);
  Line& kv(std::string_view key, const Status& status);
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Line& kv(std::string_view key, T value) {
    if constexpr (std::is_signed_v<T>) {
      return Int(key, static_cast<int64_t>(value));
    } else {
      return UInt(key, static_cast<uint64_t>(value));
    }
  }
  template <class Tag, class Rep>
  Line& kv(std::string_view key, StrongInt<Tag, Rep> v) {
    return kv(key, v.value());
  }

 private:
  Line& Int(std::string_view key, int64_t v);
  Line& UInt(std::string_view key, uint64_t v);
  Line& Raw(std::string_view key, std::string_view rendered);
  std::string buf_;
  bool json_;
};

}  // namespace rdmq::log

// A one-iteration loop rather than if/else, so `if (x) RDMQ_LOG(...).kv(...);` has no dangling else.
#define RDMQ_LOG(level, module, message)                                                  \
  for (bool rdmq_log_on_ = ::rdmq::log::Enabled(::rdmq::log::Level::level); rdmq_log_on_; \
       rdmq_log_on_ = false)                                                              \
  ::rdmq::log::Line(::rdmq::log::Level::level, (module), (message))
