#include "rdmq/group/assignor.h"

#include <algorithm>

#include "assignor_internal.h"

namespace rdmq::group {

Result<AssignorKind> ParseAssignor(std::string_view name) {
  if (name == "range") return AssignorKind::kRange;
  if (name == "roundrobin") return AssignorKind::kRoundRobin;
  if (name == "cooperative-sticky") return AssignorKind::kCooperativeSticky;
  return Status(GroupErrc::kUnsupportedAssignor,
                "assignor '" + std::string(name) + "' (known: range, roundrobin, cooperative-sticky)");
}

std::string_view AssignorName(AssignorKind kind) noexcept {
  switch (kind) {
    case AssignorKind::kRange:
      return "range";
    case AssignorKind::kRoundRobin:
      return "roundrobin";
    case AssignorKind::kCooperativeSticky:
      return "cooperative-sticky";
  }
  return "unknown";
}

bool IsCooperative(AssignorKind kind) noexcept { return kind == AssignorKind::kCooperativeSticky; }

Assignment Assign(AssignorKind kind, const std::vector<MemberSpec>& members, const TopicCounts& topics) {
  Assignment out;
  switch (kind) {
    case AssignorKind::kRange:
      out = internal::RangeAssign(members, topics);
      break;
    case AssignorKind::kRoundRobin:
      out = internal::RoundRobinAssign(members, topics);
      break;
    case AssignorKind::kCooperativeSticky:
      out = internal::StickyAssign(members, topics);
      break;
  }
  for (auto& [id, partitions] : out) std::sort(partitions.begin(), partitions.end());
  return out;
}

namespace internal {

std::vector<const MemberSpec*> SortedMembers(const std::vector<MemberSpec>& members) {
  std::vector<const MemberSpec*> sorted;
  sorted.reserve(members.size());
  for (const MemberSpec& m : members) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(), [](const MemberSpec* a, const MemberSpec* b) {
    bool a_static = !a->instance_id.empty();
    bool b_static = !b->instance_id.empty();
    if (a_static != b_static) return a_static;
    if (a_static && a->instance_id != b->instance_id) return a->instance_id < b->instance_id;
    return a->member_id < b->member_id;
  });
  return sorted;
}

std::set<std::string> ExistingTopics(const MemberSpec& member, const TopicCounts& topics) {
  std::set<std::string> out;
  for (const std::string& t : member.topics) {
    auto it = topics.find(t);
    if (it != topics.end() && it->second > 0) out.insert(t);
  }
  return out;
}

Assignment EmptyAssignment(const std::vector<MemberSpec>& members) {
  Assignment out;
  for (const MemberSpec& m : members) out[m.member_id];
  return out;
}

}  // namespace internal
}  // namespace rdmq::group
