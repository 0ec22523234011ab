// Metadata (api 3, v1-8), ListOffsets (api 2, v1-5), OffsetCommit (api 8, v2-7) and OffsetFetch
// (api 9, v1-5) (docs/kafka-protocol.md). Conventions: produce_fetch.h.
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

// "No authorized operations reported" in the v8+ bitfields.
inline constexpr int32_t kAuthorizedOperationsUnknown = std::numeric_limits<int32_t>::min();

// ---- Metadata -----------------------------------------------------------------------------------

struct MetadataRequest {
  // Null: every topic. Empty: no topic (brokers and cluster id only).
  std::optional<std::vector<std::string_view>> topics;
  bool allow_auto_topic_creation = true;               // v4+ (before v4 the broker decides)
  bool include_cluster_authorized_operations = false;  // v8+
  bool include_topic_authorized_operations = false;    // v8+
};

struct MetadataBroker {
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;  // v1+
};
struct MetadataPartition {
  ErrorCode error_code = ErrorCode::kNone;
  int32_t index = 0;
  int32_t leader_id = -1;
  int32_t leader_epoch = -1;  // v7+
  std::vector<int32_t> replica_nodes;
  std::vector<int32_t> isr_nodes;
  std::vector<int32_t> offline_replicas;  // v5+
};
struct MetadataTopic {
  ErrorCode error_code = ErrorCode::kNone;
  std::string name;
  bool is_internal = false;  // v1+
  std::vector<MetadataPartition> partitions;
  int32_t topic_authorized_operations = kAuthorizedOperationsUnknown;  // v8+
};
struct MetadataResponse {
  int32_t throttle_time_ms = 0;  // v3+
  std::vector<MetadataBroker> brokers;
  std::optional<std::string> cluster_id;  // v2+
  int32_t controller_id = -1;             // v1+
  std::vector<MetadataTopic> topics;
  int32_t cluster_authorized_operations = kAuthorizedOperationsUnknown;  // v8+
};

Status Decode(Reader& r, int16_t version, MetadataRequest* out);
void Encode(Writer& w, int16_t version, const MetadataRequest& m);
Status Decode(Reader& r, int16_t version, MetadataResponse* out);
void Encode(Writer& w, int16_t version, const MetadataResponse& m);

// ---- ListOffsets --------------------------------------------------------------------------------

// Special timestamps of ListOffsetsPartition::timestamp.
inline constexpr int64_t kListOffsetsLatest = -1;
inline constexpr int64_t kListOffsetsEarliest = -2;

struct ListOffsetsPartition {
  int32_t index = 0;
  int32_t current_leader_epoch = -1;  // v4+
  int64_t timestamp = 0;              // ms, or kListOffsetsLatest / kListOffsetsEarliest
};
struct ListOffsetsTopic {
  std::string_view name;
  std::vector<ListOffsetsPartition> partitions;
};
struct ListOffsetsRequest {
  int32_t replica_id = -1;
  int8_t isolation_level = 0;  // v2+
  std::vector<ListOffsetsTopic> topics;
};

struct ListOffsetsPartitionResponse {
  int32_t index = 0;
  ErrorCode error_code = ErrorCode::kNone;
  int64_t timestamp = -1;
  int64_t offset = -1;
  int32_t leader_epoch = -1;  // v4+
};
struct ListOffsetsTopicResponse {
  std::string name;
  std::vector<ListOffsetsPartitionResponse> partitions;
};
struct ListOffsetsResponse {
  int32_t throttle_time_ms = 0;  // v2+
  std::vector<ListOffsetsTopicResponse> topics;
};

Status Decode(Reader& r, int16_t version, ListOffsetsRequest* out);
void Encode(Writer& w, int16_t version, const ListOffsetsRequest& m);
Status Decode(Reader& r, int16_t version, ListOffsetsResponse* out);
void Encode(Writer& w, int16_t version, const ListOffsetsResponse& m);

// ---- OffsetCommit -------------------------------------------------------------------------------

struct OffsetCommitPartition {
  int32_t index = 0;
  int64_t committed_offset = 0;
  int32_t committed_leader_epoch = -1;  // v6+
  std::optional<std::string_view> committed_metadata;
};
struct OffsetCommitTopic {
  std::string_view name;
  std::vector<OffsetCommitPartition> partitions;
};
struct OffsetCommitRequest {
  std::string_view group_id;
  int32_t generation_id = -1;  // -1 (with an empty member id): a commit from outside the group
  std::string_view member_id;
  std::optional<std::string_view> group_instance_id;  // v7+
  int64_t retention_time_ms = -1;                     // v2-4 only (-1: the broker's default)
  std::vector<OffsetCommitTopic> topics;
};

struct OffsetCommitPartitionResponse {
  int32_t index = 0;
  ErrorCode error_code = ErrorCode::kNone;
};
struct OffsetCommitTopicResponse {
  std::string name;
  std::vector<OffsetCommitPartitionResponse> partitions;
};
struct OffsetCommitResponse {
  int32_t throttle_time_ms = 0;  // v3+
  std::vector<OffsetCommitTopicResponse> topics;
};

Status Decode(Reader& r, int16_t version, OffsetCommitRequest* out);
void Encode(Writer& w, int16_t version, const OffsetCommitRequest& m);
Status Decode(Reader& r, int16_t version, OffsetCommitResponse* out);
void Encode(Writer& w, int16_t version, const OffsetCommitResponse& m);

// ---- OffsetFetch --------------------------------------------------------------------------------

struct OffsetFetchTopic {
  std::string_view name;
  std::vector<int32_t> partitions;
};
struct OffsetFetchRequest {
  std::string_view group_id;
  // Null (v2+ only; v1 rejects it as malformed): every topic the group has offsets for.
  std::optional<std::vector<OffsetFetchTopic>> topics;
};

struct OffsetFetchPartitionResponse {
  int32_t index = 0;
  int64_t committed_offset = -1;        // -1: nothing committed
  int32_t committed_leader_epoch = -1;  // v5+
  std::optional<std::string> metadata;
  ErrorCode error_code = ErrorCode::kNone;
};
struct OffsetFetchTopicResponse {
  std::string name;
  std::vector<OffsetFetchPartitionResponse> partitions;
};
struct OffsetFetchResponse {
  int32_t throttle_time_ms = 0;  // v3+
  std::vector<OffsetFetchTopicResponse> topics;
  ErrorCode error_code = ErrorCode::kNone;  // v2+ (after the topics)
};

Status Decode(Reader& r, int16_t version, OffsetFetchRequest* out);
void Encode(Writer& w, int16_t version, const OffsetFetchRequest& m);
Status Decode(Reader& r, int16_t version, OffsetFetchResponse* out);
void Encode(Writer& w, int16_t version, const OffsetFetchResponse& m);

}  // namespace rdmq::kafka
