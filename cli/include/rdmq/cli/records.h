// Records in shell pipelines: what `rdmq-produce` makes of an input line and what
// `rdmq-consume` prints for a record (kcat-style format strings, or one JSON object per line).
//
// Format string directives (kcat's letters):
//   %k key          %K key length (-1 for a null key)
//   %s value        %v value (alias of %s)      %S value length (-1 for a null value)
//   %t topic        %p partition                %o offset
//   %T timestamp (ms since the epoch)           %h headers as k1=v1,k2=v2 (a null value: k1)
//   %%  a '%'       \n \t \r \\ \0 \xHH escapes, as in delimiters
// A null key or value prints as nothing (like kcat's default).
//
// Threading: plain values. Errors: CliErrc::kUsage for a bad format string, offset spec, header
// or line (the context says which and why).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/cli/args.h"
#include "rdmq/common/status.h"

namespace rdmq::cli {

// A consumed record as the printers see it (views; valid while the caller keeps the bytes).
struct RecordFields {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp_ms = 0;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
};

class RecordFormatter {
 public:
  // Compiles a kcat-style format string. kUsage for an unknown directive or a trailing '%'.
  static Result<RecordFormatter> Compile(std::string_view format);
  // Appends the rendering of `r` to `out`.
  void Append(const RecordFields& r, std::string* out) const;

 private:
  struct Piece {
    char directive = 0;  // 0: literal text
    std::string literal;
  };
  std::vector<Piece> pieces_;
};

// One JSON object (no newline) with stable field names:
//   {"topic":"t","partition":0,"offset":5,"timestamp_ms":1700000000000,"key":"k"|null,
//    "value":"v"|null,"headers":[{"key":"h","value":"x"|null}]}
// Keys and values are JSON strings; bytes that are not valid UTF-8 become U+FFFD.
std::string RecordToJson(const RecordFields& r);

// An input line split into key and value. With an empty `key_delimiter` the whole line is the
// value and the key is null. Otherwise the key is everything before the first delimiter and the
// value everything after it; kUsage when the line has no delimiter.
struct LineRecord {
  std::optional<std::string_view> key;
  std::string_view value;
};
Result<LineRecord> SplitLine(std::string_view line, std::string_view key_delimiter);

// Splits a byte stream (a file descriptor: stdin, a pipe, a file) into records at a delimiter
// ("\n" by default; any non-empty byte string). The last record may lack its delimiter. Reads
// with read(2) in large chunks; an interrupted read (EINTR) returns kCancelled so a signal can
// stop a tool blocked on its input. Not thread-safe.
class DelimitedReader {
 public:
  DelimitedReader(int fd, std::string delimiter, size_t max_record_bytes = 64u << 20);
  // Sets *out to the next record (without its delimiter; valid until the next call) and
  // returns true, or returns false at the end of the input. Errors: kIoError from read(2),
  // kCancelled on EINTR, kUsage when a record exceeds max_record_bytes (the context says which
  // record number).
  Result<bool> Next(std::string_view* out);
  // 1-based number of the record last returned.
  uint64_t record_number() const { return number_; }

 private:
  int fd_;
  std::string delim_;
  size_t max_;
  std::string buf_;
  size_t start_ = 0;  // first unconsumed byte in buf_
  size_t scan_ = 0;   // where the delimiter search resumes
  bool eof_ = false;
  uint64_t number_ = 0;
};

// Where a consumer starts (`-o`): beginning, end, an absolute offset N, N records before the end
// (-N), or the first record at or after a timestamp (@MS or s@MS, milliseconds since the epoch).
struct OffsetSpec {
  enum class Kind { kBeginning, kEnd, kAbsolute, kFromEnd, kTimestamp };
  Kind kind = Kind::kEnd;
  int64_t value = 0;  // the offset, the count before the end, or the timestamp
};
Result<OffsetSpec> ParseOffsetSpec(std::string_view text);
// The start offset for a partition holding [log_start, high_watermark) for every kind but
// kTimestamp, clamped into that range.
int64_t ResolveStartOffset(const OffsetSpec& spec, int64_t log_start, int64_t high_watermark);

}  // namespace rdmq::cli
