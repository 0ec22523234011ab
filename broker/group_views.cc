// GroupCoordinator's views of its groups, for rdmq's admin RPCs (ListGroups, DescribeGroup) and
// for Kafka's ListGroups and DescribeGroups: both kinds of groups, and groups that have only
// committed offsets. A classic group's consumer members are read through their consumer-protocol
// bytes (topics subscribed, partitions assigned).
#include <algorithm>

#include "group_convert.h"
#include "group_coordinator.h"
#include "rdmq/common/log.h"
#include "rdmq/group/consumer_protocol.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

using protocol::WireError;

namespace {

constexpr const char* kConsumer = "consumer";  // rdmq's own groups' type, and consumers' protocol type
constexpr const char* kClassic = "classic";

GroupOverview NativeOverview(const std::string& id, const group::Group& g) {
  const group::GroupDescription d = g.Describe();
  return {id, kConsumer, kConsumer, std::string(group::GroupStateName(d.state)),
          static_cast<uint32_t>(d.members.size())};
}

GroupOverview ClassicOverview(const std::string& id, const group::ClassicGroup& g) {
  const group::ClassicGroupDescription d = g.Describe();
  return {id, kClassic, d.protocol_type, std::string(group::ClassicStateName(d.state)),
          static_cast<uint32_t>(d.members.size())};
}

// A classic member as rdmq's DescribeGroup shows it: topics and partitions from its
// consumer-protocol bytes when the group's protocol type is "consumer" (unreadable bytes show
// nothing rather than failing the description).
protocol::GroupMemberInfo ClassicMemberInfo(const group::ClassicGroupDescription& d,
                                            const group::ClassicMemberDescription& m) {
  protocol::GroupMemberInfo info;
  info.member_id = m.member_id;
  info.instance_id = m.instance_id;
  info.client_id = m.client_id;
  info.member_epoch = d.generation_id;
  if (d.protocol_type == kConsumer) {
    if (auto sub = group::ParseConsumerSubscription(m.metadata); sub.ok()) info.topics = sub->topics;
    if (!m.assignment.empty()) {
      if (auto a = group::ParseConsumerAssignment(m.assignment); a.ok())
        info.assignment = ToRefs(a->partitions);
    }
  }
  info.target = info.assignment;
  return info;
}

}  // namespace

std::vector<GroupOverview> GroupCoordinator::Overview() const {
  std::map<std::string, GroupOverview> all;
  // Groups with offsets only are left out while their store cannot be read (a cluster's
  // ZooKeeper away); the log says so.
  auto with_offsets = offsets_->Groups();
  if (!with_offsets.ok()) {
    RDMQ_LOG(kWarn, "broker", "committed offsets unreadable: groups with offsets only are not listed")
        .kv("error", with_offsets.status());
  }
  for (const auto& g : with_offsets.ok() ? *with_offsets : std::vector<std::string>{})
    all[g] = {g, "", "", "Empty", 0};
  {
    MutexLock lock(mu_);
    for (const auto& [id, slot] : groups_) {
      GroupOverview o = std::holds_alternative<group::Group>(slot)
                            ? NativeOverview(id, std::get<group::Group>(slot))
                            : ClassicOverview(id, std::get<group::ClassicGroup>(slot));
      if (o.members == 0 && all.count(id) == 0) continue;  // nothing to show yet
      all[id] = std::move(o);
    }
  }
  std::vector<GroupOverview> out;
  out.reserve(all.size());
  for (auto& [id, o] : all) out.push_back(std::move(o));
  return out;
}

protocol::ListGroupsResponse GroupCoordinator::List() const {
  protocol::ListGroupsResponse out;
  for (auto& o : Overview()) out.groups.push_back({o.group, o.state, o.members, o.type});
  return out;
}

Result<protocol::DescribeGroupResponse> GroupCoordinator::Describe(const std::string& id) const {
  RDMQ_RETURN_IF_ERROR(ToWire(metadata::ValidateGroupId(id)));
  protocol::DescribeGroupResponse out;
  out.group = id;
  out.state = "Empty";
  RDMQ_ASSIGN_OR_RETURN(const metadata::GroupOffsets committed, offsets_->FetchGroup(id));
  for (const auto& [key, c] : committed) out.offsets.push_back(ToEntry(key, c));
  MutexLock lock(mu_);
  const auto it = groups_.find(id);
  if (it == groups_.end() && out.offsets.empty()) {
    return Status(WireError::kUnknownGroup, "no group '" + id + "' (no members, no committed offsets)");
  }
  if (it == groups_.end()) return out;
  if (const auto* native = std::get_if<group::Group>(&it->second)) {
    const group::GroupDescription d = native->Describe();
    out.type = kConsumer;
    out.state = std::string(group::GroupStateName(d.state));
    out.group_epoch = d.group_epoch;
    out.assignor = d.assignor;
    for (const auto& m : d.members) {
      out.members.push_back({m.member_id, m.instance_id, m.client_id, m.member_epoch, m.topics, m.topic_regex,
                             ToRefs(m.assignment), ToRefs(m.target)});
    }
    return out;
  }
  const group::ClassicGroupDescription d = std::get<group::ClassicGroup>(it->second).Describe();
  out.type = kClassic;
  out.state = std::string(group::ClassicStateName(d.state));
  out.group_epoch = d.generation_id;
  out.assignor = d.protocol_name;
  for (const auto& m : d.members) out.members.push_back(ClassicMemberInfo(d, m));
  return out;
}

group::ClassicGroupDescription GroupCoordinator::DescribeClassic(const std::string& id) const {
  group::ClassicGroupDescription out;
  out.group_id = id;
  out.state = group::ClassicState::kDead;
  if (!metadata::ValidateGroupId(id).ok()) return out;
  const auto committed = offsets_->FetchGroup(id);
  const bool has_offsets = committed.ok() && !committed->empty();
  MutexLock lock(mu_);
  const auto it = groups_.find(id);
  if (it == groups_.end()) {
    if (has_offsets) out.state = group::ClassicState::kEmpty;
    return out;
  }
  if (const auto* classic = std::get_if<group::ClassicGroup>(&it->second)) return classic->Describe();
  // rdmq's own group, rendered as Kafka's tools expect a consumer group.
  const group::GroupDescription d = std::get<group::Group>(it->second).Describe();
  switch (d.state) {
    case group::GroupState::kEmpty:
      out.state = group::ClassicState::kEmpty;
      break;
    case group::GroupState::kReconciling:
      out.state = group::ClassicState::kCompletingRebalance;
      break;
    case group::GroupState::kStable:
      out.state = group::ClassicState::kStable;
      break;
  }
  out.protocol_type = kConsumer;
  out.protocol_name = d.assignor;
  out.generation_id = d.group_epoch;
  for (const auto& m : d.members) {
    group::ClassicMemberDescription md;
    md.member_id = m.member_id;
    md.instance_id = m.instance_id;
    md.client_id = m.client_id;
    md.protocols = {d.assignor};
    group::ConsumerSubscription sub;
    sub.topics = m.topics;
    md.metadata = group::EncodeConsumerSubscription(sub, 0);
    group::ConsumerAssignment a;
    a.partitions = m.assignment;
    md.assignment = group::EncodeConsumerAssignment(a, 0);
    out.members.push_back(std::move(md));
  }
  return out;
}

}  // namespace rdmq::broker::internal
