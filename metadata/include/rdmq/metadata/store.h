// MetadataStore: the broker's durable cluster model on one node (topics, their configs, the
// producer-id allocator, SASL users), kept in a local write-ahead log plus a periodic JSON
// checkpoint.
//
// Every mutation is appended to `<dir>/metadata.wal` as one CRC'd record and (with sync=true)
// fdatasync'ed before the call returns, so a mutation that returned OK survives a crash. Every
// `checkpoint_every` mutations the whole state is written to `<dir>/metadata.json` (temp file,
// fsync, rename, fsync of the directory) and the log is truncated. Open() loads the checkpoint and
// replays the log records newer than it; a torn final record (a crash mid-append) is cut off; a
// corrupt record in the middle, or a corrupt checkpoint, is kCorruptLog/kCorruptCheckpoint and
// nothing is modified, so an operator can inspect the files. Formats: docs/metadata-format.md.
//
// Thread safety: all methods are thread-safe (one mutex; this is the control path).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/common/types.h"
#include "rdmq/metadata/acl.h"
#include "rdmq/metadata/topic.h"
#include "rdmq/metadata/user.h"

namespace rdmq::metadata {

namespace internal {
struct Mutation;
struct StoreState;
class Journal;
}  // namespace internal

struct StoreOptions {
  std::string dir;                 // created if missing
  uint32_t checkpoint_every = 64;  // mutations between checkpoints
  bool sync = true;                // fdatasync every log append (tests of logic may turn it off)
};

class MetadataStore {
 public:
  static Result<std::unique_ptr<MetadataStore>> Open(const StoreOptions& options);
  ~MetadataStore();
  MetadataStore(const MetadataStore&) = delete;
  MetadataStore& operator=(const MetadataStore&) = delete;

  // kBadTopicName, kBadConfig, kTopicExists.
  Result<TopicInfo> CreateTopic(const std::string& name, const TopicConfig& config);
  // kNoSuchTopic.
  Status DeleteTopic(const std::string& name);
  // Replaces the config. The partition count may grow, never shrink (kBadConfig).
  // Creates or replaces `info.name` exactly as given, id and config included: a cluster's topic
  // mirrored from ZooKeeper on a broker that holds replicas of it (docs/replication.md).
  Status PutTopic(const TopicInfo& info);
  Result<TopicInfo> AlterTopic(const std::string& name, const TopicConfig& config);
  Result<TopicInfo> GetTopic(const std::string& name) const;
  std::optional<TopicInfo> FindTopicById(TopicId id) const;
  std::vector<TopicInfo> ListTopics() const;  // sorted by name

  // A producer id never handed out before, even across restarts (ids are reserved from the log
  // in blocks, so a crash skips at most one block).
  Result<ProducerId> AllocateProducerId();

  // SASL users (user.h): each call checks the user with ValidateUser (kBadUser) first.
  // kUserExists.
  Status CreateUser(const UserInfo& user);
  // Replaces the user's secrets (a password change). kNoSuchUser.
  Status UpdateUser(const UserInfo& user);
  // kBadUser for a bad name, kNoSuchUser.
  Status DeleteUser(const std::string& name);
  std::optional<UserInfo> GetUser(const std::string& name) const;
  std::vector<UserInfo> ListUsers() const;  // sorted by name

  // ACL bindings (acl.h), each checked with ValidateAcl (kBadAcl) first. Adding one that is
  // there already is a no-op, as is removing one that is not (Kafka's CreateAcls and DeleteAcls
  // behave so); each returns whether it changed anything.
  Result<bool> AddAcl(const AclBinding& b);
  Result<bool> RemoveAcl(const AclBinding& b);
  std::vector<AclBinding> ListAcls() const;  // in a stable order

  // Writes a checkpoint now and truncates the log.
  Status Checkpoint();
  // Sequence number of the last applied mutation.
  uint64_t last_seq() const;

 private:
  explicit MetadataStore(StoreOptions options);
  Status Load() EXCLUDES(mu_);
  // Logs one mutation, applies it to the in-memory state, checkpoints when due.
  Status Commit(const internal::Mutation& op) REQUIRES(mu_);
  Status CheckpointLocked() REQUIRES(mu_);

  const StoreOptions options_;
  mutable Mutex mu_;
  const std::unique_ptr<internal::StoreState> state_ PT_GUARDED_BY(mu_);
  const std::unique_ptr<internal::Journal> journal_ PT_GUARDED_BY(mu_);
};

}  // namespace rdmq::metadata
