// ClassicGroup JoinGroup: a new member (MEMBER_ID_REQUIRED, a static member taking its old
// place, or added with a rebalance) and a known member rejoining (in each state, as Kafka's
// GroupCoordinator decides).
#include <algorithm>

#include "classic_impl.h"

namespace rdmq::group {

using internal::ClassicMember;

namespace {

ClassicJoinResponse JoinError(ClassicErrc e, std::string message, std::string member_id) {
  ClassicJoinResponse r;
  r.status = Status(e, std::move(message));
  r.member_id = std::move(member_id);
  return r;
}

std::string Names(const std::vector<ClassicProtocol>& protocols) {
  std::string out;
  for (const auto& p : protocols) out += (out.empty() ? "" : ",") + p.name;
  return out.empty() ? "none" : out;
}

}  // namespace

// Kafka's acceptJoiningMember, except that a static member taking its own old place is always
// accepted (it adds nobody).
bool ClassicGroup::Impl::AcceptJoiningMember(const std::string& member_id) const {
  if (config.max_size <= 0) return true;
  const auto max = static_cast<size_t>(config.max_size);
  switch (state) {
    case ClassicState::kEmpty:
    case ClassicState::kDead:
      return true;
    case ClassicState::kPreparingRebalance: {
      auto it = members.find(member_id);
      if (it != members.end() && it->second.join_token) return true;
      const auto waiting = static_cast<size_t>(std::count_if(
          members.begin(), members.end(), [](const auto& kv) { return kv.second.join_token.has_value(); }));
      return waiting < max;
    }
    case ClassicState::kCompletingRebalance:
    case ClassicState::kStable:
      return members.count(member_id) != 0 || members.size() < max;
  }
  return true;
}

std::optional<ClassicJoinResponse> ClassicGroup::Impl::Join(Token token, const ClassicJoinRequest& r,
                                                            TimePoint now) {
  if (state == ClassicState::kDead) {
    return JoinError(ClassicErrc::kCoordinatorNotAvailable, "group " + group_id + " is unloaded",
                     r.member_id);
  }
  if (r.session_timeout < config.min_session_timeout || r.session_timeout > config.max_session_timeout) {
    return JoinError(ClassicErrc::kInvalidSessionTimeout,
                     "session.timeout.ms=" + std::to_string(r.session_timeout.count()) +
                         ": the broker accepts " + std::to_string(config.min_session_timeout.count()) +
                         " to " + std::to_string(config.max_session_timeout.count()) +
                         " (group.min/max.session.timeout.ms)",
                     r.member_id);
  }
  const bool replacing =
      r.member_id.empty() && !r.instance_id.empty() && static_members.count(r.instance_id) != 0;
  if (!replacing && !AcceptJoiningMember(r.member_id)) {
    if (members.count(r.member_id) != 0 || pending_members.count(r.member_id) != 0) {
      RemoveMember(r.member_id);  // it has no waiting request (AcceptJoiningMember accepts those)
      MaybeCompleteJoinPhase(now);
    }
    return JoinError(
        ClassicErrc::kGroupMaxSizeReached,
        "group " + group_id + " has group.max.size=" + std::to_string(config.max_size) + " members", "");
  }
  return r.member_id.empty() ? JoinNew(token, r, now) : JoinExisting(token, r, now);
}

std::optional<ClassicJoinResponse> ClassicGroup::Impl::JoinNew(Token token, const ClassicJoinRequest& r,
                                                               TimePoint now) {
  if (!SupportsProtocols(r.protocol_type, r.protocols)) {
    return JoinError(ClassicErrc::kInconsistentGroupProtocol,
                     "group " + group_id + " has protocol type '" + protocol_type +
                         "' and protocols its members all support; the member offers type '" +
                         r.protocol_type + "' with " + Names(r.protocols),
                     "");
  }
  const bool is_static = !r.instance_id.empty();
  const std::string new_id =
      NewMemberId(is_static ? r.instance_id : (r.client_id.empty() ? "member" : r.client_id));
  if (is_static) {
    auto it = static_members.find(r.instance_id);
    if (it != static_members.end()) return ReplaceStatic(token, it->second, new_id, r, now);
    return AddAndRebalance(token, new_id, r, now);
  }
  if (r.require_known_member_id) {
    pending_members[new_id] = now + r.session_timeout;
    return JoinError(ClassicErrc::kMemberIdRequired, "rejoin with member id " + new_id, new_id);
  }
  return AddAndRebalance(token, new_id, r, now);
}

std::optional<ClassicJoinResponse> ClassicGroup::Impl::JoinExisting(Token token, const ClassicJoinRequest& r,
                                                                    TimePoint now) {
  const std::string& id = r.member_id;
  if (!SupportsProtocols(r.protocol_type, r.protocols)) {
    return JoinError(ClassicErrc::kInconsistentGroupProtocol,
                     "member " + id + " offers type '" + r.protocol_type + "' with " + Names(r.protocols) +
                         ", which the other members of group " + group_id + " do not all support",
                     id);
  }
  if (pending_members.count(id) != 0) {
    if (!r.instance_id.empty()) {
      return JoinError(ClassicErrc::kUnknownMemberId, "a pending member id with a group.instance.id", id);
    }
    return AddAndRebalance(token, id, r, now);
  }
  if (Status s = ValidateMember(id, r.instance_id); !s.ok()) {
    ClassicJoinResponse out;
    out.status = std::move(s);
    out.member_id = id;
    return out;
  }
  ClassicMember& m = members.at(id);
  switch (state) {
    case ClassicState::kPreparingRebalance:
      UpdateMember(m, r, token);
      MaybePrepareRebalanceOrCompleteJoin(now);
      return std::nullopt;
    case ClassicState::kCompletingRebalance:
      // The same metadata again: it missed its JoinGroup answer; give it the current generation.
      if (m.Matches(r.protocols)) return CurrentGeneration(id, id == leader);
      UpdateMember(m, r, token);
      MaybePrepareRebalanceOrCompleteJoin(now);
      return std::nullopt;
    case ClassicState::kStable:
      // The leader's JoinGroup always rebalances (it may have seen metadata change that the
      // members' metadata does not show); a follower's only when its metadata changed.
      if (id != leader && m.Matches(r.protocols)) return CurrentGeneration(id, false);
      UpdateMember(m, r, token);
      MaybePrepareRebalanceOrCompleteJoin(now);
      return std::nullopt;
    case ClassicState::kEmpty:
    case ClassicState::kDead:
      break;
  }
  return JoinError(ClassicErrc::kUnknownMemberId,
                   "group " + group_id + " is " + std::string(ClassicStateName(state)), id);
}

std::optional<ClassicJoinResponse> ClassicGroup::Impl::AddAndRebalance(Token token, const std::string& id,
                                                                       const ClassicJoinRequest& r,
                                                                       TimePoint now) {
  ClassicMember m;
  m.id = id;
  m.instance_id = r.instance_id;
  m.client_id = r.client_id;
  m.client_host = r.client_host;
  m.protocol_type = r.protocol_type;
  m.protocols = r.protocols;
  m.session_timeout = r.session_timeout;
  m.rebalance_timeout = r.rebalance_timeout;
  m.join_token = token;
  m.is_new = true;
  // A new member cannot heartbeat before its JoinGroup is answered; if the rebalance does not
  // complete in time it is dropped, and retries if it is still there.
  m.heartbeat_deadline = now + config.new_member_join_timeout;
  if (state == ClassicState::kPreparingRebalance && previous_state == ClassicState::kEmpty) {
    new_member_added = true;
  }
  AddMember(std::move(m));
  MaybePrepareRebalanceOrCompleteJoin(now);
  return std::nullopt;
}

// A static member restarting (instance id known, no member id): the new member id takes the old
// one's place, assignment and leadership; the old id is fenced (its waiting requests get
// FENCED_INSTANCE_ID, later ones UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID). In a Stable group
// whose chosen protocol stays the same, nothing rebalances and the answer is immediate.
std::optional<ClassicJoinResponse> ClassicGroup::Impl::ReplaceStatic(Token token, const std::string& old_id,
                                                                     const std::string& new_id,
                                                                     const ClassicJoinRequest& r,
                                                                     TimePoint now) {
  const std::string old_leader = leader;
  auto node = members.extract(old_id);
  ClassicMember& m = node.mapped();
  const std::string fenced = "group.instance.id '" + r.instance_id + "' was taken over by member " + new_id;
  ClassicJoinResponse jr = JoinError(ClassicErrc::kFencedInstanceId, fenced, old_id);
  AnswerJoin(m, std::move(jr));
  ClassicSyncResponse sr;
  sr.status = Status(ClassicErrc::kFencedInstanceId, fenced);
  AnswerSync(m, std::move(sr));
  m.id = new_id;
  m.client_id = r.client_id;
  m.client_host = r.client_host;
  m.is_new = false;
  node.key() = new_id;
  ClassicMember& nm = members.insert(std::move(node)).position->second;
  if (leader == old_id) leader = new_id;
  static_members[r.instance_id] = new_id;
  if (pending_sync.erase(old_id) != 0) pending_sync.insert(new_id);
  UpdateMember(nm, r, token);
  nm.heartbeat_deadline = now + nm.session_timeout;

  switch (state) {
    case ClassicState::kStable:
      if (SelectProtocol() == protocol_name) {
        nm.join_token.reset();  // answered here
        ClassicJoinResponse out = CurrentGeneration(new_id, false);
        if (r.supports_skip_assignment) {
          // KIP-814: a replaced leader learns it leads (with the members, for its own bookkeeping)
          // but must not assign: a Stable group would not pass a new assignment on.
          const bool is_leader = leader == new_id;
          if (is_leader) out.members = JoinMembers();
          out.skip_assignment = is_leader;
        } else {
          // Older clients are given the old leader id so that a replaced leader does not see
          // itself as leader and compute an assignment nobody would receive.
          out.leader_id = old_leader;
        }
        return out;
      }
      MaybePrepareRebalanceOrCompleteJoin(now);
      return std::nullopt;
    case ClassicState::kCompletingRebalance:
      // The leader may have been sent the old member id: rebalance so that ids agree.
      PrepareRebalance(now);
      return std::nullopt;
    case ClassicState::kPreparingRebalance:
      MaybeCompleteJoinPhase(now);
      return std::nullopt;
    case ClassicState::kEmpty:
    case ClassicState::kDead:
      break;
  }
  MaybePrepareRebalanceOrCompleteJoin(now);
  return std::nullopt;
}

void ClassicGroup::Impl::UpdateMember(ClassicMember& m, const ClassicJoinRequest& r, Token token) {
  m.protocols = r.protocols;
  m.session_timeout = r.session_timeout;
  m.rebalance_timeout = r.rebalance_timeout;
  SetJoinToken(m, token);
}

}  // namespace rdmq::group
