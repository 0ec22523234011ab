// Output helpers for the rdmq tools: aligned text tables for people, and value formatting shared
// by the text and JSON renderings.
//
//   Table t({"TOPIC", "PARTITIONS"}, {Align::kLeft, Align::kRight});
//   t.AddRow({"orders", "3"});
//   t.Print(std::cout);
//   // TOPIC   PARTITIONS
//   // orders           3
//
// Threading: plain values. Errors: none (formatting cannot fail).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace rdmq::cli {

enum class Align { kLeft, kRight };

class Table {
 public:
  // `align` may be shorter than `headers`: missing columns are left-aligned.
  explicit Table(std::vector<std::string> headers, std::vector<Align> align = {});
  // A row with fewer cells than headers is padded with empty cells; extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  // Header line, then one line per row; columns separated by two spaces, no trailing blanks.
  void Print(std::ostream& os) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

// "2026-11-21T10:00:00.123Z" (UTC) for milliseconds since the epoch; "-" for negative values
// (Kafka's "no timestamp").
std::string FormatTimestampMs(int64_t ms);
// "1.5 MiB", "512 B", ...
std::string FormatBytes(uint64_t bytes);
// Printable rendering of arbitrary bytes for a terminal: printable ASCII as is, '\\' as "\\\\",
// \n \t \r as escapes, other bytes as \xHH; at most `max_chars` input bytes, then "...(N bytes)".
// nullopt renders as "(null)".
std::string Printable(std::optional<std::string_view> bytes, size_t max_chars = SIZE_MAX);
// The bytes as a JSON string value's contents: valid UTF-8 passes through; each byte of an
// invalid sequence becomes U+FFFD (as nlohmann's "replace" handler does).
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace rdmq::cli
