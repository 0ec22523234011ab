// Helpers for the truncation tests: batches whose record values name their offset and a
// generation (so records written after a truncation at the same offsets are told apart from the
// ones it removed), and the log's expected contents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "rdmq/storage/log.h"
#include "storage_test_util.h"

namespace rdmq::storage::test {

// "g<gen>:<offset>", padded with dots to `len` bytes.
inline std::string GenValue(int gen, int64_t offset, size_t len) {
  std::string v("g");  // (a literal + std::to_string trips GCC 12's -Wrestrict at -O3)
  v += std::to_string(gen);
  v += ':';
  v += std::to_string(offset);
  if (v.size() < len) v.resize(len, '.');
  return v;
}

// What a log must hold: the record values from `start`, and the batches' first offsets.
struct Expected {
  Offset start{0};
  std::vector<std::string> values;
  std::vector<Offset> batches;

  Offset end() const { return start + static_cast<int64_t>(values.size()); }
  void TruncateTo(Offset e) {
    values.resize(static_cast<size_t>(e - start));
    batches.erase(std::lower_bound(batches.begin(), batches.end(), e), batches.end());
  }
  // Everything before `s` went (retention).
  void StartAt(Offset s) {
    values.erase(values.begin(), values.begin() + (s - start));
    batches.erase(batches.begin(), std::lower_bound(batches.begin(), batches.end(), s));
    start = s;
  }
};

// Appends `n` batches of `per` records (values GenValue(gen, offset, len), timestamps 1000 +
// offset) and notes them in `e`. Returns the first failure (the log's error), or OK.
inline Status AppendBatches(PartitionLog& log, Expected& e, int n, int per = 4, size_t len = 100,
                            int gen = 0) {
  for (int b = 0; b < n; ++b) {
    const Offset first = log.LogEndOffset();
    std::vector<std::string> values;
    std::vector<RecordInput> recs(static_cast<size_t>(per));
    for (int i = 0; i < per; ++i) values.push_back(GenValue(gen, first.value() + i, len));
    for (int i = 0; i < per; ++i) {
      recs[static_cast<size_t>(i)].value = std::string_view(values[static_cast<size_t>(i)]);
      recs[static_cast<size_t>(i)].timestamp = TimestampMs(1000 + first.value() + i);
    }
    auto r = log.Append(recs);
    if (!r.ok()) return r.status();
    if (r->base_offset != first || first != e.end()) {
      return Status(Errc::kInternal, "append at offset " + std::to_string(r->base_offset.value()) +
                                         ", expected " + std::to_string(e.end().value()));
    }
    e.batches.push_back(first);
    for (auto& v : values) e.values.push_back(std::move(v));
  }
  return Status::Ok();
}

// Every record value from the log start to the high watermark (ReadAll checks CRCs and fails
// the test on a read error), with its offset checked to follow the previous one.
inline std::vector<std::string> Values(const PartitionLog& log) {
  std::vector<std::string> out;
  int64_t at = log.LogStartOffset().value();
  for (const ReadRecord& r : ReadAll(log)) {
    REQUIRE(r.offset == at);
    ++at;
    out.push_back(r.value.value_or("<null>"));
  }
  return out;
}

}  // namespace rdmq::storage::test
