// Consumer: reads partition logs straight out of the broker's memory with one-sided READs
// (docs/protocol.md section 6). Idle consumers sleep (futex on shm, a notification on tcp/verbs)
// and wake within microseconds of a commit; they never spin a core while idle.
//
//   ConsumerConfig cfg;
//   auto c = Consumer::Create(cfg);
//   (*c)->Assign({{"orders", 0}, {"orders", 1}});
//   for (;;) {
//     auto records = (*c)->Poll(std::chrono::milliseconds(100));
//     for (const ConsumerRecord& r : *records) use(r.offset, r.value);
//   }
//
// Thread safety: a Consumer is used by one thread at a time (as Kafka's), except Wakeup().
// Record views (key, value, headers) stay valid until the next Poll, Seek* or Close.
// Errors: Poll returns OFFSET_OUT_OF_RANGE for a position below the log start when
// auto_offset_reset is kNone (otherwise it resets and goes on), kCorruption naming the segment
// and position when a batch fails its CRC, kUnavailable when the broker is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "rdmq/client/options.h"
#include "rdmq/common/status.h"

namespace rdmq::consumer {

using client::TopicPartition;

enum class OffsetReset : uint8_t { kEarliest, kLatest, kNone };

struct ConsumerConfig {
  client::ClientOptions client;
  uint32_t max_poll_records = 500;                         // "max.poll.records"
  uint32_t fetch_max_bytes = 4u << 20;                     // "fetch.max.bytes": per READ
  OffsetReset auto_offset_reset = OffsetReset::kEarliest;  // "auto.offset.reset"
  bool check_crcs = true;                                  // "check.crcs"
  std::chrono::microseconds spin{50};                      // "rdmq.idle.spin.us": poll before sleeping

  // The keys above plus the ClientOptions keys: a lookup in ConsumerConfigDef().
  // kInvalidArgument names the key.
  Status Set(std::string_view key, std::string_view value);
};

// Every consumer key with its type, range, default and doc (`rdmq config list consumer`).
const config::ConfigDef<ConsumerConfig>& ConsumerConfigDef();

struct RecordHeader {
  std::string_view key;
  std::string_view value;
};

struct ConsumerRecord {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp_ms = 0;
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<RecordHeader> headers;
};

class Consumer {
 public:
  static Result<std::unique_ptr<Consumer>> Create(const ConsumerConfig& config);
  virtual ~Consumer() = default;

  // Replaces the assignment. New partitions start at auto_offset_reset's position.
  virtual Status Assign(const std::vector<TopicPartition>& partitions) = 0;
  virtual std::vector<TopicPartition> Assignment() const = 0;
  // Returns up to max_poll_records records; waits up to `timeout` when none are available
  // (an empty result is not an error).
  virtual Result<std::vector<ConsumerRecord>> Poll(std::chrono::milliseconds timeout) = 0;
  virtual Status Seek(const TopicPartition& tp, int64_t offset) = 0;
  virtual Status SeekToBeginning(const std::vector<TopicPartition>& partitions) = 0;
  virtual Status SeekToEnd(const std::vector<TopicPartition>& partitions) = 0;
  // The offset of the next record Poll will return for the partition.
  virtual Result<int64_t> Position(const TopicPartition& tp) = 0;
  // First offset whose timestamp is ≥ timestamp_ms (Kafka's offsetsForTimes), or -1 if none.
  virtual Result<int64_t> OffsetForTime(const TopicPartition& tp, int64_t timestamp_ms) = 0;
  // Makes a Poll blocked in another thread return early (with no records).
  virtual void Wakeup() = 0;
  virtual void Close() = 0;
};

}  // namespace rdmq::consumer
