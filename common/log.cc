#include "rdmq/common/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace rdmq::log {
namespace {

std::atomic<int> g_level{-1};  // -1: not yet read from the environment
std::atomic<int> g_format{-1};
std::mutex g_sink_mu;
std::function<void(std::string_view)>* g_sink = nullptr;  // guarded by g_sink_mu

void InitFromEnv() {
  int expected = -1;
  Level level = Level::kInfo;
  if (const char* e = std::getenv("RDMQ_LOG_LEVEL")) ParseLevel(e, &level);
  g_level.compare_exchange_strong(expected, static_cast<int>(level));
  expected = -1;
  int format = static_cast<int>(Format::kText);
  if (const char* e = std::getenv("RDMQ_LOG_FORMAT"); e && std::strcmp(e, "json") == 0) {
    format = static_cast<int>(Format::kJson);
  }
  g_format.compare_exchange_strong(expected, format);
}

const char* LevelName(Level l) {
  switch (l) {
    case Level::kTrace:
      return "trace";
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out->append(b);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// Text values are bare unless they contain spaces, quotes or '=', then quoted like logfmt.
void AppendTextValue(std::string* out, std::string_view s) {
  bool quote = s.empty();
  for (char c : s) {
    if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) quote = true;
  }
  if (quote) {
    AppendJsonString(out, s);
  } else {
    out->append(s);
  }
}

void Emit(std::string_view line) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  if (g_sink != nullptr) {
    (*g_sink)(line);
    return;
  }
  const char* p = line.data();
  size_t n = line.size();
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w <= 0) break;  // nowhere else to report a failing stderr
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

void SetLevel(Level level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
Level GetLevel() {
  if (g_level.load(std::memory_order_relaxed) < 0) InitFromEnv();
  return static_cast<Level>(g_level.load(std::memory_order_relaxed));
}
void SetFormat(Format format) { g_format.store(static_cast<int>(format), std::memory_order_relaxed); }
void SetSink(std::function<void(std::string_view)> sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  delete g_sink;
  g_sink = sink ? new std::function<void(std::string_view)>(std::move(sink)) : nullptr;
}
bool Enabled(Level level) {
  int cur = g_level.load(std::memory_order_relaxed);
  if (cur < 0) {
    InitFromEnv();
    cur = g_level.load(std::memory_order_relaxed);
  }
  return static_cast<int>(level) >= cur && level != Level::kOff;
}
bool ParseLevel(std::string_view name, Level* out) {
  for (int i = 0; i <= static_cast<int>(Level::kOff); ++i) {
    if (name == LevelName(static_cast<Level>(i))) {
      *out = static_cast<Level>(i);
      return true;
    }
  }
  if (name == "warning") {
    *out = Level::kWarn;
    return true;
  }
  return false;
}

Line::Line(Level level, std::string_view module, std::string_view message) {
  if (g_format.load(std::memory_order_relaxed) < 0) InitFromEnv();
  json_ = g_format.load(std::memory_order_relaxed) == static_cast<int>(Format::kJson);
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  char when[96];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", t.tm_year + 1900, t.tm_mon + 1,
                t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000);
  buf_.reserve(160);
  if (json_) {
    buf_ += "{\"ts\":\"";
    buf_ += when;
    buf_ += "\",\"level\":\"";
    buf_ += LevelName(level);
    buf_ += "\",\"module\":";
    AppendJsonString(&buf_, module);
    buf_ += ",\"msg\":";
    AppendJsonString(&buf_, message);
  } else {
    buf_ += when;
    buf_ += ' ';
    for (const char* p = LevelName(level); *p; ++p) buf_ += static_cast<char>(*p - 'a' + 'A');
    buf_ += ' ';
    buf_ += module;
    buf_ += ": ";
    buf_ += message;
  }
}

Line::~Line() {
  buf_ += json_ ? "}\n" : "\n";
  Emit(buf_);
}

Line& Line::Raw(std::string_view key, std::string_view rendered) {
  if (json_) {
    buf_ += ',';
    AppendJsonString(&buf_, key);
    buf_ += ':';
  } else {
    buf_ += ' ';
    buf_ += key;
    buf_ += '=';
  }
  buf_ += rendered;
  return *this;
}

Line& Line::kv(std::string_view key, std::string_view value) {
  std::string v;
  if (json_) {
    AppendJsonString(&v, value);
  } else {
    AppendTextValue(&v, value);
  }
  return Raw(key, v);
}
Line& Line::kv(std::string_view key, bool value) { return Raw(key, value ? "true" : "false"); }
Line& Line::kv(std::string_view key, double value) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", value);
  return Raw(key, b);
}
Line& Line::kv(std::string_view key, const Status& status) { return kv(key, status.ToString()); }
Line& Line::Int(std::string_view key, int64_t v) { return Raw(key, std::to_string(v)); }
Line& Line::UInt(std::string_view key, uint64_t v) { return Raw(key, std::to_string(v)); }

}  // namespace rdmq::log
