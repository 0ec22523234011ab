// Subscriptions against the topics the broker passes in: which existing topics each member's
// names or regex select, and the partition counts of everything the group subscribes to (a
// change in them, such as a new topic matching a regex or added partitions, means a rebalance).
#include <algorithm>

#include "group_impl.h"

namespace rdmq::group {

void Group::Impl::RefreshTopics(const TopicCounts& now_topics) {
  if (now_topics == topics) return;
  topics = now_topics;
  for (auto& [id, m] : members) Resolve(m);
}

void Group::Impl::Resolve(internal::Member& m) const {
  m.resolved.clear();
  if (m.regex) {
    for (const auto& [name, count] : topics) {
      bool match = false;
      try {
        match = std::regex_match(name, *m.regex);
      } catch (const std::regex_error&) {  // too complex for std::regex: no match
      }
      if (match) m.resolved.push_back(name);
    }
  } else {
    for (const std::string& name : m.topics) {
      if (topics.count(name) != 0) m.resolved.push_back(name);
    }
  }
}

TopicCounts Group::Impl::SubscribedCounts() const {
  TopicCounts out;
  for (const auto& [id, m] : members) {
    for (const std::string& name : m.resolved) out[name] = topics.at(name);
  }
  return out;
}

}  // namespace rdmq::group
