// Kafka's range assignor: per topic, the subscribed members (in Kafka's order) get contiguous
// ranges of partitions; the first (count % members) of them get one partition more.
#include "assignor_internal.h"

namespace rdmq::group::internal {

Assignment RangeAssign(const std::vector<MemberSpec>& members, const TopicCounts& topics) {
  Assignment out = EmptyAssignment(members);
  std::vector<const MemberSpec*> sorted = SortedMembers(members);
  std::vector<std::set<std::string>> subscribed;
  subscribed.reserve(sorted.size());
  for (const MemberSpec* m : sorted) subscribed.push_back(ExistingTopics(*m, topics));

  for (const auto& [topic, count] : topics) {
    if (count <= 0) continue;
    std::vector<const MemberSpec*> takers;
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (subscribed[i].count(topic) != 0) takers.push_back(sorted[i]);
    }
    if (takers.empty()) continue;
    const int32_t n = static_cast<int32_t>(takers.size());
    const int32_t per = count / n;
    const int32_t extra = count % n;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t start = i * per + std::min(i, extra);
      const int32_t length = per + (i < extra ? 1 : 0);
      auto& list = out[takers[static_cast<size_t>(i)]->member_id];
      for (int32_t p = start; p < start + length; ++p) list.push_back({topic, p});
    }
  }
  return out;
}

}  // namespace rdmq::group::internal
