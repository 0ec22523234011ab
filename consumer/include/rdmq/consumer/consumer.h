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
// Consumer groups (docs/groups.md): with `group.id` set, Subscribe() joins the group and the
// broker assigns partitions; Poll() applies assignment changes (calling the RebalanceListener on
// the polling thread: revoked before the partitions go, assigned after they arrive with their
// committed offsets, lost when the membership was fenced) and commits positions every
// auto.commit.interval.ms when enable.auto.commit is on. A background thread heartbeats.
//
//   cfg.Set("group.id", "billing");
//   auto c = Consumer::Create(cfg);
//   (*c)->Subscribe({"orders"});
//   for (;;) { auto records = (*c)->Poll(100ms); ...; (*c)->CommitSync(); }
//
// Thread safety: a Consumer is used by one thread at a time (as Kafka's), except Wakeup().
// Record views (key, value, headers) stay valid until the next Poll, Seek* or Close. Records of
// compressed batches (gzip, snappy, lz4, zstd, whoever wrote them) come decompressed, exactly as
// they were produced; a batch whose records do not decompress is kCorruption like a bad CRC.
// Errors: Poll returns OFFSET_OUT_OF_RANGE for a position below the log start when
// auto_offset_reset is kNone (otherwise it resets and goes on), kCorruption naming the segment
// and position when a batch fails its CRC, kUnavailable when the broker is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
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
  std::string group_id;                                    // "group.id": empty = no group (Assign only)
  std::string group_instance_id;                           // "group.instance.id": static membership
  std::string assignor = "cooperative-sticky";             // "partition.assignment.strategy"
  std::chrono::milliseconds session_timeout{45000};        // "session.timeout.ms"
  std::chrono::milliseconds max_poll_interval{300000};     // "max.poll.interval.ms": the rebalance timeout
  bool enable_auto_commit = true;                          // "enable.auto.commit"
  std::chrono::milliseconds auto_commit_interval{5000};    // "auto.commit.interval.ms"

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

// A committed position: the next offset the group will read, with the committer's string.
struct OffsetAndMetadata {
  int64_t offset = -1;  // -1: nothing committed (Committed())
  std::string metadata;
  int32_t leader_epoch = -1;
  bool operator==(const OffsetAndMetadata&) const = default;
};
using OffsetMap = std::map<TopicPartition, OffsetAndMetadata>;
using CommitCallback = std::function<void(const Status&, const OffsetMap&)>;

// Called on the thread inside Poll/Close (never concurrently), as Kafka's
// ConsumerRebalanceListener.
class RebalanceListener {
 public:
  virtual ~RebalanceListener() = default;
  // After these partitions arrived; their positions are the committed offsets (or the reset).
  virtual void OnAssigned(const std::vector<TopicPartition>& /*partitions*/) {}
  // Before these partitions go to another member; commit here what must be committed (with
  // enable.auto.commit their positions are committed right after this returns).
  virtual void OnRevoked(const std::vector<TopicPartition>& /*partitions*/) {}
  // The membership was lost (session timed out, fenced, broker restarted): the partitions may
  // already belong to someone else, and nothing is committed for them.
  virtual void OnLost(const std::vector<TopicPartition>& /*partitions*/) {}
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
  // Commits (when in a group with enable.auto.commit) and leaves the group promptly, then
  // disconnects.
  virtual void Close() = 0;

  // --- Consumer groups: kFailedPrecondition without group.id --------------------------------
  // Joins the group with these topics (replacing an earlier subscription). Not with Assign.
  virtual Status Subscribe(const std::vector<std::string>& topics, RebalanceListener* listener = nullptr);
  // The same with an ECMAScript regex matched against whole topic names; new topics that match
  // are picked up.
  virtual Status SubscribePattern(const std::string& regex, RebalanceListener* listener = nullptr);
  virtual Status Unsubscribe();
  // Commits the positions of every assigned partition (or these offsets) and waits.
  virtual Status CommitSync();
  virtual Status CommitSync(const OffsetMap& offsets);
  // Commits the positions of every assigned partition; `done` runs inside a later Poll,
  // CommitSync or Close.
  virtual Status CommitAsync(CommitCallback done = nullptr);
  // The group's committed offsets (offset -1 where none).
  virtual Result<OffsetMap> Committed(const std::vector<TopicPartition>& partitions);
  // Paused partitions return no records from Poll until resumed; they stay assigned and keep
  // their positions.
  virtual Status Pause(const std::vector<TopicPartition>& partitions);
  virtual Status Resume(const std::vector<TopicPartition>& partitions);
  virtual std::vector<TopicPartition> Paused() const;
  // The member id the broker gave this consumer (empty outside a group or before joining).
  virtual std::string MemberId() const;
};

}  // namespace rdmq::consumer
