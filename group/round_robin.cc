// Kafka's round-robin assignor: every partition of a subscribed topic, sorted by topic and index,
// is dealt to the members in Kafka's order, cyclically, skipping members not subscribed to the
// partition's topic. The cursor stays after the member that got the last partition.
#include "assignor_internal.h"

namespace rdmq::group::internal {

Assignment RoundRobinAssign(const std::vector<MemberSpec>& members, const TopicCounts& topics) {
  Assignment out = EmptyAssignment(members);
  std::vector<const MemberSpec*> sorted = SortedMembers(members);
  std::vector<std::set<std::string>> subscribed;
  subscribed.reserve(sorted.size());
  std::set<std::string> any;
  for (const MemberSpec* m : sorted) {
    subscribed.push_back(ExistingTopics(*m, topics));
    any.insert(subscribed.back().begin(), subscribed.back().end());
  }
  size_t cursor = 0;
  for (const std::string& topic : any) {  // std::set: sorted by name
    const int32_t count = topics.at(topic);
    for (int32_t p = 0; p < count; ++p) {
      // Some member subscribes to `topic`, so this ends within one lap.
      while (subscribed[cursor].count(topic) == 0) cursor = (cursor + 1) % sorted.size();
      out[sorted[cursor]->member_id].push_back({topic, p});
      cursor = (cursor + 1) % sorted.size();
    }
  }
  return out;
}

}  // namespace rdmq::group::internal
