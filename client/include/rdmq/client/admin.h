// AdminClient: topic administration and partition inspection against a broker (the control
// plane only), consumer-group administration (docs/groups.md), SASL users and ACLs. What
// `rdmq topic ...`, `rdmq group ...`, `rdmq user ...` and `rdmq acl ...` use.
//
// Thread safety: every method is thread-safe. Errors: protocol::WireError codes carried in the
// Status (UNKNOWN_TOPIC, TOPIC_EXISTS, INVALID_CONFIG, UNKNOWN_GROUP, GROUP_NOT_EMPTY,
// USER_EXISTS, UNKNOWN_USER, INVALID_USER, INVALID_ACL, TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED,
// ...) with the broker's message, or kUnavailable when
// the broker cannot be reached.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rdmq/client/options.h"
#include "rdmq/common/status.h"

namespace rdmq::client {

struct PartitionDescription {
  int32_t partition = 0;
  int64_t log_start_offset = 0;
  int64_t high_watermark = 0;  // next offset to be written
  uint32_t segments = 0;
  uint64_t bytes = 0;
  int64_t active_segment_base = 0;
  bool exclusive_lease = false;  // an exclusive producer holds the partition now
  // Leadership (a cluster's; a broker on its own leads every partition at epoch 0).
  int32_t leader = -1;  // broker id; -1: no live in-sync replica
  int32_t leader_epoch = 0;
  std::vector<int32_t> replicas;  // preference order
  std::vector<int32_t> isr;       // in sync
  bool local = true;              // the answering broker holds a replica: the numbers above are its
};

struct BrokerDescription {
  int32_t id = 0;
  std::string control;  // RPC control address
  std::string data;     // data (one-sided) address
  std::string kafka;    // advertised Kafka listener, "" when off
};
struct ClusterDescription {
  bool clustered = false;  // a cluster on ZooKeeper (else one broker on its own)
  int32_t controller = -1;
  int32_t controller_epoch = 0;
  int32_t this_broker = 0;  // the broker that answered
  std::vector<BrokerDescription> brokers;
  std::string zookeeper;
};

struct TopicDescription {
  std::string name;
  uint64_t id = 0;
  int64_t created_ms = 0;
  std::vector<std::pair<std::string, std::string>> configs;  // every key with its value
  std::vector<PartitionDescription> partitions;              // filled by DescribeTopic only
  int32_t partition_count() const;
};

// --- Consumer groups ---------------------------------------------------------------------------

struct GroupListing {
  std::string group;
  // rdmq's own groups: Empty, Reconciling, Stable; Kafka's classic groups: Empty,
  // PreparingRebalance, CompletingRebalance, Stable (docs/groups.md)
  std::string state;
  uint32_t members = 0;
  // "consumer" (rdmq's own protocol), "classic" (Kafka clients' JoinGroup/SyncGroup), or "" for
  // a group with committed offsets only.
  std::string type;
};

struct GroupMemberDescription {
  std::string member_id;
  std::string instance_id;  // group.instance.id; empty for a dynamic member
  std::string client_id;
  int32_t member_epoch = 0;
  std::vector<std::string> topics;         // the subscription: names...
  std::string topic_regex;                 // ...or a regex
  std::vector<TopicPartition> assignment;  // owned now
  std::vector<TopicPartition> target;      // where a rebalance in progress is heading
};

// One partition of a group's view: it has a committed offset, or a member owns it, or both.
struct GroupPartitionDescription {
  std::string topic;
  int32_t partition = 0;
  int64_t committed_offset = -1;  // -1: the group committed nothing for it
  std::string metadata;           // the committer's string
  int64_t commit_ms = -1;         // when the broker stored the commit (-1: none)
  int64_t log_start_offset = -1;  // -1 when the topic is gone
  int64_t log_end_offset = -1;    // the high watermark; -1 when the topic is gone
  int64_t lag = -1;               // log end - committed, never negative; -1 when either is unknown
  std::string owner;              // the member id that owns it now; empty for none
};

struct GroupDescription {
  std::string group;
  std::string state;
  int32_t group_epoch = 0;  // a classic group's generation
  std::string assignor;     // a classic group's chosen protocol
  std::string type;         // as in GroupListing
  std::vector<GroupMemberDescription> members;
  std::vector<GroupPartitionDescription> partitions;  // sorted by topic, partition
};

// A group's committed position for a partition (OffsetFetch).
struct CommittedOffset {
  int64_t offset = -1;  // -1: nothing committed
  std::string metadata;
  int64_t commit_ms = -1;
};

// --- SASL users (docs/protocol.md, "Users") --------------------------------------------------

// One SCRAM secret (RFC 5802), derived from the password by the caller (rdmq::auth's
// MakeScramCredential): the broker never sees the password.
struct UserScramSecret {
  std::string mechanism;  // "SCRAM-SHA-256" | "SCRAM-SHA-512"
  std::string salt;       // raw bytes, 16..64
  uint32_t iterations = 0;
  std::string stored_key;  // raw, the hash's size
  std::string server_key;  // raw, the hash's size
};

struct UserCredentials {
  std::string name;
  std::vector<UserScramSecret> secrets;  // one per mechanism, at least one
};

struct UserListing {
  std::string name;
  std::vector<std::string> mechanisms;  // sorted; never a secret
};

// --- ACLs (docs/protocol.md, "ACLs"; docs/security.md, "Authorization") ----------------------

// One binding: `principal` may (allow) or may not (deny) do `operation` to the resource. Names
// as `rdmq acl` spells them, in any case; the broker checks them (INVALID_ACL names what is
// wrong) and answers them in lower case.
struct AclBinding {
  std::string principal;                 // "User:NAME" or "User:*"
  std::string permission = "allow";      // allow | deny
  std::string operation;                 // read | write | create | delete | alter | describe | all
  std::string resource_type = "topic";   // topic | group | cluster
  std::string pattern_type = "literal";  // literal | prefixed
  std::string resource_name;             // a name, "*" (literal: every name), or the prefix; "cluster"
  bool operator==(const AclBinding&) const = default;
};

class AdminClient {
 public:
  static Result<std::unique_ptr<AdminClient>> Connect(const ClientOptions& options);
  virtual ~AdminClient() = default;

