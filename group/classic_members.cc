// ClassicGroup membership: members and their protocols, member validation, the protocol vote,
// adding and removing members, answering waiting tokens, state transitions and Describe.
#include <algorithm>
#include <map>

#include "classic_impl.h"

namespace rdmq::group {

using internal::ClassicMember;

std::string_view ClassicStateName(ClassicState state) noexcept {
  switch (state) {
    case ClassicState::kEmpty:
      return "Empty";
    case ClassicState::kPreparingRebalance:
      return "PreparingRebalance";
    case ClassicState::kCompletingRebalance:
      return "CompletingRebalance";
    case ClassicState::kStable:
      return "Stable";
    case ClassicState::kDead:
      return "Dead";
  }
  return "Unknown";
}

namespace internal {

bool ClassicMember::Supports(const std::string& protocol) const { return Metadata(protocol) != nullptr; }

const std::string* ClassicMember::Metadata(const std::string& protocol) const {
  for (const auto& p : protocols) {
    if (p.name == protocol) return &p.metadata;
  }
  return nullptr;
}

std::string ClassicMember::Vote(const std::set<std::string>& candidates) const {
  for (const auto& p : protocols) {
    if (candidates.count(p.name) != 0) return p.name;
  }
  return {};
}

bool ClassicMember::Matches(const std::vector<ClassicProtocol>& other) const {
  if (other.size() != protocols.size()) return false;
  for (size_t i = 0; i < other.size(); ++i) {
    if (other[i].name != protocols[i].name || other[i].metadata != protocols[i].metadata) return false;
  }
  return true;
}

}  // namespace internal

// Kafka's validateMember: an instance id must belong to this member id.
Status ClassicGroup::Impl::ValidateMember(const std::string& member_id,
                                          const std::string& instance_id) const {
  if (!instance_id.empty()) {
    auto it = static_members.find(instance_id);
    if (it == static_members.end()) {
      return Status(ClassicErrc::kUnknownMemberId, "no member has group.instance.id '" + instance_id + "'");
    }
    if (it->second != member_id) {
      return Status(
          ClassicErrc::kFencedInstanceId,
          "group.instance.id '" + instance_id + "' now belongs to " + it->second + ", not " + member_id);
    }
  }
  if (members.count(member_id) == 0) {
    return Status(ClassicErrc::kUnknownMemberId, "group " + group_id + " has no member '" + member_id + "'");
  }
  return Status::Ok();
}

// A group without members takes any protocol type and list; otherwise the type must be the
// members' and at least one protocol must be supported by every member.
bool ClassicGroup::Impl::SupportsProtocols(const std::string& type,
                                           const std::vector<ClassicProtocol>& protocols) const {
  if (type.empty() || protocols.empty()) return false;
  if (members.empty()) return true;
  if (type != protocol_type) return false;
  return std::any_of(protocols.begin(), protocols.end(), [&](const ClassicProtocol& p) {
    return std::all_of(members.begin(), members.end(),
                       [&](const auto& kv) { return kv.second.Supports(p.name); });
  });
}

// Among the protocols every member supports, each member votes for the first in its own order;
// the most votes win. Kafka breaks ties arbitrarily; here the leader's preference breaks them.
std::string ClassicGroup::Impl::SelectProtocol() const {
  std::set<std::string> candidates;
  if (members.empty()) return {};
  for (const auto& p : members.begin()->second.protocols) {
    if (std::all_of(members.begin(), members.end(),
                    [&](const auto& kv) { return kv.second.Supports(p.name); })) {
      candidates.insert(p.name);
    }
  }
  std::map<std::string, int> votes;
  for (const auto& [id, m] : members) {
    std::string v = m.Vote(candidates);
    if (!v.empty()) ++votes[v];
  }
  const ClassicMember* pref = nullptr;
  if (auto it = members.find(leader); it != members.end()) pref = &it->second;
  if (pref == nullptr) pref = &members.begin()->second;
  std::string best;
  int best_votes = 0;
  for (const auto& p : pref->protocols) {
    auto it = votes.find(p.name);
    if (it != votes.end() && it->second > best_votes) {
      best = p.name;
      best_votes = it->second;
    }
  }
  return best;
}

std::chrono::milliseconds ClassicGroup::Impl::RebalanceTimeout() const {
  std::chrono::milliseconds t{0};
  for (const auto& [id, m] : members) t = std::max(t, m.rebalance_timeout);
  return t;
}

bool ClassicGroup::Impl::AllMembersJoined() const {
  if (!pending_members.empty()) return false;
  return std::all_of(members.begin(), members.end(),
                     [](const auto& kv) { return kv.second.join_token.has_value(); });
}

std::string ClassicGroup::Impl::NewMemberId(const std::string& prefix) {
  std::string id = prefix;
  if (!config.member_id_salt.empty()) id += "-" + config.member_id_salt;
  id += "-" + std::to_string(next_member++);
  return id;
}

void ClassicGroup::Impl::AddMember(ClassicMember m) {
  if (members.empty()) protocol_type = m.protocol_type;
  if (!m.instance_id.empty()) static_members[m.instance_id] = m.id;
  if (leader.empty()) leader = m.id;
  pending_members.erase(m.id);
  std::string id = m.id;
  members.emplace(std::move(id), std::move(m));
}

void ClassicGroup::Impl::RemoveMember(const std::string& id) {
  auto it = members.find(id);
  if (it == members.end()) {
    pending_members.erase(id);
    return;
  }
  if (!it->second.instance_id.empty()) {
    auto s = static_members.find(it->second.instance_id);
    if (s != static_members.end() && s->second == id) static_members.erase(s);
  }
  members.erase(it);
  pending_sync.erase(id);
  if (leader == id) leader = members.empty() ? std::string() : members.begin()->first;
}

// Kafka's removeMemberAndUpdateGroup: a waiting JoinGroup (and SyncGroup) of the member is
// answered UNKNOWN_MEMBER_ID, then the group rebalances (or completes the join phase it is in).
void ClassicGroup::Impl::RemoveAndRebalance(const std::string& id, TimePoint now) {
  auto it = members.find(id);
  if (it == members.end()) return;
  ClassicJoinResponse jr;
  jr.status = Status(ClassicErrc::kUnknownMemberId, "member " + id + " was removed from group " + group_id);
  AnswerJoin(it->second, std::move(jr));
  ClassicSyncResponse sr;
  sr.status = Status(ClassicErrc::kUnknownMemberId, "member " + id + " was removed from group " + group_id);
  AnswerSync(it->second, std::move(sr));
  RemoveMember(id);
  if (state == ClassicState::kStable || state == ClassicState::kCompletingRebalance) {
    MaybePrepareRebalanceOrCompleteJoin(now);
  } else if (state == ClassicState::kPreparingRebalance && AllMembersJoined()) {
    CompleteJoin(now);
  }
}

std::vector<ClassicJoinMember> ClassicGroup::Impl::JoinMembers() const {
  std::vector<ClassicJoinMember> out;
  out.reserve(members.size());
  for (const auto& [id, m] : members) {
    const std::string* md = m.Metadata(protocol_name);
    out.push_back({id, m.instance_id, md != nullptr ? *md : std::string()});
  }
  return out;
}

void ClassicGroup::Impl::AnswerJoin(ClassicMember& m, ClassicJoinResponse r) {
  if (!m.join_token) return;
  completions.push_back({*m.join_token, std::move(r)});
  m.join_token.reset();
}

void ClassicGroup::Impl::AnswerSync(ClassicMember& m, ClassicSyncResponse r) {
  if (!m.sync_token) return;
  completions.push_back({*m.sync_token, std::move(r)});
  m.sync_token.reset();
}

// A newer JoinGroup (SyncGroup) of a member replaces a waiting one, which is answered
// REBALANCE_IN_PROGRESS (Kafka drops it unanswered).
void ClassicGroup::Impl::SetJoinToken(ClassicMember& m, Token token) {
  ClassicJoinResponse r;
  r.status =
      Status(ClassicErrc::kRebalanceInProgress, "a newer JoinGroup of member " + m.id + " replaced this one");
  r.member_id = m.id;
  AnswerJoin(m, std::move(r));
  m.join_token = token;
}

void ClassicGroup::Impl::SetSyncToken(ClassicMember& m, Token token) {
  ClassicSyncResponse r;
  r.status =
      Status(ClassicErrc::kRebalanceInProgress, "a newer SyncGroup of member " + m.id + " replaced this one");
  AnswerSync(m, std::move(r));
  m.sync_token = token;
}

ClassicJoinResponse ClassicGroup::Impl::CurrentGeneration(const std::string& member_id,
                                                          bool with_members) const {
  ClassicJoinResponse r;
  r.member_id = member_id;
  r.generation_id = generation;
  r.protocol_type = protocol_type;
  r.protocol_name = protocol_name;
  r.leader_id = leader;
  if (with_members) r.members = JoinMembers();
  return r;
}

void ClassicGroup::Impl::Transition(ClassicState to) {
  previous_state = state;
  state = to;
}

ClassicGroupDescription ClassicGroup::Describe() const {
  const Impl& g = *impl_;
  ClassicGroupDescription d;
  d.group_id = g.group_id;
  d.state = g.state;
  d.protocol_type = g.protocol_type;
  d.protocol_name = g.protocol_name;
  d.generation_id = g.generation;
  d.leader_id = g.leader;
  d.pending_members = g.pending_members.size();
  for (const auto& [id, m] : g.members) {
    ClassicMemberDescription md;
    md.member_id = id;
    md.instance_id = m.instance_id;
    md.client_id = m.client_id;
    md.client_host = m.client_host;
    for (const auto& p : m.protocols) md.protocols.push_back(p.name);
    const std::string* meta = m.Metadata(g.protocol_name);
    if (meta == nullptr && !m.protocols.empty()) meta = &m.protocols.front().metadata;
    if (meta != nullptr) md.metadata = *meta;
    md.assignment = m.assignment;
    md.session_timeout = m.session_timeout;
    md.rebalance_timeout = m.rebalance_timeout;
    d.members.push_back(std::move(md));
  }
  return d;
}

}  // namespace rdmq::group
