// The classic consumer-group APIs: FindCoordinator (api 10, v0-2), JoinGroup (11, v0-5),
// Heartbeat (12, v0-3), LeaveGroup (13, v0-3), SyncGroup (14, v0-3), DescribeGroups (15, v0-4)
// and ListGroups (16, v0-2) (docs/kafka-protocol.md). Conventions: produce_fetch.h. The
// protocol-specific blobs they carry (member metadata, assignments) are opaque here;
// group/consumer_protocol.h decodes those of protocol type "consumer" (the broker reads them).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

// ---- FindCoordinator ----------------------------------------------------------------------------

struct FindCoordinatorRequest {
  std::string_view key;  // the group id (key_type 0) or transactional id (key_type 1)
  int8_t key_type = 0;   // v1+
};
struct FindCoordinatorResponse {
  int32_t throttle_time_ms = 0;  // v1+
  ErrorCode error_code = ErrorCode::kNone;
  std::optional<std::string> error_message;  // v1+
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
};

Status Decode(Reader& r, int16_t version, FindCoordinatorRequest* out);
void Encode(Writer& w, int16_t version, const FindCoordinatorRequest& m);
Status Decode(Reader& r, int16_t version, FindCoordinatorResponse* out);
void Encode(Writer& w, int16_t version, const FindCoordinatorResponse& m);

// ---- JoinGroup ----------------------------------------------------------------------------------

struct JoinGroupProtocol {
  std::string_view name;  // e.g. "range", "roundrobin", "cooperative-sticky"
  ByteSpan metadata;      // for protocol type "consumer": a ConsumerProtocolSubscription
};
struct JoinGroupRequest {
  std::string_view group_id;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = -1;                  // v1+ (v0: the session timeout serves)
  std::string_view member_id;                         // empty on the first join
  std::optional<std::string_view> group_instance_id;  // v5+ (static membership)
  std::string_view protocol_type;                     // "consumer" for consumers
  std::vector<JoinGroupProtocol> protocols;
};

struct JoinGroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v5+
  ByteSpan metadata;                             // borrowed until the chunks are written
};
struct JoinGroupResponse {
  int32_t throttle_time_ms = 0;  // v2+
  ErrorCode error_code = ErrorCode::kNone;
  int32_t generation_id = -1;
  std::string protocol_name;
  std::string leader;
  std::string member_id;
  std::vector<JoinGroupMember> members;  // filled for the leader only
};

Status Decode(Reader& r, int16_t version, JoinGroupRequest* out);
void Encode(Writer& w, int16_t version, const JoinGroupRequest& m);
Status Decode(Reader& r, int16_t version, JoinGroupResponse* out);
void Encode(Writer& w, int16_t version, const JoinGroupResponse& m);

// ---- Heartbeat ----------------------------------------------------------------------------------

struct HeartbeatRequest {
  std::string_view group_id;
  int32_t generation_id = 0;
  std::string_view member_id;
  std::optional<std::string_view> group_instance_id;  // v3+
};
struct HeartbeatResponse {
  int32_t throttle_time_ms = 0;  // v1+
  ErrorCode error_code = ErrorCode::kNone;
};

Status Decode(Reader& r, int16_t version, HeartbeatRequest* out);
void Encode(Writer& w, int16_t version, const HeartbeatRequest& m);
Status Decode(Reader& r, int16_t version, HeartbeatResponse* out);
void Encode(Writer& w, int16_t version, const HeartbeatResponse& m);

// ---- LeaveGroup ---------------------------------------------------------------------------------

struct LeaveGroupMember {  // v3+
  std::string_view member_id;
  std::optional<std::string_view> group_instance_id;
};
struct LeaveGroupRequest {
  std::string_view group_id;
  std::string_view member_id;             // v0-2: the one member leaving
  std::vector<LeaveGroupMember> members;  // v3+: the members leaving (batch)
};

struct LeaveGroupMemberResponse {  // v3+
  std::string member_id;
  std::optional<std::string> group_instance_id;
  ErrorCode error_code = ErrorCode::kNone;
};
struct LeaveGroupResponse {
  int32_t throttle_time_ms = 0;  // v1+
  ErrorCode error_code = ErrorCode::kNone;
  std::vector<LeaveGroupMemberResponse> members;  // v3+
};

Status Decode(Reader& r, int16_t version, LeaveGroupRequest* out);
void Encode(Writer& w, int16_t version, const LeaveGroupRequest& m);
Status Decode(Reader& r, int16_t version, LeaveGroupResponse* out);
void Encode(Writer& w, int16_t version, const LeaveGroupResponse& m);

// ---- SyncGroup ----------------------------------------------------------------------------------

struct SyncGroupAssignment {
  std::string_view member_id;
  ByteSpan assignment;  // for protocol type "consumer": a ConsumerProtocolAssignment
};
struct SyncGroupRequest {
  std::string_view group_id;
  int32_t generation_id = 0;
  std::string_view member_id;
  std::optional<std::string_view> group_instance_id;  // v3+
  std::vector<SyncGroupAssignment> assignments;       // from the leader only
};
struct SyncGroupResponse {
  int32_t throttle_time_ms = 0;  // v1+
  ErrorCode error_code = ErrorCode::kNone;
  ByteSpan assignment;  // this member's; borrowed until the chunks are written
};

Status Decode(Reader& r, int16_t version, SyncGroupRequest* out);
void Encode(Writer& w, int16_t version, const SyncGroupRequest& m);
Status Decode(Reader& r, int16_t version, SyncGroupResponse* out);
void Encode(Writer& w, int16_t version, const SyncGroupResponse& m);

// ---- DescribeGroups -----------------------------------------------------------------------------

struct DescribeGroupsRequest {
  std::vector<std::string_view> groups;
  bool include_authorized_operations = false;  // v3+
};

struct DescribedGroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v4+
  std::string client_id;
  std::string client_host;
  ByteSpan member_metadata;    // borrowed until the chunks are written
  ByteSpan member_assignment;  // borrowed until the chunks are written
};
struct DescribedGroup {
  ErrorCode error_code = ErrorCode::kNone;
  std::string group_id;
  std::string group_state;    // "Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"
  std::string protocol_type;  // "consumer", or "" when the group has none
  std::string protocol_data;  // the chosen protocol (assignor) name
  std::vector<DescribedGroupMember> members;
  int32_t authorized_operations = std::numeric_limits<int32_t>::min();  // v3+
};
struct DescribeGroupsResponse {
  int32_t throttle_time_ms = 0;  // v1+
  std::vector<DescribedGroup> groups;
};

Status Decode(Reader& r, int16_t version, DescribeGroupsRequest* out);
void Encode(Writer& w, int16_t version, const DescribeGroupsRequest& m);
Status Decode(Reader& r, int16_t version, DescribeGroupsResponse* out);
void Encode(Writer& w, int16_t version, const DescribeGroupsResponse& m);

// ---- ListGroups ---------------------------------------------------------------------------------

struct ListGroupsRequest {};  // no fields in v0-2

struct ListedGroup {
  std::string group_id;
  std::string protocol_type;
};
struct ListGroupsResponse {
  int32_t throttle_time_ms = 0;  // v1+
  ErrorCode error_code = ErrorCode::kNone;
  std::vector<ListedGroup> groups;
};

Status Decode(Reader& r, int16_t version, ListGroupsRequest* out);
void Encode(Writer& w, int16_t version, const ListGroupsRequest& m);
Status Decode(Reader& r, int16_t version, ListGroupsResponse* out);
void Encode(Writer& w, int16_t version, const ListGroupsResponse& m);

}  // namespace rdmq::kafka
