// What the assignors share: member order, subscription lookups, the three algorithms.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "rdmq/group/assignor.h"

namespace rdmq::group::internal {

// Kafka's member order: static members by instance id first, then dynamic members by member id
// (member id breaks ties, so the order is total).
std::vector<const MemberSpec*> SortedMembers(const std::vector<MemberSpec>& members);

// The member's subscribed topics that exist with at least one partition.
std::set<std::string> ExistingTopics(const MemberSpec& member, const TopicCounts& topics);

// Every member with an empty list.
Assignment EmptyAssignment(const std::vector<MemberSpec>& members);

Assignment RangeAssign(const std::vector<MemberSpec>& members, const TopicCounts& topics);
Assignment RoundRobinAssign(const std::vector<MemberSpec>& members, const TopicCounts& topics);
Assignment StickyAssign(const std::vector<MemberSpec>& members, const TopicCounts& topics);

}  // namespace rdmq::group::internal
