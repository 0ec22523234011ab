// Group::Describe: the admin view of a group.
#include "group_impl.h"

namespace rdmq::group {

std::string_view GroupStateName(GroupState state) noexcept {
  switch (state) {
    case GroupState::kEmpty:
      return "Empty";
    case GroupState::kReconciling:
      return "Reconciling";
    case GroupState::kStable:
      return "Stable";
  }
  return "Unknown";
}

GroupDescription Group::Describe() const {
  const Impl& g = *impl_;
  GroupDescription d;
  d.group_id = g.group_id;
  d.group_epoch = g.group_epoch;
  d.assignment_epoch = g.target_epoch;
  if (g.assignor) d.assignor = std::string(AssignorName(*g.assignor));
  d.state = g.members.empty() ? GroupState::kEmpty : GroupState::kStable;
  for (const auto& [id, m] : g.members) {
    MemberDescription md;
    md.member_id = id;
    md.instance_id = m.instance_id;
    md.client_id = m.client_id;
    md.member_epoch = m.epoch;
    md.topics = m.topics;
    md.topic_regex = m.regex_text;
    md.assignment.assign(m.assigned.begin(), m.assigned.end());
    md.pending_revocation.assign(m.pending.begin(), m.pending.end());
    auto t = g.target.find(id);
    if (t != g.target.end()) md.target.assign(t->second.begin(), t->second.end());
    md.left_temporarily = m.left;
    if (m.epoch != g.target_epoch || !m.pending.empty() || md.assignment != md.target) {
      d.state = GroupState::kReconciling;
    }
    d.members.push_back(std::move(md));
  }
  return d;
}

}  // namespace rdmq::group
