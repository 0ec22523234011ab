// Consumer-group API bodies (groups.h; docs/kafka-protocol.md).
#include "rdmq/kafka/groups.h"

#include "kafka/codec_io.h"
#include "rdmq/kafka/api.h"

namespace rdmq::kafka {
namespace {

template <class Io, class M>
void FindCoordinatorRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.key, "key");
  if (v >= 1) io.Int8(m.key_type, "key_type");
}

template <class Io, class M>
void FindCoordinatorResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
  if (v >= 1) io.NullableString(m.error_message, "error_message");
  io.Int32(m.node_id, "node_id");
  io.String(m.host, "host");
  io.Int32(m.port, "port");
}

template <class Io, class M>
void JoinGroupRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.group_id, "group_id");
  io.Int32(m.session_timeout_ms, "session_timeout_ms");
  if (v >= 1) io.Int32(m.rebalance_timeout_ms, "rebalance_timeout_ms");
  io.String(m.member_id, "member_id");
  if (v >= 5) io.NullableString(m.group_instance_id, "group_instance_id");
  io.String(m.protocol_type, "protocol_type");
  io.Array(m.protocols, "protocols", 6, [&](auto& p) {
    io.String(p.name, "protocol.name");
    io.Bytes(p.metadata, "protocol.metadata");
  });
}

template <class Io, class M>
void JoinGroupResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 2) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
  io.Int32(m.generation_id, "generation_id");
  io.String(m.protocol_name, "protocol_name");
  io.String(m.leader, "leader");
  io.String(m.member_id, "member_id");
  io.Array(m.members, "members", 6, [&](auto& mem) {
    io.String(mem.member_id, "member.member_id");
    if (v >= 5) io.NullableString(mem.group_instance_id, "member.group_instance_id");
    io.Bytes(mem.metadata, "member.metadata");
  });
}

template <class Io, class M>
void HeartbeatRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.group_id, "group_id");
  io.Int32(m.generation_id, "generation_id");
  io.String(m.member_id, "member_id");
  if (v >= 3) io.NullableString(m.group_instance_id, "group_instance_id");
}

template <class Io, class M>
void HeartbeatResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
}

template <class Io, class M>
void LeaveGroupRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.group_id, "group_id");
  if (v <= 2) {
    io.String(m.member_id, "member_id");
  } else {
    io.Array(m.members, "members", 4, [&](auto& mem) {
      io.String(mem.member_id, "member.member_id");
      io.NullableString(mem.group_instance_id, "member.group_instance_id");
    });
  }
}

template <class Io, class M>
void LeaveGroupResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
  if (v >= 3) {
    io.Array(m.members, "members", 6, [&](auto& mem) {
      io.String(mem.member_id, "member.member_id");
      io.NullableString(mem.group_instance_id, "member.group_instance_id");
      io.Error(mem.error_code, "member.error_code");
    });
  }
}

template <class Io, class M>
void SyncGroupRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.group_id, "group_id");
  io.Int32(m.generation_id, "generation_id");
  io.String(m.member_id, "member_id");
  if (v >= 3) io.NullableString(m.group_instance_id, "group_instance_id");
  io.Array(m.assignments, "assignments", 6, [&](auto& a) {
    io.String(a.member_id, "assignment.member_id");
    io.Bytes(a.assignment, "assignment.assignment");
  });
}

template <class Io, class M>
void SyncGroupResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
  io.Bytes(m.assignment, "assignment");
}

template <class Io, class M>
void DescribeGroupsRequestBody(Io& io, int16_t v, M& m) {
  io.StringArray(m.groups, "groups");
  if (v >= 3) io.Bool(m.include_authorized_operations, "include_authorized_operations");
}

template <class Io, class M>
void DescribeGroupsResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.groups, "groups", 14, [&](auto& g) {
    io.Error(g.error_code, "group.error_code");
    io.String(g.group_id, "group.group_id");
    io.String(g.group_state, "group.group_state");
    io.String(g.protocol_type, "group.protocol_type");
    io.String(g.protocol_data, "group.protocol_data");
    io.Array(g.members, "group.members", 14, [&](auto& mem) {
      io.String(mem.member_id, "member.member_id");
      if (v >= 4) io.NullableString(mem.group_instance_id, "member.group_instance_id");
      io.String(mem.client_id, "member.client_id");
      io.String(mem.client_host, "member.client_host");
      io.Bytes(mem.member_metadata, "member.member_metadata");
      io.Bytes(mem.member_assignment, "member.member_assignment");
    });
    if (v >= 3) io.Int32(g.authorized_operations, "group.authorized_operations");
  });
}

template <class Io, class M>
void ListGroupsRequestBody(Io&, int16_t, M&) {}

template <class Io, class M>
void ListGroupsResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
  io.Array(m.groups, "groups", 4, [&](auto& g) {
    io.String(g.group_id, "group.group_id");
    io.String(g.protocol_type, "group.protocol_type");
  });
}

}  // namespace

RDMQ_KAFKA_MESSAGE_CODEC(FindCoordinatorRequest, ApiKey::kFindCoordinator, FindCoordinatorRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(FindCoordinatorResponse, ApiKey::kFindCoordinator, FindCoordinatorResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(JoinGroupRequest, ApiKey::kJoinGroup, JoinGroupRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(JoinGroupResponse, ApiKey::kJoinGroup, JoinGroupResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(HeartbeatRequest, ApiKey::kHeartbeat, HeartbeatRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(HeartbeatResponse, ApiKey::kHeartbeat, HeartbeatResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(LeaveGroupRequest, ApiKey::kLeaveGroup, LeaveGroupRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(LeaveGroupResponse, ApiKey::kLeaveGroup, LeaveGroupResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(SyncGroupRequest, ApiKey::kSyncGroup, SyncGroupRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(SyncGroupResponse, ApiKey::kSyncGroup, SyncGroupResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(DescribeGroupsRequest, ApiKey::kDescribeGroups, DescribeGroupsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(DescribeGroupsResponse, ApiKey::kDescribeGroups, DescribeGroupsResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(ListGroupsRequest, ApiKey::kListGroups, ListGroupsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(ListGroupsResponse, ApiKey::kListGroups, ListGroupsResponseBody)

}  // namespace rdmq::kafka