  // configs: Kafka topic keys ("partitions", "retention.ms", ...); missing keys take the
  // broker's defaults.
  virtual Result<TopicDescription> CreateTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) = 0;
  virtual Status DeleteTopic(const std::string& name) = 0;
  virtual Result<TopicDescription> DescribeTopic(const std::string& name) = 0;
  virtual Result<std::vector<TopicDescription>> ListTopics() = 0;
  virtual Result<TopicDescription> AlterTopic(
      const std::string& name, const std::vector<std::pair<std::string, std::string>>& configs) = 0;
  // The live brokers and the controller (a broker on its own: itself).
  virtual Result<ClusterDescription> DescribeCluster() = 0;
  // In a cluster: starts moving `partition`'s replicas to the brokers `replicas` (the first the
  // preferred leader); the new ones are fed until in sync, then the move completes and the old
  // ones drop their copies (DescribeTopic shows the replicas meanwhile: the new, then the old).
  // REASSIGNMENT_IN_PROGRESS while a move of the partition is under way.
  virtual Status ReassignPartition(const std::string& topic, int32_t partition,
                                   const std::vector<int32_t>& replicas) = 0;
  // DescribeTopic with the log numbers (start, high watermark, segments) of the partitions in
  // `only` (empty: all) from their leaders: in a cluster the answering broker knows only those of
  // the replicas it holds (`local`), so the leaders of the others are asked too (`options`: how to
  // reach them, the bootstrap replaced by each leader's address). A partition without a live
  // leader keeps `local` false; a leader that cannot be reached is an error naming it.
  Result<TopicDescription> DescribeTopicAtLeaders(const std::string& name, const ClientOptions& options,
                                                  const std::vector<int32_t>& only = {});

  // --- Consumer groups (docs/groups.md) ---------------------------------------------------------
  // Every group with members or committed offsets, sorted by name.
  virtual Result<std::vector<GroupListing>> ListGroups() = 0;
  // Members, and every partition with a committed offset or an owner, with the log's ends and
  // the lag (one DescribeTopic per topic involved). UNKNOWN_GROUP when the group has neither
  // members nor committed offsets.
  virtual Result<GroupDescription> DescribeGroup(const std::string& group) = 0;
  // Forgets the group and its committed offsets. GROUP_NOT_EMPTY while it has members,
  // UNKNOWN_GROUP when there is nothing to delete.
  virtual Status DeleteGroup(const std::string& group) = 0;
  // The group's committed offsets for these partitions (offset -1 where none), or for every
  // partition it committed when `partitions` is empty.
  virtual Result<std::map<TopicPartition, CommittedOffset>> ListGroupOffsets(
      const std::string& group, const std::vector<TopicPartition>& partitions) = 0;
  // A "simple" commit from outside the group (member id empty, epoch -1): all or none. The broker
  // refuses it (UNKNOWN_MEMBER_ID) while the group has members.
  virtual Status CommitGroupOffsets(const std::string& group,
                                    const std::map<TopicPartition, int64_t>& offsets) = 0;
  // The first offset whose timestamp is >= timestamp_ms, or -1 when no record is that recent.
  virtual Result<int64_t> OffsetForTimestamp(const TopicPartition& tp, int64_t timestamp_ms) = 0;

  // --- SASL users --------------------------------------------------------------------------------
  // USER_EXISTS when the name is taken; INVALID_USER for a bad name or secret.
  virtual Status CreateUser(const UserCredentials& user) = 0;
  // Replaces every secret of the user (a password change). UNKNOWN_USER, INVALID_USER.
  virtual Status AlterUser(const UserCredentials& user) = 0;
  // UNKNOWN_USER.
  virtual Status DeleteUser(const std::string& name) = 0;
  // Every user with its mechanisms, sorted by name.
  virtual Result<std::vector<UserListing>> ListUsers() = 0;

  // --- ACLs ------------------------------------------------------------------------------------
  // Stores the bindings (all checked first: INVALID_ACL stores none); returns how many were new.
  virtual Result<uint32_t> CreateAcls(const std::vector<AclBinding>& acls) = 0;
  // Removes exactly these bindings; returns how many there were. Leases and read grants that no
  // binding allows any more end at once.
  virtual Result<uint32_t> DeleteAcls(const std::vector<AclBinding>& acls) = 0;
  // Every binding, in the broker's stable order.
  virtual Result<std::vector<AclBinding>> ListAcls() = 0;
};

}  // namespace rdmq::client
