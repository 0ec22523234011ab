// Partition assignors of the consumer-group coordinator: pure, deterministic functions from the
// members' subscriptions (and, for cooperative-sticky, what they own) to a target assignment.
//
//   range               Kafka's RangeAssignor: per topic, the subscribed members in order get
//                       contiguous ranges; the first (count % members) get one partition more.
//   roundrobin          Kafka's RoundRobinAssignor: every subscribed partition, sorted by topic
//                       and index, dealt to the members in order, skipping a member not
//                       subscribed to the partition's topic.
//   cooperative-sticky  balanced (among members that could take each other's partitions the
//                       counts differ by at most one) while keeping every owned partition that
//                       balance allows, so only the partitions that must move move.
//
// "Members in order" is Kafka's order: static members (with an instance id) first, sorted by
// instance id, so that a restarted static member gets the same partitions; then dynamic members
// sorted by member id. Topics missing from the TopicCounts (or with no partitions) are ignored.
// Thread safety: pure functions.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/group/errors.h"

namespace rdmq::group {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const TopicPartition&) const = default;
};

enum class AssignorKind { kRange, kRoundRobin, kCooperativeSticky };

// "range", "roundrobin", "cooperative-sticky"; anything else is GroupErrc::kUnsupportedAssignor.
Result<AssignorKind> ParseAssignor(std::string_view name);
std::string_view AssignorName(AssignorKind kind) noexcept;
// True for cooperative-sticky: a rebalance revokes only what moves. Range and round-robin are
// eager: a rebalance revokes everything first (docs/groups.md).
bool IsCooperative(AssignorKind kind) noexcept;

// Topic name -> partition count.
using TopicCounts = std::map<std::string, int32_t>;

struct MemberSpec {
  std::string member_id;
  std::string instance_id;            // static membership; empty = dynamic
  std::vector<std::string> topics;    // the resolved subscription (existing topic names)
  std::vector<TopicPartition> owned;  // what to keep if balance allows (cooperative-sticky only)
};

// Member id -> its partitions, sorted. Every member of the input has an entry (maybe empty).
using Assignment = std::map<std::string, std::vector<TopicPartition>>;

// Deterministic: the same input gives the same output, whatever the order of `members`.
// Member ids must be distinct.
Assignment Assign(AssignorKind kind, const std::vector<MemberSpec>& members, const TopicCounts& topics);

}  // namespace rdmq::group
