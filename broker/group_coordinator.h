// GroupCoordinator: the broker's consumer groups (docs/groups.md) and their committed offsets.
// One registry of groups keyed by group id, each either rdmq's own (a group::Group, driven by
// GroupHeartbeat RPCs) or Kafka's classic protocol (a group::ClassicGroup, driven by the Kafka
// listener's JoinGroup/SyncGroup/Heartbeat/LeaveGroup): a group id is one group whichever
// protocol its members speak, and while it has members of one kind a join of the other kind is
// refused (INCONSISTENT_GROUP_PROTOCOL). Committed offsets are one durable OffsetBook for both
// (the broker's metadata::OffsetStore, or in a cluster ZooKeeper: offset_book.h). A timer thread drives
// session and rebalance timeouts and topic changes. Membership is not persisted: after a restart members
// rejoin and resume from their committed offsets.
//
// Threading: every method is thread-safe (one mutex, taken outside the offset store's). The
// timer thread sleeps until the groups' next deadline, or until TopicsChanged() / Stop() / a
// classic call moves a deadline.
//
// The asynchronous classic calls (JoinGroup, SyncGroup) take a `done` callback that is called
// exactly once, never while the coordinator's mutex is held (so `done` may call back into the
// coordinator), on one of these threads:
//   - the calling thread, before JoinGroup/SyncGroup returns: when the answer is immediate
//     (errors, MEMBER_ID_REQUIRED, a follower's unchanged rejoin, a Stable group's SyncGroup), or
//     when this very call completed the phase (the last member's JoinGroup, the leader's SyncGroup);
//   - another request's thread, inside its JoinGroup, SyncGroup, ClassicHeartbeat, LeaveGroup,
//     CommitClassic or native Heartbeat/Commit call on the same group, when that call completes
//     the phase (this member's answer is delivered there after that call's own work);
//   - the coordinator's timer thread: the initial delay, the rebalance timeout or a session
//     timeout ended the phase;
//   - the thread calling Stop() (answered COORDINATOR_NOT_AVAILABLE); after Stop() every call
//     answers COORDINATOR_NOT_AVAILABLE on the calling thread.
// Answers for different members may be delivered concurrently on different threads; one member's
// answers arrive in order (its SyncGroup can only be sent after its JoinGroup's answer).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "offset_book.h"
#include "rdmq/broker/config.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/group/classic.h"
#include "rdmq/group/group.h"
#include "rdmq/metadata/offsets.h"
#include "rdmq/metadata/store.h"
#include "rdmq/protocol/group_messages.h"

namespace rdmq::broker::internal {

// One offset of a Kafka OffsetCommit.
struct ClassicOffset {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t leader_epoch = -1;
  std::string metadata;
};

struct ClassicCommitRequest {
  std::string group;
  int32_t generation_id = -1;  // -1 with no member id: a "simple" commit from outside the group
  std::string member_id;
  std::string instance_id;
  std::vector<ClassicOffset> offsets;
};

struct ClassicCommitResponse {
  // Group level (every partition failed with it): kInvalidGroupId, kUnknownMemberId,
  // kIllegalGeneration, kRebalanceInProgress, kFencedInstanceId, kCoordinatorNotAvailable,
  // kUnknownServerError (the offset store failed).
  Status status;
  // One per request offset, in order (when `status` is OK): OK (stored), kUnknownTopicOrPartition,
  // kOffsetMetadataTooLarge (over 4096 bytes), kUnknownServerError (a negative offset).
  std::vector<Status> partitions;
};

// One group for Kafka's ListGroups.
struct GroupOverview {
  std::string group;
  std::string type;           // "consumer" (rdmq's own), "classic" (Kafka's), "" (offsets only)
  std::string protocol_type;  // "consumer" for both kinds of consumers; a classic group's own type
  std::string state;          // Kafka's names for classic groups; Empty/Reconciling/Stable otherwise
  uint32_t members = 0;
};

class GroupCoordinator {
 public:
  using JoinDone = std::function<void(group::ClassicJoinResponse)>;
  using SyncDone = std::function<void(group::ClassicSyncResponse)>;

  GroupCoordinator(const BrokerConfig& cfg, const metadata::MetadataStore& meta,
                   metadata::OffsetStore& offsets);
  ~GroupCoordinator() { Stop(); }
  GroupCoordinator(const GroupCoordinator&) = delete;
  GroupCoordinator& operator=(const GroupCoordinator&) = delete;

  void Start();
  // Where the topics' partition counts come from instead of the local metadata store (a cluster's
  // topics: cluster_member.h). Set before Start.
  void SetTopicSource(std::function<std::vector<metadata::TopicInfo>()> source) {
    topic_source_ = std::move(source);
  }
  // Where committed offsets are kept instead of the local offset store (a cluster's ZooKeeper:
  // offset_book.h). Set before Start.
  void SetOffsetBook(std::unique_ptr<OffsetBook> book) { offsets_ = std::move(book); }
  OffsetBook& offsets() { return *offsets_; }
  // Stops the timer thread and answers every waiting JoinGroup/SyncGroup with
  // COORDINATOR_NOT_AVAILABLE (on this thread).
  void Stop() EXCLUDES(mu_);

