#include "rdmq/cli/records.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "rdmq/cli/output.h"

namespace rdmq::cli {

Result<RecordFormatter> RecordFormatter::Compile(std::string_view format) {
  RecordFormatter f;
  std::string literal_src;
  auto flush_literal = [&]() -> Status {
    if (literal_src.empty()) return Status::Ok();
    auto text = Unescape(literal_src, "format");
    if (!text.ok()) return text.status();
    f.pieces_.push_back(Piece{0, std::move(*text)});
    literal_src.clear();
    return Status::Ok();
  };
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '\\' && i + 1 < format.size()) {  // keep escapes together for Unescape
      literal_src.push_back(c);
      literal_src.push_back(format[++i]);
      continue;
    }
    if (c != '%') {
      literal_src.push_back(c);
      continue;
    }
    if (i + 1 >= format.size()) {
      return UsageError("format: '" + std::string(format) + "' ends in a lone '%' (use %% for a '%')");
    }
    const char d = format[++i];
    if (d == '%') {
      literal_src.push_back('%');
      continue;
    }
    static constexpr std::string_view kDirectives = "kKsvStpoTh";
    if (kDirectives.find(d) == std::string_view::npos) {
      return UsageError("format: unknown directive '%" + std::string(1, d) + "' in '" + std::string(format) +
                        "' (known: %k %K %s %v %S %t %p %o %T %h %%)");
    }
    RDMQ_RETURN_IF_ERROR(flush_literal());
    f.pieces_.push_back(Piece{d == 'v' ? 's' : d, {}});
  }
  RDMQ_RETURN_IF_ERROR(flush_literal());
  return f;
}

void RecordFormatter::Append(const RecordFields& r, std::string* out) const {
  for (const Piece& p : pieces_) {
    switch (p.directive) {
      case 0:
        *out += p.literal;
        break;
      case 'k':
        if (r.key) out->append(*r.key);
        break;
      case 'K':
        *out += r.key ? std::to_string(r.key->size()) : "-1";
        break;
      case 's':
        if (r.value) out->append(*r.value);
        break;
      case 'S':
        *out += r.value ? std::to_string(r.value->size()) : "-1";
        break;
      case 't':
        out->append(r.topic);
        break;
      case 'p':
        *out += std::to_string(r.partition);
        break;
      case 'o':
        *out += std::to_string(r.offset);
        break;
      case 'T':
        *out += std::to_string(r.timestamp_ms);
        break;
      case 'h': {
        bool first = true;
        for (const auto& [k, v] : r.headers) {
          if (!first) out->push_back(',');
          first = false;
          out->append(k);
          if (v) {
            out->push_back('=');
            out->append(*v);
          }
        }
        break;
      }
      default:
        break;
    }
  }
}

std::string RecordToJson(const RecordFields& r) {
  using nlohmann::ordered_json;
  auto str = [](std::optional<std::string_view> s) -> ordered_json {
    if (!s) return nullptr;
    return SanitizeUtf8(*s);
  };
  ordered_json j;
  j["topic"] = SanitizeUtf8(r.topic);
  j["partition"] = r.partition;
  j["offset"] = r.offset;
  j["timestamp_ms"] = r.timestamp_ms;
  j["key"] = str(r.key);
  j["value"] = str(r.value);
  ordered_json headers = ordered_json::array();
  for (const auto& [k, v] : r.headers) {
    ordered_json h;
    h["key"] = SanitizeUtf8(k);
    h["value"] = str(v);
    headers.push_back(std::move(h));
  }
  j["headers"] = std::move(headers);
  return j.dump();
}

Result<LineRecord> SplitLine(std::string_view line, std::string_view key_delimiter) {
  LineRecord out;
  if (key_delimiter.empty()) {
    out.value = line;
    return out;
  }
  const size_t at = line.find(key_delimiter);
  if (at == std::string_view::npos) {
    return UsageError("no key delimiter '" + Printable(key_delimiter) + "' in the line");
  }
  out.key = line.substr(0, at);
  out.value = line.substr(at + key_delimiter.size());
  return out;
}

