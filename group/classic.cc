// ClassicGroup's public calls: each fires what is due at `now`, does its work (JoinGroup in
// classic_join.cc; SyncGroup, Heartbeat, LeaveGroup, commit checks here), then fires what its
// work made due at once (a zero initial delay).
#include "rdmq/group/classic.h"

#include <set>

#include "classic_impl.h"

namespace rdmq::group {

using internal::ClassicMember;

namespace {

// A protocol named twice counts once, with its first metadata.
std::vector<ClassicProtocol> Distinct(const std::vector<ClassicProtocol>& in) {
  std::vector<ClassicProtocol> out;
  std::set<std::string> seen;
  for (const auto& p : in) {
    if (seen.insert(p.name).second) out.push_back(p);
  }
  return out;
}

ClassicSyncResponse SyncError(Status s) {
  ClassicSyncResponse r;
  r.status = std::move(s);
  return r;
}

}  // namespace

ClassicGroup::ClassicGroup(std::string group_id, ClassicConfig config)
    : impl_(std::make_unique<Impl>(std::move(group_id), std::move(config))) {}
ClassicGroup::~ClassicGroup() = default;
ClassicGroup::ClassicGroup(ClassicGroup&&) noexcept = default;
ClassicGroup& ClassicGroup::operator=(ClassicGroup&&) noexcept = default;

std::optional<ClassicJoinResponse> ClassicGroup::Join(Token token, const ClassicJoinRequest& request,
                                                      TimePoint now) {
  Impl& g = *impl_;
  g.Advance(now);
  ClassicJoinRequest r = request;
  r.protocols = Distinct(request.protocols);
  auto out = g.Join(token, r, now);
  g.Advance(now);
  return out;
}

std::optional<ClassicSyncResponse> ClassicGroup::Sync(Token token, const ClassicSyncRequest& r,
                                                      TimePoint now) {
  Impl& g = *impl_;
  g.Advance(now);
  if (g.state == ClassicState::kDead) {
    return SyncError(Status(ClassicErrc::kCoordinatorNotAvailable, "group " + g.group_id + " is unloaded"));
  }
  if (Status s = g.ValidateMember(r.member_id, r.instance_id); !s.ok()) return SyncError(std::move(s));
  if (r.generation_id != g.generation) {
    return SyncError(Status(ClassicErrc::kIllegalGeneration, "generation " + std::to_string(r.generation_id) +
                                                                 "; group " + g.group_id + " is at " +
                                                                 std::to_string(g.generation)));
  }
  if ((!r.protocol_type.empty() && r.protocol_type != g.protocol_type) ||
      (!r.protocol_name.empty() && !g.protocol_name.empty() && r.protocol_name != g.protocol_name)) {
    return SyncError(Status(ClassicErrc::kInconsistentGroupProtocol,
                            "the group uses " + g.protocol_type + "/" + g.protocol_name +
                                ", the request names " + r.protocol_type + "/" + r.protocol_name));
  }
  ClassicMember& m = g.members.at(r.member_id);
  std::optional<ClassicSyncResponse> out;
  switch (g.state) {
    case ClassicState::kPreparingRebalance:
      return SyncError(
          Status(ClassicErrc::kRebalanceInProgress, "group " + g.group_id + " is rebalancing: rejoin"));
    case ClassicState::kCompletingRebalance:
      g.SetSyncToken(m, token);
      g.pending_sync.erase(m.id);
      if (g.pending_sync.empty()) g.sync_deadline.reset();
      if (m.id == g.leader) {
        std::map<std::string, std::string> given;
        for (const auto& [id, bytes] : r.assignments) given[id] = bytes;
        for (auto& [id, member] : g.members) {
          auto it = given.find(id);
          member.assignment = it != given.end() ? it->second : std::string();
        }
        g.PropagateAssignment(now);
        g.Transition(ClassicState::kStable);
      }
      break;
    case ClassicState::kStable:
      g.pending_sync.erase(m.id);
      if (g.pending_sync.empty()) g.sync_deadline.reset();
      out.emplace();
      out->protocol_type = g.protocol_type;
      out->protocol_name = g.protocol_name;
      out->assignment = m.assignment;
      break;
    case ClassicState::kEmpty:
    case ClassicState::kDead:
      return SyncError(Status(ClassicErrc::kUnknownMemberId, "group " + g.group_id + " is empty"));
  }
  g.Advance(now);
  return out;
}

Status ClassicGroup::Heartbeat(const ClassicHeartbeatRequest& r, TimePoint now) {
  Impl& g = *impl_;
  g.Advance(now);
  if (g.state == ClassicState::kDead) {
    return Status(ClassicErrc::kCoordinatorNotAvailable, "group " + g.group_id + " is unloaded");
  }
  RDMQ_RETURN_IF_ERROR(g.ValidateMember(r.member_id, r.instance_id));
  if (r.generation_id != g.generation) {
    return Status(ClassicErrc::kIllegalGeneration, "generation " + std::to_string(r.generation_id) +
                                                       "; group " + g.group_id + " is at " +
                                                       std::to_string(g.generation));
  }
  ClassicMember& m = g.members.at(r.member_id);
  switch (g.state) {
    case ClassicState::kPreparingRebalance:
      m.heartbeat_deadline = now + m.session_timeout;
      return Status(ClassicErrc::kRebalanceInProgress, "group " + g.group_id + " is rebalancing: rejoin");
    case ClassicState::kCompletingRebalance:  // heartbeats may come between JoinGroup and SyncGroup
    case ClassicState::kStable:
      m.heartbeat_deadline = now + m.session_timeout;
      return Status::Ok();
    case ClassicState::kEmpty:
    case ClassicState::kDead:
      break;
  }
  return Status(ClassicErrc::kUnknownMemberId, "group " + g.group_id + " is empty");
}

ClassicLeaveResponse ClassicGroup::Leave(const std::vector<ClassicLeaveMember>& leaving, TimePoint now) {
  Impl& g = *impl_;
  g.Advance(now);
  ClassicLeaveResponse out;
  if (g.state == ClassicState::kDead) {
    out.status = Status(ClassicErrc::kCoordinatorNotAvailable, "group " + g.group_id + " is unloaded");
    out.members.assign(leaving.size(), out.status);
    return out;
  }
  for (const auto& lm : leaving) {
    if (lm.member_id.empty()) {
      // Removal by instance id alone (AdminClient.removeMembersFromConsumerGroup).
      auto it = lm.instance_id.empty() ? g.static_members.end() : g.static_members.find(lm.instance_id);
      if (it == g.static_members.end()) {
        out.members.push_back(Status(ClassicErrc::kUnknownMemberId,
                                     "no member has group.instance.id '" + lm.instance_id + "'"));
        continue;
      }
      g.RemoveAndRebalance(std::string(it->second), now);
    } else if (g.pending_members.erase(lm.member_id) != 0) {
      g.MaybeCompleteJoinPhase(now);
    } else {
      Status s = g.ValidateMember(lm.member_id, lm.instance_id);
      if (!s.ok()) {
        out.members.push_back(std::move(s));
        continue;
      }
      g.RemoveAndRebalance(lm.member_id, now);
    }
    out.members.push_back(Status::Ok());
  }
  g.Advance(now);
  return out;
}

Status ClassicGroup::CheckCommit(std::string_view member_id, std::string_view instance_id,
                                 int32_t generation_id, TimePoint now) {
  Impl& g = *impl_;
  g.Advance(now);
  if (g.state == ClassicState::kDead) {
    return Status(ClassicErrc::kCoordinatorNotAvailable, "group " + g.group_id + " is unloaded");
  }
  const bool simple = generation_id < 0 && member_id.empty() && instance_id.empty();
  if (generation_id < 0 && g.state == ClassicState::kEmpty) return Status::Ok();
  if (simple && g.members.empty()) return Status::Ok();
  if (simple) {
    return Status(ClassicErrc::kUnknownMemberId,
                  "a commit from outside the group (generation -1, no member id) "
                  "while group " +
                      g.group_id + " has members");
  }
  RDMQ_RETURN_IF_ERROR(g.ValidateMember(std::string(member_id), std::string(instance_id)));
  if (generation_id != g.generation) {
    return Status(ClassicErrc::kIllegalGeneration, "generation " + std::to_string(generation_id) +
                                                       "; group " + g.group_id + " is at " +
                                                       std::to_string(g.generation));
  }
  if (g.state == ClassicState::kCompletingRebalance) {
    return Status(ClassicErrc::kRebalanceInProgress, "group " + g.group_id + " is completing a rebalance");
  }
  return Status::Ok();
}

void ClassicGroup::Tick(TimePoint now) { impl_->Advance(now); }

std::optional<TimePoint> ClassicGroup::NextDeadline() const { return impl_->Next(); }

std::vector<ClassicCompletion> ClassicGroup::TakeCompletions() {
  return std::exchange(impl_->completions, {});
}

bool ClassicGroup::has_completions() const noexcept { return !impl_->completions.empty(); }

void ClassicGroup::Unload(ClassicErrc error) {
  Impl& g = *impl_;
  const std::string why = "group " + g.group_id + " was unloaded";
  for (auto& [id, m] : g.members) {
    ClassicJoinResponse jr;
    jr.status = Status(error, why);
    jr.member_id = id;
    g.AnswerJoin(m, std::move(jr));
    g.AnswerSync(m, SyncError(Status(error, why)));
    m.heartbeat_deadline.reset();
  }
  g.pending_members.clear();
  g.pending_sync.clear();
  g.join_deadline.reset();
  g.sync_deadline.reset();
  g.Transition(ClassicState::kDead);
}

ClassicState ClassicGroup::state() const noexcept { return impl_->state; }
int32_t ClassicGroup::generation_id() const noexcept { return impl_->generation; }
bool ClassicGroup::empty() const noexcept { return impl_->members.empty() && impl_->pending_members.empty(); }
size_t ClassicGroup::member_count() const noexcept { return impl_->members.size(); }
const std::string& ClassicGroup::group_id() const noexcept { return impl_->group_id; }

}  // namespace rdmq::group
