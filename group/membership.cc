// Membership: joins (new members, rejoins after fencing, static members taking a place), leaves,
// keep-alive heartbeats with their epoch checks, and expiry.
#include <algorithm>

#include "group_impl.h"

namespace rdmq::group {

using internal::Member;

namespace {

std::string EpochText(int32_t e) { return std::to_string(e); }

}  // namespace

Result<internal::Subscription> Group::Impl::ParseSubscription(const HeartbeatRequest& r) const {
  if (!r.topics.empty() && !r.topic_regex.empty()) {
    return Status(GroupErrc::kInvalidRequest, "a subscription is topic names or a regex, not both");
  }
  internal::Subscription sub;
  sub.topics = r.topics;
  if (std::any_of(sub.topics.begin(), sub.topics.end(), [](const std::string& t) { return t.empty(); })) {
    return Status(GroupErrc::kInvalidRequest, "an empty topic name in the subscription");
  }
  std::sort(sub.topics.begin(), sub.topics.end());
  sub.topics.erase(std::unique(sub.topics.begin(), sub.topics.end()), sub.topics.end());
  if (!r.topic_regex.empty()) {
    sub.regex_text = r.topic_regex;
    try {
      sub.regex.emplace(r.topic_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status(GroupErrc::kInvalidRegularExpression, "'" + r.topic_regex + "': " + e.what());
    }
  }
  return sub;
}

// A member may name another assignor than the group's only when no other member is in the group
// (`self` is the member the request speaks for, or the static member it replaces).
Status Group::Impl::CheckAssignor(const HeartbeatRequest& r, const Member* self) const {
  if (r.assignor.empty()) return Status::Ok();
  RDMQ_ASSIGN_OR_RETURN(AssignorKind kind, ParseAssignor(r.assignor));
  if (!assignor || kind == *assignor) return Status::Ok();
  size_t others = members.size() - (self != nullptr ? 1 : 0);
  if (others == 0) return Status::Ok();
  return Status(GroupErrc::kInconsistentAssignor, "group " + group_id + " uses " +
                                                      std::string(AssignorName(*assignor)) +
                                                      ", the member asked for " + r.assignor);
}

void Group::Impl::Update(Member& m, const HeartbeatRequest& r, internal::Subscription sub, TimePoint now) {
  if (sub.topics != m.topics || sub.regex_text != m.regex_text) {
    m.topics = std::move(sub.topics);
    m.regex_text = std::move(sub.regex_text);
    m.regex = std::move(sub.regex);
    Resolve(m);
    dirty = true;
  }
  AssignorKind kind = config.default_assignor;
  if (!r.assignor.empty()) kind = *ParseAssignor(r.assignor);  // CheckAssignor accepted it
  if (!assignor) {
    assignor = kind;
  } else if (!r.assignor.empty() && kind != *assignor) {
    assignor = kind;  // the only member switched assignors
    dirty = true;
  }
  m.assignor = r.assignor;
  m.client_id = r.client_id;
  if (r.session_timeout.count() > 0) m.session_timeout = r.session_timeout;
  if (r.rebalance_timeout.count() > 0) m.rebalance_timeout = r.rebalance_timeout;
  m.last_heartbeat = now;
  m.left = false;
}

std::string Group::Impl::NewMemberId(const std::string& client_id) {
  std::string prefix = (client_id.empty() ? std::string("consumer") : client_id) + "-";
  if (!config.member_id_salt.empty()) prefix += config.member_id_salt + "-";
  std::string id;
  do {
    id = prefix + std::to_string(next_member++);
  } while (members.count(id) != 0);
  return id;
}

Result<Member*> Group::Impl::Join(const HeartbeatRequest& r, TimePoint now) {
  if (r.session_timeout.count() <= 0 || r.rebalance_timeout.count() <= 0) {
    return Status(GroupErrc::kInvalidRequest, "a join needs positive session and rebalance timeouts");
  }
  if (!r.owned.empty()) {
    return Status(GroupErrc::kInvalidRequest,
                  "a join lists no owned partitions (a rejoining member has lost them)");
  }
  RDMQ_ASSIGN_OR_RETURN(internal::Subscription sub, ParseSubscription(r));
  Member* known = nullptr;
  if (!r.member_id.empty()) {
    auto it = members.find(r.member_id);
    if (it != members.end()) known = &it->second;
  }
  Member* same_instance = nullptr;
  if (!r.instance_id.empty()) {
    for (auto& [id, m] : members) {
      if (m.instance_id == r.instance_id) same_instance = &m;
    }
  }

  if (known != nullptr) {
    // A rejoin (after kFencedMemberEpoch, or a restart keeping its id): whatever it held is lost.
    if (known->instance_id != r.instance_id) {
      return Status(GroupErrc::kInvalidRequest,
                    "member " + r.member_id + " has instance id '" + known->instance_id + "'");
    }
    RDMQ_RETURN_IF_ERROR(CheckAssignor(r, known));
    ReleaseAll(*known);
    known->epoch = 0;
    known->previous_epoch = 0;
    Update(*known, r, std::move(sub), now);
    return known;
  }

  if (same_instance != nullptr) {
    // A static member's new incarnation takes the place of the old one: same epoch, same
    // assignment, no rebalance. The old member id becomes unknown.
    RDMQ_RETURN_IF_ERROR(CheckAssignor(r, same_instance));
    const std::string old_id = same_instance->id;
    const std::string id = r.member_id.empty() ? NewMemberId(r.client_id) : r.member_id;
    Member m = std::move(*same_instance);
    members.erase(old_id);
    for (const PartitionSet* set : {&m.assigned, &m.pending}) {
      for (const TopicPartition& tp : *set) holder[tp] = id;
    }
    auto node = target.extract(old_id);
    if (!node.empty()) {
      node.key() = id;
      target.insert(std::move(node));
    }
    m.id = id;
    Member& placed = members.emplace(id, std::move(m)).first->second;
    Update(placed, r, std::move(sub), now);
    return &placed;
  }

  RDMQ_RETURN_IF_ERROR(CheckAssignor(r, nullptr));
  if (config.max_size > 0 && members.size() >= static_cast<size_t>(config.max_size)) {
    return Status(GroupErrc::kGroupMaxSizeReached,
                  "group " + group_id + " has " + std::to_string(members.size()) + " members");
  }
  const std::string id = r.member_id.empty() ? NewMemberId(r.client_id) : r.member_id;
  Member& m = members[id];
  m.id = id;
  m.instance_id = r.instance_id;
  Update(m, r, std::move(sub), now);
  Resolve(m);
  dirty = true;
  return &m;
}

Result<Member*> Group::Impl::KeepAlive(const HeartbeatRequest& r, TimePoint now) {
  auto it = members.find(r.member_id);
  if (r.member_id.empty() || it == members.end()) {
    return Status(GroupErrc::kUnknownMemberId, "member '" + r.member_id + "' in group " + group_id);
  }
  Member& m = it->second;
  if (!r.instance_id.empty() && r.instance_id != m.instance_id) {
    return Status(GroupErrc::kInvalidRequest,
                  "member " + m.id + " has instance id '" + m.instance_id + "', not '" + r.instance_id + "'");
  }
  if (r.member_epoch != m.epoch) {
    // The previous epoch is accepted (the response that moved the member on may have been
    // lost) as long as the member claims nothing it was not given.
    bool plausible = r.member_epoch == m.previous_epoch &&
                     std::all_of(r.owned.begin(), r.owned.end(), [&](const TopicPartition& tp) {
                       return m.assigned.count(tp) != 0 || m.pending.count(tp) != 0;
                     });
    if (!plausible) {
      return Status(GroupErrc::kFencedMemberEpoch, "member " + m.id + " is at epoch " + EpochText(m.epoch) +
                                                       ", the request has " + EpochText(r.member_epoch));
    }
  }
  if (r.session_timeout.count() < 0 || r.rebalance_timeout.count() < 0) {
    return Status(GroupErrc::kInvalidRequest, "negative timeout");
  }
  RDMQ_ASSIGN_OR_RETURN(internal::Subscription sub, ParseSubscription(r));
  RDMQ_RETURN_IF_ERROR(CheckAssignor(r, &m));
  Update(m, r, std::move(sub), now);
  return &m;
}

HeartbeatResult Group::Impl::Leave(const HeartbeatRequest& r, TimePoint now) {
  HeartbeatResult result;
  result.member_id = r.member_id;
  result.member_epoch = r.member_epoch;
  auto it = members.find(r.member_id);
  if (r.member_id.empty() || it == members.end()) {
    result.status = Status(GroupErrc::kUnknownMemberId, "member '" + r.member_id + "' in group " + group_id);
    return result;
  }
  Member& m = it->second;
  if (r.member_epoch == kStaticLeaveEpoch) {
    if (m.instance_id.empty()) {
      result.status = Status(GroupErrc::kInvalidRequest, "only a static member leaves with epoch -2");
      return result;
    }
    // Keeps its place and partitions until its session timeout.
    m.left = true;
    m.last_heartbeat = now;
    return result;
  }
  Remove(m.id);
  return result;
}

void Group::Impl::Remove(const std::string& member_id) {
  auto it = members.find(member_id);
  if (it == members.end()) return;
  ReleaseAll(it->second);
  target.erase(member_id);
  members.erase(it);
  dirty = true;
  if (members.empty()) assignor.reset();
}

void Group::Impl::Expire(TimePoint now) {
  std::vector<std::string> gone;
  for (const auto& [id, m] : members) {
    if (now >= m.SessionDeadline() || (m.revoke_deadline && now >= *m.revoke_deadline)) gone.push_back(id);
  }
  for (const std::string& id : gone) Remove(id);
}

}  // namespace rdmq::group