  // --- rdmq's own protocol (docs/protocol.md) ---------------------------------------------------
  // INCONSISTENT_GROUP_PROTOCOL while Kafka classic members hold the group id.
  Result<protocol::GroupHeartbeatResponse> Heartbeat(const protocol::GroupHeartbeatRequest& req,
                                                     const std::string& client_id) EXCLUDES(mu_);
  // All or none; a member must be current (CheckCommit), a simple commit needs a group without
  // members (of either kind).
  Status Commit(const protocol::OffsetCommitRequest& req) EXCLUDES(mu_);
  Result<protocol::OffsetFetchResponse> Fetch(const protocol::OffsetFetchRequest& req) const;
  // Both kinds of groups, and groups with committed offsets only.
  protocol::ListGroupsResponse List() const EXCLUDES(mu_);
  // A classic group's members show the topics of their ConsumerProtocolSubscription and the
  // partitions of their ConsumerProtocolAssignment.
  Result<protocol::DescribeGroupResponse> Describe(const std::string& group) const EXCLUDES(mu_);
  // GROUP_NOT_EMPTY while the group has members (either kind); UNKNOWN_GROUP when it has neither
  // members nor offsets. Kafka's DeleteGroups maps these to NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND.
  Status Delete(const std::string& group) EXCLUDES(mu_);
  // A topic was created, deleted or grew: wake the timer so that groups notice. A deleted
  // topic's committed offsets are forgotten.
  void TopicsChanged() EXCLUDES(mu_);
  Status TopicDeleted(const std::string& topic);

  // --- Kafka's classic protocol (the Kafka listener) --------------------------------------------
  // Errors are group::ClassicErrc codes named as Kafka's (kInvalidGroupId for a bad group id,
  // kInconsistentGroupProtocol while rdmq's own members hold the group id, kUnknownMemberId for a
  // member id naming a group that does not exist, kCoordinatorNotAvailable after Stop()).
  void JoinGroup(const std::string& group, const group::ClassicJoinRequest& req, JoinDone done) EXCLUDES(mu_);
  void SyncGroup(const std::string& group, const group::ClassicSyncRequest& req, SyncDone done) EXCLUDES(mu_);
  Status ClassicHeartbeat(const std::string& group, const group::ClassicHeartbeatRequest& req) EXCLUDES(mu_);
  // LeaveGroup v0-v2 pass one member, v3+ a list; the group-level status is kUnknownMemberId
  // when the group does not exist (each member then gets kUnknownMemberId too).
  group::ClassicLeaveResponse LeaveGroup(const std::string& group,
                                         const std::vector<group::ClassicLeaveMember>& members) EXCLUDES(mu_);
  // Kafka's OffsetCommit: validated against whichever kind of group holds the id (a classic
  // member by generation; a member of rdmq's own protocol by its epoch); the valid partitions
  // are stored together, durably, before it returns.
  ClassicCommitResponse CommitClassic(const ClassicCommitRequest& req) EXCLUDES(mu_);
  // Kafka's DescribeGroups: a classic group as it is; a group of rdmq's own protocol rendered
  // classic-style (protocol type "consumer", the assignor as protocol, subscriptions and
  // assignments encoded as consumer-protocol v0 bytes); Empty for a group with offsets only;
  // Dead (and nothing else) for an unknown or invalid group id.
  group::ClassicGroupDescription DescribeClassic(const std::string& group) const EXCLUDES(mu_);
  // Kafka's ListGroups: every group, sorted by id.
  std::vector<GroupOverview> Overview() const EXCLUDES(mu_);

 private:
  using Slot = std::variant<group::Group, group::ClassicGroup>;
  using Delivery = std::function<void()>;
  struct Waiter {
    JoinDone join;
    SyncDone sync;
  };

  void Loop() EXCLUDES(mu_);
  group::TopicCounts Topics() const;
  group::ClassicConfig ClassicCfg() const;
  // The native group for `id`, created when absent; nullptr (with *error set) while classic
  // members hold the id.
  group::Group* NativeFor(const std::string& id, bool create, Status* error) REQUIRES(mu_);
  // The classic group for `id`, created when absent and `create`; nullptr (with *error set) when
  // absent and not created, or while rdmq's own members hold the id.
  group::ClassicGroup* ClassicFor(const std::string& id, bool create, Status* error) REQUIRES(mu_);
  // Takes the classic group's completions and pairs them with their callbacks.
  void Collect(group::ClassicGroup& g, std::vector<Delivery>* out) REQUIRES(mu_);
  static void Deliver(std::vector<Delivery>& ready);
  Status CheckClassicCommit(const std::string& group, const std::string& member_id,
                            const std::string& instance_id, int32_t generation, std::vector<Delivery>* out)
      REQUIRES(mu_);

  const BrokerConfig& cfg_;
  const metadata::MetadataStore& meta_;
  std::function<std::vector<metadata::TopicInfo>()> topic_source_;
  std::unique_ptr<OffsetBook> offsets_;
  const std::string salt_;  // this incarnation's, in generated member ids
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, Slot> groups_ GUARDED_BY(mu_);
  std::map<group::Token, Waiter> waiters_ GUARDED_BY(mu_);
  group::Token next_token_ GUARDED_BY(mu_) = 1;
  bool topics_changed_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
