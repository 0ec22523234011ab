// Helpers for storage tests: deterministic record contents, reading a whole log back, hashing
// files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rdmq/common/coding.h"
#include "rdmq/storage/log.h"
#include "support/test_util.h"

namespace rdmq::storage::test {

// The value of the record with a given id (an offset, or a producer/sequence id), 1..max_len
// bytes, fully determined by (salt, id), so a checker can recompute it.
inline std::string ValueFor(uint64_t salt, uint64_t id, size_t max_len = 300) {
  uint64_t x = salt * 0x9E3779B97F4A7C15ULL ^ (id + 1) * 0xBF58476D1CE4E5B9ULL;
  auto next = [&x]() {
    x ^= x >> 31;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 29;
    return x;
  };
  const size_t len = 1 + next() % max_len;
  std::string s(len, '\0');
  for (size_t i = 0; i < len; i += 8) {
    const uint64_t w = next();
    std::memcpy(s.data() + i, &w, std::min<size_t>(8, len - i));
  }
  return s;
}

struct ReadRecord {
  int64_t offset;
  std::optional<std::string> key;
  std::optional<std::string> value;
  int64_t timestamp;
  bool control;
};

// Reads every record from `from` to the high watermark. Fails the test on any read error.
inline std::vector<ReadRecord> ReadAll(const PartitionLog& log, Offset from = kNoOffset) {
  std::vector<ReadRecord> out;
  Offset at = from == kNoOffset ? log.LogStartOffset() : from;
  const Offset hwm = log.HighWatermark();
  while (at < hwm) {
    auto r = log.Read(at, 1 << 20);
    REQUIRE_OK(r.status());
    REQUIRE(!r->bytes.empty());
    BatchScanner sc(r->bytes, Validation::kRecords);
    BatchView b;
    std::string buffer;  // compressed batches' records
    while (sc.Next(&b)) {
      RecordIterator it(b.header, b.bytes, &buffer);
      RecordView v;
      while (it.Next(&v)) {
        const int64_t off = b.header.base_offset.value() + v.offset_delta;
        if (off < at.value()) continue;
        ReadRecord rr;
        rr.offset = off;
        if (v.key) rr.key = std::string(coding::AsChars(*v.key));
        if (v.value) rr.value = std::string(coding::AsChars(*v.value));
        rr.timestamp = b.header.base_timestamp.value() + v.timestamp_delta;
        rr.control = b.header.is_control();
        out.push_back(std::move(rr));
      }
      REQUIRE_OK(it.status());
    }
    REQUIRE_OK(sc.status());
    REQUIRE(r->next_offset > at);
    at = r->next_offset;
  }
  return out;
}

// FNV-1a of a whole file's bytes (through std::ifstream), or of a MemEnv file.
inline uint64_t Fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace rdmq::storage::test
