// The consumer-group and committed-offset RPCs (docs/protocol.md, "Consumer groups"), field by
// field. Same conventions as messages.h: each struct lists its fields once in Visit().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmq/common/types.h"
#include "rdmq/protocol/codec.h"

namespace rdmq::protocol {

// GroupHeartbeat member_epoch values with a meaning of their own.
inline constexpr int32_t kJoinEpoch = 0;           // join (member_id empty, or a static member's restart)
inline constexpr int32_t kLeaveEpoch = -1;         // leave the group now
inline constexpr int32_t kStaticPauseEpoch = -2;   // a static member leaves for a while; keeps its partitions
inline constexpr int32_t kSimpleCommitEpoch = -1;  // OffsetCommit from outside the group (member_id empty)

struct TopicPartitionRef {
  std::string topic;
  PartitionId partition{0};
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
  }
  bool operator==(const TopicPartitionRef&) const = default;
};

// --- GroupHeartbeat (40): join, heartbeat, leave ----------------------------------------------
struct GroupHeartbeatRequest {
  std::string group;
  std::string member_id;    // empty to join as a new member
  std::string instance_id;  // group.instance.id (static membership); empty = dynamic
  int32_t member_epoch = kJoinEpoch;
  std::vector<std::string> topics;  // the subscription: names...
  std::string topic_regex;          // ...or a regex (ECMAScript, whole name)
  std::string assignor;             // range | roundrobin | cooperative-sticky
  std::vector<TopicPartitionRef> owned;
  uint32_t session_timeout_ms = 45000;
  uint32_t rebalance_timeout_ms = 300000;
  template <class V>
  void Visit(V& v) {
    v(group);
    v(member_id);
    v(instance_id);
    v(member_epoch);
    v(topics);
    v(topic_regex);
    v(assignor);
    v(owned);
    v(session_timeout_ms);
    v(rebalance_timeout_ms);
  }
};
struct GroupHeartbeatResponse {
  std::string member_id;
  int32_t member_epoch = 0;
  uint32_t heartbeat_interval_ms = 0;
  std::vector<TopicPartitionRef> assignment;  // what the member may own now
  template <class V>
  void Visit(V& v) {
    v(member_id);
    v(member_epoch);
    v(heartbeat_interval_ms);
    v(assignment);
  }
};

// --- OffsetCommit (41), OffsetFetch (42) --------------------------------------------------------
struct OffsetEntry {
  std::string topic;
  PartitionId partition{0};
  Offset offset{-1};  // OffsetFetch: -1 when the group has committed nothing for the partition
  int32_t leader_epoch = -1;
  std::string metadata;
  TimestampMs commit_ms{0};  // OffsetFetch only
  template <class V>
  void Visit(V& v) {
    v(topic);
    v(partition);
    v(offset);
    v(leader_epoch);
    v(metadata);
    v(commit_ms);
  }
};
struct OffsetCommitRequest {
  std::string group;
  std::string member_id;  // empty: a simple commit (the group must have no members)
  int32_t member_epoch = kSimpleCommitEpoch;
  std::vector<OffsetEntry> offsets;  // stored all or none
  template <class V>
  void Visit(V& v) {
    v(group);
    v(member_id);
    v(member_epoch);
    v(offsets);
  }
};
struct OffsetFetchRequest {
  std::string group;
  std::vector<TopicPartitionRef> partitions;  // empty: every partition the group committed
  template <class V>
  void Visit(V& v) {
    v(group);
    v(partitions);
  }
};
struct OffsetFetchResponse {
  std::vector<OffsetEntry> offsets;
  template <class V>
  void Visit(V& v) {
    v(offsets);
  }
};

// --- ListGroups (43), DescribeGroup (44), DeleteGroup (45) -------------------------------------
// A group's type: "consumer" (rdmq's own protocol, GroupHeartbeat), "classic" (Kafka clients'
// JoinGroup/SyncGroup), or "" for a group with committed offsets and no members.
struct GroupListing {
  std::string group;
  std::string state;  // consumer: Empty, Reconciling, Stable; classic: Kafka's state names
  uint32_t members = 0;
  std::string type;
  template <class V>
  void Visit(V& v) {
    v(group);
    v(state);
    v(members);
    v(type);
  }
};
struct ListGroupsResponse {
  std::vector<GroupListing> groups;
  template <class V>
  void Visit(V& v) {
    v(groups);
  }
};
struct GroupRequest {  // DescribeGroup, DeleteGroup, FindCoordinator
  std::string group;
  template <class V>
  void Visit(V& v) {
    v(group);
  }
};
// FindCoordinator (46): the broker that coordinates a group (request: GroupRequest).
struct FindCoordinatorResponse {
  int32_t broker = -1;
  std::string control;  // its RPC control address; "" when it is the broker that answered
  template <class V>
  void Visit(V& v) {
    v(broker);
    v(control);
  }
};
struct GroupMemberInfo {
  std::string member_id;
  std::string instance_id;
  std::string client_id;
  int32_t member_epoch = 0;
  std::vector<std::string> topics;
  std::string topic_regex;
  std::vector<TopicPartitionRef> assignment;  // owned now
  std::vector<TopicPartitionRef> target;      // where the rebalance is heading
  template <class V>
  void Visit(V& v) {
    v(member_id);
    v(instance_id);
    v(client_id);
    v(member_epoch);
    v(topics);
    v(topic_regex);
    v(assignment);
    v(target);
  }
};
struct DescribeGroupResponse {
  std::string group;
  std::string state;
  int32_t group_epoch = 0;  // classic: the generation
  std::string assignor;     // classic: the chosen protocol
  std::vector<GroupMemberInfo> members;
  std::vector<OffsetEntry> offsets;  // every committed offset of the group
  std::string type;                  // as in GroupListing
  template <class V>
  void Visit(V& v) {
    v(group);
    v(state);
    v(group_epoch);
    v(assignor);
    v(members);
    v(offsets);
    v(type);
  }
};

}  // namespace rdmq::protocol
