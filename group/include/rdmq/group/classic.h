// ClassicGroup: one consumer group under Kafka's classic group protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup), as a pure state machine that behaves like the Kafka broker's group
// coordinator. docs/groups.md, "The classic protocol", describes it for clients.
//
// States: Empty (no members) -> PreparingRebalance (members (re)join; JoinGroup answers wait)
// -> CompletingRebalance (a new generation: the leader got every member's metadata and computes
// the assignment; SyncGroup answers wait for the leader's) -> Stable (everyone has its
// assignment); Dead once unloaded.
//
// Sans-I/O like Group: no I/O, no threads, no clock (the caller passes `now`), no lock (the broker
// holds its own mutex around every call), and no callbacks. A JoinGroup or SyncGroup that has to
// wait for other members carries a caller-chosen Token: the call returns nullopt, and the answer
// comes later as a ClassicCompletion {token, response} that the caller takes with
// TakeCompletions() after every call, including Tick(). An answer that is ready at once is
// returned by the call itself. Every token given to Join() or Sync() is answered exactly once:
// by a completion when the call returned nullopt (possibly already among the completions of that
// same call, when it completed the phase itself), never when it returned a response. Call
// Tick(now) at or after NextDeadline(); every other call also processes what is due at `now`
// first, so the outcome never depends on when Tick last ran.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/group/errors.h"
#include "rdmq/group/group.h"

namespace rdmq::group {

enum class ClassicState { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable, kDead };
// Kafka's names: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead".
std::string_view ClassicStateName(ClassicState state) noexcept;

struct ClassicConfig {
  // Kafka's group.initial.rebalance.delay.ms: the first rebalance of an Empty group waits this
  // long for more members, and again (up to the rebalance timeout) while new members keep coming.
  std::chrono::milliseconds initial_rebalance_delay{3000};
  // Kafka's group.min/max.session.timeout.ms: a JoinGroup asking for a session timeout outside
  // them is refused (kInvalidSessionTimeout).
  std::chrono::milliseconds min_session_timeout{6000};
  std::chrono::milliseconds max_session_timeout{1800000};
  // Most members at once (Kafka's group.max.size); 0 = no limit.
  int32_t max_size = 0;
  // A new member's JoinGroup is answered UNKNOWN_MEMBER_ID if the rebalance has not completed
  // this long after it (Kafka's group.classic.new.member.join.timeout.ms, 5 minutes).
  std::chrono::milliseconds new_member_join_timeout{300000};
  // Generated member ids are "<client id or instance id>-<salt>-<n>": pass something unique to
  // the broker incarnation (membership is not persisted).
  std::string member_id_salt;
};

using Token = uint64_t;  // the caller's name for a waiting JoinGroup or SyncGroup

struct ClassicProtocol {
  std::string name;      // e.g. "range", "cooperative-sticky"
  std::string metadata;  // opaque bytes; for protocol type "consumer" a ConsumerProtocolSubscription
};

struct ClassicJoinRequest {
  std::string member_id;                   // empty: a new member
  std::string instance_id;                 // group.instance.id (JoinGroup v5+); empty: a dynamic member
  std::string client_id;                   // the request header's client id
  std::string client_host;                 // the client's address, shown by Describe
  std::string protocol_type;               // "consumer" for consumers
  std::vector<ClassicProtocol> protocols;  // in the member's order of preference
  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};  // JoinGroup v0: pass the session timeout
  // JoinGroup v4+: a new dynamic member gets kMemberIdRequired with a member id to rejoin with.
  bool require_known_member_id = false;
  // JoinGroup v9+ (KIP-814): a static leader replaced in a Stable group is told so with
  // skip_assignment instead of being given another member's id as leader.
  bool supports_skip_assignment = false;
};

struct ClassicJoinMember {
  std::string member_id;
  std::string instance_id;
  std::string metadata;  // for the chosen protocol
};

struct ClassicJoinResponse {
  // OK, or kMemberIdRequired (member_id set), kUnknownMemberId, kFencedInstanceId,
  // kInconsistentGroupProtocol, kInvalidSessionTimeout, kGroupMaxSizeReached,
  // kRebalanceInProgress (a newer JoinGroup of the same member replaced this one),
  // kCoordinatorNotAvailable / kNotCoordinator (the group was unloaded).
  Status status;
  std::string member_id;  // the member's id (new on a join without one); empty on most errors
  int32_t generation_id = -1;
  std::string protocol_type;  // empty = null
  std::string protocol_name;  // empty = null
  std::string leader_id;
  bool skip_assignment = false;
  std::vector<ClassicJoinMember> members;  // the leader's answer lists every member; followers' is empty
  bool ok() const noexcept { return status.ok(); }
};

struct ClassicSyncRequest {
  std::string member_id;
  std::string instance_id;
  int32_t generation_id = -1;
  std::string protocol_type;  // SyncGroup v5+; empty = not given
  std::string protocol_name;  // SyncGroup v5+; empty = not given
  // The leader's assignment: member id -> bytes. Followers send none. Members left out get empty
  // bytes; ids not in the group are ignored.
  std::vector<std::pair<std::string, std::string>> assignments;
};

struct ClassicSyncResponse {
  // OK, or kUnknownMemberId, kFencedInstanceId, kIllegalGeneration, kInconsistentGroupProtocol,
  // kRebalanceInProgress (rejoin), kCoordinatorNotAvailable / kNotCoordinator.
  Status status;
  std::string protocol_type;
  std::string protocol_name;
  std::string assignment;  // for protocol type "consumer" a ConsumerProtocolAssignment
  bool ok() const noexcept { return status.ok(); }
};