DelimitedReader::DelimitedReader(int fd, std::string delimiter, size_t max_record_bytes)
    : fd_(fd), delim_(std::move(delimiter)), max_(max_record_bytes) {
  if (delim_.empty()) delim_ = "\n";
}

Result<bool> DelimitedReader::Next(std::string_view* out) {
  constexpr size_t kChunk = 1 << 20;
  while (true) {
    const size_t at = buf_.find(delim_, scan_);
    const size_t pending = (at != std::string::npos ? at : buf_.size()) - start_;
    if (pending > max_) {
      return UsageError("record " + std::to_string(number_ + 1) + " is longer than " + std::to_string(max_) +
                        " bytes (no delimiter within that length)");
    }
    if (at != std::string::npos) {
      *out = std::string_view(buf_).substr(start_, at - start_);
      start_ = scan_ = at + delim_.size();
      ++number_;
      return true;
    }
    if (eof_) {
      if (start_ >= buf_.size()) return false;
      *out = std::string_view(buf_).substr(start_);
      start_ = scan_ = buf_.size();
      ++number_;
      return true;
    }
    // Drop what was consumed, keep the partial record, read more.
    buf_.erase(0, start_);
    scan_ = buf_.size() >= delim_.size() ? buf_.size() - delim_.size() + 1 : 0;
    start_ = 0;
    const size_t old = buf_.size();
    buf_.resize(old + kChunk);
    const ssize_t n = ::read(fd_, buf_.data() + old, kChunk);
    if (n < 0) {
      const int err = errno;
      buf_.resize(old);
      if (err == EINTR) return Status(Errc::kCancelled, "interrupted while reading the input");
      return Status::FromErrno(err, "read the input");
    }
    buf_.resize(old + static_cast<size_t>(n));
    if (n == 0) eof_ = true;
  }
}

Result<OffsetSpec> ParseOffsetSpec(std::string_view text) {
  OffsetSpec s;
  if (text == "beginning" || text == "earliest") {
    s.kind = OffsetSpec::Kind::kBeginning;
    return s;
  }
  if (text == "end" || text == "latest") {
    s.kind = OffsetSpec::Kind::kEnd;
    return s;
  }
  const auto why = [&] {
    return "-o: '" + std::string(text) +
           "' is not beginning, end, an offset N, -N (N before the end) or @MS / s@MS";
  };
  if (text.starts_with("s@") || text.starts_with("@")) {
    const std::string_view num = text.substr(text.find('@') + 1);
    auto v = ParseInt(num, "-o timestamp", 0, INT64_MAX);
    if (!v.ok()) return UsageError(why());
    s.kind = OffsetSpec::Kind::kTimestamp;
    s.value = *v;
    return s;
  }
  if (text.starts_with("-")) {
    auto v = ParseInt(text.substr(1), "-o", 1, INT64_MAX);
    if (!v.ok()) return UsageError(why());
    s.kind = OffsetSpec::Kind::kFromEnd;
    s.value = *v;
    return s;
  }
  auto v = ParseInt(text, "-o", 0, INT64_MAX);
  if (!v.ok()) return UsageError(why());
  s.kind = OffsetSpec::Kind::kAbsolute;
  s.value = *v;
  return s;
}

int64_t ResolveStartOffset(const OffsetSpec& spec, int64_t log_start, int64_t high_watermark) {
  int64_t want = high_watermark;
  switch (spec.kind) {
    case OffsetSpec::Kind::kBeginning:
      want = log_start;
      break;
    case OffsetSpec::Kind::kEnd:
      want = high_watermark;
      break;
    case OffsetSpec::Kind::kAbsolute:
      want = spec.value;
      break;
    case OffsetSpec::Kind::kFromEnd:
      want = spec.value >= high_watermark ? log_start : high_watermark - spec.value;
      break;
    case OffsetSpec::Kind::kTimestamp:
      want = log_start;
      break;
  }
  return std::clamp(want, log_start, std::max(log_start, high_watermark));
}

}  // namespace rdmq::cli
