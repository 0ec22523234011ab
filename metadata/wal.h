// The metadata write-ahead log's record format (docs/metadata-format.md):
//
//   offset size  field
//   0      4     payload length N (little-endian)
//   4      4     CRC-32C over bytes 8 .. 15+N (sequence and payload)
//   8      8     sequence number (little-endian), 1, 2, 3, ...
//   16     N     payload: one JSON mutation, UTF-8
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"

namespace rdmq::metadata::wal {

// Field offsets within a record (wal.cc checks them against the table above).
inline constexpr size_t kLengthAt = 0;
inline constexpr size_t kCrcAt = 4;
inline constexpr size_t kSeqAt = 8;        // the CRC covers from here to the record's end
inline constexpr size_t kHeaderSize = 16;  // the payload's offset
inline constexpr uint32_t kMaxPayload = 16u << 20;

struct Record {
  uint64_t seq;
  std::string payload;
};

struct ReplayResult {
  std::vector<Record> records;
  uint64_t valid_bytes = 0;  // length of the valid prefix
  uint64_t file_bytes = 0;
};

std::string EncodeRecord(uint64_t seq, std::string_view payload);

// Decodes records from the bytes of a log file. A torn tail (an incomplete record at the end, or
// a final record with a bad CRC followed by nothing but zeros) ends the valid prefix; a bad record
// followed by other bytes is corruption (kCorruptLog naming the position).
Result<ReplayResult> DecodeLog(std::string_view bytes, const std::string& name);
// Reads and decodes the log file at `path`; a missing file is an empty log.
Result<ReplayResult> Replay(const std::string& path);
// Opens (creating) the log for appending after cutting it to `valid_bytes`.
Result<int> OpenForAppend(const std::string& path, uint64_t valid_bytes);
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace rdmq::metadata::wal
