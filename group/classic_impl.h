// ClassicGroup::Impl: the state of one classic group and the steps its calls are made of.
//
// Timers are deadlines in the state, not callbacks: each member's heartbeat deadline, each
// pending member's, the join phase's (initial delay or rebalance timeout) and the sync phase's.
// Advance(now) fires every deadline at or before `now`, earliest first; each public call runs it
// before and after its own work.
//
// Invariant: a token is held by at most one member (join_token or sync_token), and every token
// that leaves the state (answered, replaced, member removed, group unloaded) is answered exactly
// once through `completions` (or returned by the call that brought it).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rdmq/group/classic.h"

namespace rdmq::group {

namespace internal {

struct ClassicMember {
  std::string id;
  std::string instance_id;
  std::string client_id;
  std::string client_host;
  std::string protocol_type;
  std::vector<ClassicProtocol> protocols;  // distinct names, in the member's order
  std::chrono::milliseconds session_timeout{0};
  std::chrono::milliseconds rebalance_timeout{0};
  std::optional<Token> join_token;  // awaiting its JoinGroup answer
  std::optional<Token> sync_token;  // awaiting its SyncGroup answer
  std::string assignment;
  bool is_new = false;  // joined in this rebalance; expires after new_member_join_timeout
  // When the member is removed unless it heartbeats (or, when the deadline passes while it is
  // waiting for a JoinGroup or SyncGroup answer and is not new, until it is rescheduled).
  std::optional<TimePoint> heartbeat_deadline;

  bool Supports(const std::string& protocol) const;
  const std::string* Metadata(const std::string& protocol) const;
  // The first of its protocols that is among `candidates`.
  std::string Vote(const std::set<std::string>& candidates) const;
  bool Matches(const std::vector<ClassicProtocol>& other) const;
};

}  // namespace internal

struct ClassicGroup::Impl {
  Impl(std::string id, ClassicConfig cfg) : group_id(std::move(id)), config(std::move(cfg)) {}

  std::string group_id;
  ClassicConfig config;
  ClassicState state = ClassicState::kEmpty;
  ClassicState previous_state = ClassicState::kEmpty;
  int32_t generation = 0;
  std::string protocol_type;  // of the members ("" while there are none)
  std::string protocol_name;  // chosen for the generation ("" while none)
  std::string leader;         // "" while none
  std::map<std::string, internal::ClassicMember> members;
  std::map<std::string, std::string> static_members;  // instance id -> member id
  std::map<std::string, TimePoint> pending_members;   // MEMBER_ID_REQUIRED given; id -> deadline
  std::set<std::string> pending_sync;                 // joined this generation, not yet synced
  bool new_member_added = false;                      // during the initial delay
  std::optional<TimePoint> join_deadline;             // PreparingRebalance: the join phase ends
  bool initial_delay = false;                         // join_deadline is the initial delay's
  std::chrono::milliseconds initial_delay_step{0};    // the current initial delay
  std::chrono::milliseconds initial_remaining{0};     // what the rebalance timeout leaves of it
  std::optional<TimePoint> sync_deadline;             // pending_sync members are removed then
  std::vector<ClassicCompletion> completions;
  uint64_t next_member = 1;

  // classic_members.cc
  Status ValidateMember(const std::string& member_id, const std::string& instance_id) const;
  bool SupportsProtocols(const std::string& type, const std::vector<ClassicProtocol>& protocols) const;
  std::string SelectProtocol() const;
  std::chrono::milliseconds RebalanceTimeout() const;
  bool AllMembersJoined() const;
  std::string NewMemberId(const std::string& prefix);
  void AddMember(internal::ClassicMember m);
  void RemoveMember(const std::string& id);  // no answers, no rebalance
  void RemoveAndRebalance(const std::string& id, TimePoint now);
  std::vector<ClassicJoinMember> JoinMembers() const;
  void AnswerJoin(internal::ClassicMember& m, ClassicJoinResponse r);
  void AnswerSync(internal::ClassicMember& m, ClassicSyncResponse r);
  void SetJoinToken(internal::ClassicMember& m, Token token);
  void SetSyncToken(internal::ClassicMember& m, Token token);
  ClassicJoinResponse CurrentGeneration(const std::string& member_id, bool with_members) const;
  void Transition(ClassicState to);

  // classic_join.cc
  std::optional<ClassicJoinResponse> Join(Token token, const ClassicJoinRequest& r, TimePoint now);
  std::optional<ClassicJoinResponse> JoinNew(Token token, const ClassicJoinRequest& r, TimePoint now);
  std::optional<ClassicJoinResponse> JoinExisting(Token token, const ClassicJoinRequest& r, TimePoint now);
  std::optional<ClassicJoinResponse> AddAndRebalance(Token token, const std::string& id,
                                                     const ClassicJoinRequest& r, TimePoint now);
  std::optional<ClassicJoinResponse> ReplaceStatic(Token token, const std::string& old_id,
                                                   const std::string& new_id, const ClassicJoinRequest& r,
                                                   TimePoint now);
  void UpdateMember(internal::ClassicMember& m, const ClassicJoinRequest& r, Token token);
  bool AcceptJoiningMember(const std::string& member_id) const;

  // classic_rebalance.cc
  void MaybePrepareRebalanceOrCompleteJoin(TimePoint now);
  void PrepareRebalance(TimePoint now);
  void MaybeCompleteJoinPhase(TimePoint now);
  void CompleteJoin(TimePoint now);
  void PropagateAssignment(TimePoint now);
  void ResetAssignmentsWithError(ClassicErrc error, TimePoint now);
  void Advance(TimePoint now);
  std::optional<TimePoint> Next() const;
  void FireJoinDeadline(TimePoint now);
  void FireSyncDeadline(TimePoint now);
  void FireHeartbeat(const std::string& id, TimePoint now);
  void FirePending(const std::string& id, TimePoint now);
};

}  // namespace rdmq::group