struct ClassicHeartbeatRequest {
  std::string member_id;
  std::string instance_id;
  int32_t generation_id = -1;
};

struct ClassicLeaveMember {
  std::string member_id;    // may be empty when instance_id names the member (LeaveGroup v3+)
  std::string instance_id;  // LeaveGroup v3+
};

struct ClassicLeaveResponse {
  Status status;  // group level: OK or kCoordinatorNotAvailable
  // One per request member, in order: OK, kUnknownMemberId or kFencedInstanceId. LeaveGroup
  // v0-v2 (one member) answers with this member's status as the top-level error.
  std::vector<Status> members;
};

using ClassicResponse = std::variant<ClassicJoinResponse, ClassicSyncResponse>;
struct ClassicCompletion {
  Token token = 0;
  ClassicResponse
      response;  // a JoinGroup's token gets a ClassicJoinResponse, a SyncGroup's a ClassicSyncResponse
};

struct ClassicMemberDescription {
  std::string member_id;
  std::string instance_id;
  std::string client_id;
  std::string client_host;
  std::vector<std::string> protocols;  // the names it supports, in its order
  // The member's metadata for the chosen protocol (for its first protocol while none is chosen).
  std::string metadata;
  std::string assignment;  // what the last SyncGroup gave it (empty while none)
  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};
};

struct ClassicGroupDescription {
  std::string group_id;
  ClassicState state = ClassicState::kEmpty;
  std::string protocol_type;
  // The protocol chosen for the current generation (empty while none). Kafka's DescribeGroups
  // reports it, and members' metadata and assignments, only while the group is Stable.
  std::string protocol_name;
  int32_t generation_id = 0;
  std::string leader_id;
  std::vector<ClassicMemberDescription> members;  // sorted by member id
  size_t pending_members = 0;                     // told MEMBER_ID_REQUIRED, not yet rejoined
};

class ClassicGroup {
 public:
  explicit ClassicGroup(std::string group_id, ClassicConfig config = {});
  ~ClassicGroup();
  ClassicGroup(ClassicGroup&&) noexcept;
  ClassicGroup& operator=(ClassicGroup&&) noexcept;
  ClassicGroup(const ClassicGroup&) = delete;
  ClassicGroup& operator=(const ClassicGroup&) = delete;

  // JoinGroup. Returns the answer when it is ready now (errors, MEMBER_ID_REQUIRED, a follower
  // rejoining a Stable group unchanged, a static member replacing itself), else nullopt: the
  // answer comes as a completion for `token` once the rebalance's join phase completes (every
  // member rejoined, or the rebalance timeout or initial delay passed).
  std::optional<ClassicJoinResponse> Join(Token token, const ClassicJoinRequest& request, TimePoint now);

  // SyncGroup. Returns the answer when ready now (errors; the member's assignment in a Stable
  // group), else nullopt: the answer comes as a completion once the leader's SyncGroup arrived
  // (the leader's own too), or with kRebalanceInProgress if a new rebalance starts first.
  std::optional<ClassicSyncResponse> Sync(Token token, const ClassicSyncRequest& request, TimePoint now);

  // OK (Stable, CompletingRebalance), kRebalanceInProgress (PreparingRebalance: rejoin),
  // kIllegalGeneration, kUnknownMemberId, kFencedInstanceId, kCoordinatorNotAvailable.
  Status Heartbeat(const ClassicHeartbeatRequest& request, TimePoint now);

  // LeaveGroup: each member is removed at once (a static member too) and the group rebalances.
  ClassicLeaveResponse Leave(const std::vector<ClassicLeaveMember>& members, TimePoint now);

  // Whether an OffsetCommit may proceed. generation_id < 0 with no member id and no instance id
  // is a "simple" commit, allowed while the group is Empty or has no members
  // (kUnknownMemberId otherwise). Anything else must name a current member (kUnknownMemberId,
  // kFencedInstanceId) at the group's generation (kIllegalGeneration), and is refused with
  // kRebalanceInProgress while the group is CompletingRebalance. kCoordinatorNotAvailable when
  // Dead.
  Status CheckCommit(std::string_view member_id, std::string_view instance_id, int32_t generation_id,
                     TimePoint now);

  // Session timeouts, pending members' and new members' timeouts, the end of the initial delay
  // and of the rebalance timeout (join and sync phases).
  void Tick(TimePoint now);
  // When Tick() has something to do next; nullopt when nothing is scheduled.
  std::optional<TimePoint> NextDeadline() const;

  // The answers to waiting tokens produced since the last call, oldest first.
  std::vector<ClassicCompletion> TakeCompletions();
  bool has_completions() const noexcept;

  // The group goes Dead: every waiting JoinGroup and SyncGroup is answered with `error`
  // (kNotCoordinator or kCoordinatorNotAvailable) and later calls get kCoordinatorNotAvailable.
  void Unload(ClassicErrc error);

  ClassicGroupDescription Describe() const;
  ClassicState state() const noexcept;
  int32_t generation_id() const noexcept;
  // No members and no pending members: the group may be forgotten (nothing waits on it).
  bool empty() const noexcept;
  size_t member_count() const noexcept;
  const std::string& group_id() const noexcept;

  struct Impl;  // group/classic_impl.h

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmq::group
