// OffsetStore: consumer groups' committed offsets, durable on the broker's node. Kept like the
// topic metadata (store.h) but in files of its own, `offsets.wal` and `offsets.json`
// (docs/metadata-format.md), so frequent commits neither rewrite the topic checkpoint nor wait for
// topic administration.
//
// A Commit returns only after its log record is fdatasync'ed (StoreOptions::sync), so every
// acknowledged commit survives a crash; a torn final record is cut off at Open, a corrupt one in
// the middle or a corrupt checkpoint is kCorruptLog / kCorruptCheckpoint and nothing is modified.
//
// Thread safety: every method is thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/metadata/store.h"

namespace rdmq::metadata {

namespace internal {
struct OffsetState;
class Journal;
}  // namespace internal

struct CommittedOffset {
  int64_t offset = 0;         // the next record the group will read
  int32_t leader_epoch = -1;  // -1: unknown
  std::string metadata;       // the committer's string, at most kMaxOffsetMetadata bytes
  int64_t commit_ms = 0;      // wall time of the commit
  bool operator==(const CommittedOffset&) const = default;
};

inline constexpr size_t kMaxOffsetMetadata = 4096;
inline constexpr size_t kMaxGroupIdBytes = 255;

// topic name and partition
using OffsetKey = std::pair<std::string, int32_t>;
using GroupOffsets = std::map<OffsetKey, CommittedOffset>;

// A group id is 1..255 bytes of printable ASCII (kBadGroupId).
Status ValidateGroupId(std::string_view group);

class OffsetStore {
 public:
  static Result<std::unique_ptr<OffsetStore>> Open(const StoreOptions& options);
  ~OffsetStore();
  OffsetStore(const OffsetStore&) = delete;
  OffsetStore& operator=(const OffsetStore&) = delete;

  // Stores the offsets (replacing earlier ones of the same partitions) in one durable record.
  // kBadGroupId; kInvalidArgument for a negative offset or partition or metadata over the limit.
  Status Commit(const std::string& group, const GroupOffsets& offsets);
  std::optional<CommittedOffset> Fetch(const std::string& group, const std::string& topic,
                                       int32_t partition) const;
  GroupOffsets FetchGroup(const std::string& group) const;  // empty if none
  std::vector<std::string> Groups() const;                  // groups with offsets, sorted
  // kNoSuchGroup when the group has no offsets.
  Status DeleteGroup(const std::string& group);
  // Forgets every group's offsets of the topic (it was deleted); nothing is logged if none.
  Status DeleteTopic(const std::string& topic);

  Status Checkpoint();

 private:
  explicit OffsetStore(StoreOptions options);
  Status Load();
  Status Log(const std::string& payload) REQUIRES(mu_);

  const StoreOptions options_;
  mutable Mutex mu_;
  const std::unique_ptr<internal::OffsetState> state_ PT_GUARDED_BY(mu_);
  const std::unique_ptr<internal::Journal> journal_ PT_GUARDED_BY(mu_);
};

}  // namespace rdmq::metadata
