// Produce (api 0, v3-8) and Fetch (api 1, v4-11): the data-path messages
// (docs/kafka-protocol.md, "Produce" and "Fetch").
//
// Conventions of every message header (produce_fetch.h, metadata_offsets.h, groups.h, admin.h,
// api_versions.h): one plain struct per request and per response holding the union of the fields
// over the supported versions; a field carries the versions it is on the wire in its comment, and
// keeps its default (Kafka's default for that field) at versions without it. Requests hold views
// (std::string_view, spans) INTO the frame they were decoded from, so the frame must outlive
// them; responses own their strings, and borrow only byte blobs (record batches, group metadata),
// which must stay valid until the encoded chunks have been written out.
//
//   Status Decode(Reader&, int16_t version, XRequest*)   reads the whole rest of the frame:
//       kUnsupportedVersion outside SupportedApis(), kTrailingBytes when bytes are left, the
//       Reader's error (field and offset in the context) for anything malformed.
//   void Encode(Writer&, int16_t version, const XResponse&)   writes the body (after the header).
//
// Encode of requests and Decode of responses exist too, for tests, tools and the fuzzer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/kafka/errors.h"
#include "rdmq/kafka/wire.h"

namespace rdmq::kafka {

// ---- Produce ------------------------------------------------------------------------------------

struct ProducePartition {
  int32_t index = 0;
  // RecordBatch v2 bytes (one or more batches) inside the request frame; null is legal on the wire.
  std::optional<ByteSpan> records;
};
struct ProduceTopic {
  std::string_view name;
  std::vector<ProducePartition> partitions;
};
struct ProduceRequest {
  std::optional<std::string_view> transactional_id;  // v3+
  int16_t acks = 0;                                  // 0: no response is sent at all
  int32_t timeout_ms = 0;
  std::vector<ProduceTopic> topics;
};

struct ProduceRecordError {  // v8+
  int32_t batch_index = 0;
  std::optional<std::string> message;
};
struct ProducePartitionResponse {
  int32_t index = 0;
  ErrorCode error_code = ErrorCode::kNone;
  int64_t base_offset = -1;
  int64_t log_append_time_ms = -1;                // v2+ (-1: CreateTime topics)
  int64_t log_start_offset = -1;                  // v5+
  std::vector<ProduceRecordError> record_errors;  // v8+
  std::optional<std::string> error_message;       // v8+
};
struct ProduceTopicResponse {
  std::string name;
  std::vector<ProducePartitionResponse> partitions;
};
struct ProduceResponse {
  std::vector<ProduceTopicResponse> topics;
  int32_t throttle_time_ms = 0;  // v1+ (after the topics)
};

Status Decode(Reader& r, int16_t version, ProduceRequest* out);
void Encode(Writer& w, int16_t version, const ProduceRequest& m);
Status Decode(Reader& r, int16_t version, ProduceResponse* out);
void Encode(Writer& w, int16_t version, const ProduceResponse& m);

// ---- Fetch --------------------------------------------------------------------------------------

struct FetchPartition {
  int32_t index = 0;
  int32_t current_leader_epoch = -1;  // v9+
  int64_t fetch_offset = 0;
  int64_t log_start_offset = -1;  // v5+ (followers only)
  int32_t max_bytes = 0;
};
struct FetchTopic {
  std::string_view name;
  std::vector<FetchPartition> partitions;
};
struct FetchForgottenTopic {  // v7+ (incremental fetch sessions)
  std::string_view name;
  std::vector<int32_t> partitions;
};
struct FetchRequest {
  int32_t replica_id = -1;  // -1 for consumers
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = 0x7fffffff;  // v3+
  int8_t isolation_level = 0;      // v4+: 0 read_uncommitted, 1 read_committed
  int32_t session_id = 0;          // v7+
  int32_t session_epoch = -1;      // v7+
  std::vector<FetchTopic> topics;
  std::vector<FetchForgottenTopic> forgotten_topics;  // v7+
  std::string_view rack_id;                           // v11+
};

struct FetchAbortedTransaction {
  int64_t producer_id = 0;
  int64_t first_offset = 0;
};
struct FetchPartitionResponse {
  int32_t index = 0;
  ErrorCode error_code = ErrorCode::kNone;
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;  // v4+
  int64_t log_start_offset = -1;    // v5+
  // v4+; null (the default) when there are none to report.
  std::optional<std::vector<FetchAbortedTransaction>> aborted_transactions;
  int32_t preferred_read_replica = -1;  // v11+
  // The record batches, in order, appended to the response by reference (no copy): typically
  // spans of the mapped log. Their total size is the field's int32 length; none = length 0.
  std::vector<ByteSpan> records;
};
struct FetchTopicResponse {
  std::string name;
  std::vector<FetchPartitionResponse> partitions;
};
struct FetchResponse {
  int32_t throttle_time_ms = 0;             // v1+
  ErrorCode error_code = ErrorCode::kNone;  // v7+ (top level: fetch session errors)
  int32_t session_id = 0;                   // v7+
  std::vector<FetchTopicResponse> topics;
};

Status Decode(Reader& r, int16_t version, FetchRequest* out);
void Encode(Writer& w, int16_t version, const FetchRequest& m);
Status Decode(Reader& r, int16_t version, FetchResponse* out);
void Encode(Writer& w, int16_t version, const FetchResponse& m);

}  // namespace rdmq::kafka
