// Admin APIs: CreateTopics (api 19, v0-4), DeleteTopics (20, v0-3), InitProducerId (22, v0-1),
// DescribeConfigs (32, v0-2), CreatePartitions (37, v0-1) and DeleteGroups (42, v0-1)
// (docs/kafka-protocol.md). Conventions: produce_fetch.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

// ---- CreateTopics -------------------------------------------------------------------------------

struct CreateTopicsAssignment {
  int32_t partition_index = 0;
  std::vector<int32_t> broker_ids;
};
struct CreateTopicsConfig {
  std::string_view name;
  std::optional<std::string_view> value;
};
struct CreateTopicsTopic {
  std::string_view name;
  int32_t num_partitions = -1;      // -1: the broker's default (v4+), or manual assignments
  int16_t replication_factor = -1;  // -1: the broker's default (v4+), or manual assignments
  std::vector<CreateTopicsAssignment> assignments;
  std::vector<CreateTopicsConfig> configs;
};
struct CreateTopicsRequest {
  std::vector<CreateTopicsTopic> topics;
  int32_t timeout_ms = 60000;
  bool validate_only = false;  // v1+
};

struct CreateTopicsTopicResponse {
  std::string name;
  ErrorCode error_code = ErrorCode::kNone;
  std::optional<std::string> error_message;  // v1+
};
struct CreateTopicsResponse {
  int32_t throttle_time_ms = 0;  // v2+
  std::vector<CreateTopicsTopicResponse> topics;
};

Status Decode(Reader& r, int16_t version, CreateTopicsRequest* out);
void Encode(Writer& w, int16_t version, const CreateTopicsRequest& m);
Status Decode(Reader& r, int16_t version, CreateTopicsResponse* out);
void Encode(Writer& w, int16_t version, const CreateTopicsResponse& m);

// ---- DeleteTopics -------------------------------------------------------------------------------

struct DeleteTopicsRequest {
  std::vector<std::string_view> topic_names;
  int32_t timeout_ms = 0;
};
struct DeleteTopicsTopicResponse {
  std::string name;
  ErrorCode error_code = ErrorCode::kNone;
};
struct DeleteTopicsResponse {
  int32_t throttle_time_ms = 0;  // v1+
  std::vector<DeleteTopicsTopicResponse> responses;
};

Status Decode(Reader& r, int16_t version, DeleteTopicsRequest* out);
void Encode(Writer& w, int16_t version, const DeleteTopicsRequest& m);
Status Decode(Reader& r, int16_t version, DeleteTopicsResponse* out);
void Encode(Writer& w, int16_t version, const DeleteTopicsResponse& m);

// ---- InitProducerId -----------------------------------------------------------------------------

struct InitProducerIdRequest {
  std::optional<std::string_view> transactional_id;  // null: an idempotent (not transactional) producer
  int32_t transaction_timeout_ms = 0;
};
struct InitProducerIdResponse {
  int32_t throttle_time_ms = 0;
  ErrorCode error_code = ErrorCode::kNone;
  int64_t producer_id = -1;
  int16_t producer_epoch = 0;
};

Status Decode(Reader& r, int16_t version, InitProducerIdRequest* out);
void Encode(Writer& w, int16_t version, const InitProducerIdRequest& m);
Status Decode(Reader& r, int16_t version, InitProducerIdResponse* out);
void Encode(Writer& w, int16_t version, const InitProducerIdResponse& m);

// ---- DescribeConfigs ----------------------------------------------------------------------------

// Resource types of DescribeConfigs.
inline constexpr int8_t kResourceTopic = 2;
inline constexpr int8_t kResourceBroker = 4;

struct DescribeConfigsResource {
  int8_t resource_type = 0;
  std::string_view resource_name;
  std::optional<std::vector<std::string_view>> configuration_keys;  // null: every key
};
struct DescribeConfigsRequest {
  std::vector<DescribeConfigsResource> resources;
  bool include_synonyms = false;  // v1+
};

struct DescribeConfigsSynonym {  // v1+
  std::string name;
  std::optional<std::string> value;
  int8_t source = 0;
};
struct DescribeConfigsEntry {
  std::string name;
  std::optional<std::string> value;
  bool read_only = false;
  bool is_default = false;    // v0 only
  int8_t config_source = -1;  // v1+: 1 topic, 4 static broker, 5 default, ...
  bool is_sensitive = false;
  std::vector<DescribeConfigsSynonym> synonyms;  // v1+
};
struct DescribeConfigsResult {
  ErrorCode error_code = ErrorCode::kNone;
  std::optional<std::string> error_message;
  int8_t resource_type = 0;
  std::string resource_name;
  std::vector<DescribeConfigsEntry> configs;
};
struct DescribeConfigsResponse {
  int32_t throttle_time_ms = 0;
  std::vector<DescribeConfigsResult> results;
};

Status Decode(Reader& r, int16_t version, DescribeConfigsRequest* out);
void Encode(Writer& w, int16_t version, const DescribeConfigsRequest& m);
Status Decode(Reader& r, int16_t version, DescribeConfigsResponse* out);
void Encode(Writer& w, int16_t version, const DescribeConfigsResponse& m);

// ---- CreatePartitions ---------------------------------------------------------------------------

struct CreatePartitionsAssignment {
  std::vector<int32_t> broker_ids;
};
struct CreatePartitionsTopic {
  std::string_view name;
  int32_t count = 0;                                                   // the new total partition count
  std::optional<std::vector<CreatePartitionsAssignment>> assignments;  // null: the broker places them
};
struct CreatePartitionsRequest {
  std::vector<CreatePartitionsTopic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;
};

struct CreatePartitionsTopicResponse {
  std::string name;
  ErrorCode error_code = ErrorCode::kNone;
  std::optional<std::string> error_message;
};
struct CreatePartitionsResponse {
  int32_t throttle_time_ms = 0;
  std::vector<CreatePartitionsTopicResponse> results;
};

Status Decode(Reader& r, int16_t version, CreatePartitionsRequest* out);
void Encode(Writer& w, int16_t version, const CreatePartitionsRequest& m);
Status Decode(Reader& r, int16_t version, CreatePartitionsResponse* out);
void Encode(Writer& w, int16_t version, const CreatePartitionsResponse& m);

// ---- DeleteGroups -------------------------------------------------------------------------------

struct DeleteGroupsRequest {
  std::vector<std::string_view> group_names;
};
struct DeleteGroupsGroupResponse {
  std::string group_id;
  ErrorCode error_code = ErrorCode::kNone;
};
struct DeleteGroupsResponse {
  int32_t throttle_time_ms = 0;
  std::vector<DeleteGroupsGroupResponse> results;
};

Status Decode(Reader& r, int16_t version, DeleteGroupsRequest* out);
void Encode(Writer& w, int16_t version, const DeleteGroupsRequest& m);
Status Decode(Reader& r, int16_t version, DeleteGroupsResponse* out);
void Encode(Writer& w, int16_t version, const DeleteGroupsResponse& m);

}  // namespace rdmq::kafka
