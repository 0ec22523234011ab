// Group: one consumer group's membership and target assignment, as a pure state machine in the
// style of KIP-848 (server-side assignment driven by heartbeats; no JoinGroup/SyncGroup, no
// request ever waits for another member). docs/groups.md specifies the protocol for clients.
//
// Sans-I/O: it does no I/O, starts no threads, reads no clock (the caller passes `now`) and takes
// no lock: the broker keeps one Group per group id behind its own mutex and calls
//   Heartbeat()  for every ConsumerGroupHeartbeat request,
//   Tick()       from its housekeeper at NextDeadline() (expiries, topic changes),
//   CheckCommit() before an OffsetCommit,
//   Describe()   for the admin API.
// Every call is given the current topics (name -> partition count) so that topic creation and
// partition additions are noticed without a callback.
//
// In short: the group epoch bumps whenever the target assignment is recomputed (a member joined,
// left or expired, a subscription changed, a subscribed topic's partition count changed, a new
// topic matches a regex). A member reaches the group epoch once it has revoked what it must; a
// partition is handed to a new owner only after its previous owner reported (in `owned`) that it
// no longer holds it. Cooperative-sticky revokes only what moves; range and round-robin (eager)
// revoke everything from everyone, then hand the new target out once all members revoked.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/group/assignor.h"
#include "rdmq/group/errors.h"

namespace rdmq::group {

using TimePoint = std::chrono::steady_clock::time_point;

// Member epochs with a meaning of their own in a HeartbeatRequest.
inline constexpr int32_t kJoinEpoch = 0;
inline constexpr int32_t kLeaveEpoch = -1;
inline constexpr int32_t kStaticLeaveEpoch = -2;  // a static member leaving temporarily

struct GroupConfig {
  // Returned in every response: how often members heartbeat (Kafka's
  // group.consumer.heartbeat.interval.ms).
  std::chrono::milliseconds heartbeat_interval{5000};
  // Most members at once; 0 = no limit (Kafka's group.consumer.max.size). A static member taking
  // another's place does not count as a new member.
  int32_t max_size = 0;
  // Used when the group's first member names no assignor.
  AssignorKind default_assignor = AssignorKind::kCooperativeSticky;
  // Generated member ids are "<client_id>-<member_id_salt>-<n>" ("<client_id>-<n>" when empty).
  // Pass something unique to this broker incarnation (groups are not persisted, so a member id
  // from before a restart must not name a new member).
  std::string member_id_salt;
};

struct HeartbeatRequest {
  std::string member_id;    // empty to join with a generated id (a client may also choose its own)
  std::string instance_id;  // static membership; empty = dynamic
  std::string client_id;
  int32_t member_epoch = kJoinEpoch;  // 0 = join, -1 = leave, -2 = static member leaving temporarily
  // The subscription, sent in full on every heartbeat: either topic names or a regex (std::regex
  // ECMAScript, matched against the whole topic name), not both.
  std::vector<std::string> topics;
  std::string topic_regex;
  std::string assignor;  // empty = the group's (or the default for a new group)
  // What the member holds now, including what it is in the middle of taking (docs/groups.md).
  std::vector<TopicPartition> owned;
  // Both must be positive on a join; 0 on a later heartbeat keeps the current value.
  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};
};

struct HeartbeatResult {
  Status status;          // OK, or a GroupErrc (with context saying why)
  std::string member_id;  // the member's id (generated on a join)
  int32_t member_epoch = 0;
  // What the member may own now (sorted). Anything it holds that is not listed it must revoke.
  std::vector<TopicPartition> assignment;
  std::chrono::milliseconds heartbeat_interval{0};
  bool ok() const noexcept { return status.ok(); }
};

enum class GroupState {
  kEmpty,        // no members
  kReconciling,  // some member is not yet at the group epoch or does not yet hold its target
  kStable,       // every member is at the group epoch and holds exactly its target
};
std::string_view GroupStateName(GroupState state) noexcept;

struct MemberDescription {
  std::string member_id;
  std::string instance_id;
  std::string client_id;
  int32_t member_epoch = 0;
  std::vector<std::string> topics;  // as subscribed (or empty with a regex)
  std::string topic_regex;
  std::vector<TopicPartition> assignment;          // what it may own now
  std::vector<TopicPartition> pending_revocation;  // what it was asked to revoke and still may hold
  std::vector<TopicPartition> target;              // its part of the target assignment
  bool left_temporarily = false;                   // a static member that left with epoch -2
};

struct GroupDescription {
  std::string group_id;
  GroupState state = GroupState::kEmpty;
  int32_t group_epoch = 0;
  int32_t assignment_epoch = 0;            // the epoch of the target assignment (equals group_epoch)
  std::string assignor;                    // empty while the group is empty
  std::vector<MemberDescription> members;  // sorted by member id
};

class Group {
 public:
  explicit Group(std::string group_id, GroupConfig config = {});
  ~Group();
  Group(Group&&) noexcept;
  Group& operator=(Group&&) noexcept;
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  // One member's heartbeat (join, leave, or keep-alive with its subscription and owned
  // partitions). Errors: kUnknownMemberId, kFencedMemberEpoch, kInconsistentAssignor,
  // kUnsupportedAssignor, kInvalidRegularExpression, kInvalidRequest, kGroupMaxSizeReached; an
  // error changes nothing but the topic bookkeeping.
  HeartbeatResult Heartbeat(const HeartbeatRequest& request, TimePoint now, const TopicCounts& topics);

  // Removes members whose last heartbeat is at least their session timeout old and members that
  // have not revoked within their rebalance timeout; notices topic changes; recomputes the target
  // assignment when needed.
  void Tick(TimePoint now, const TopicCounts& topics);

  // The earliest time at which Tick() would remove a member; nullopt when nothing can expire.
  std::optional<TimePoint> NextDeadline() const;

  // Whether an OffsetCommit by this member may proceed. An empty member id with epoch -1 is a
  // "simple" commit, allowed only while the group has no members; otherwise the member must exist
  // (kUnknownMemberId) and the epoch must be its current one (kStaleMemberEpoch).
  Status CheckCommit(std::string_view member_id, int32_t member_epoch) const;

  GroupDescription Describe() const;
  bool empty() const noexcept;
  int32_t group_epoch() const noexcept;
  const std::string& group_id() const noexcept;

  struct Impl;  // group/group_impl.h

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmq::group
