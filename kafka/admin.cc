// Admin API bodies (admin.h; docs/kafka-protocol.md).
#include "rdmq/kafka/admin.h"

#include "kafka/codec_io.h"
#include "rdmq/kafka/api.h"

namespace rdmq::kafka {
namespace {

template <class Io, class M>
void CreateTopicsRequestBody(Io& io, int16_t v, M& m) {
  io.Array(m.topics, "topics", 16, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Int32(t.num_partitions, "topic.num_partitions");
    io.Int16(t.replication_factor, "topic.replication_factor");
    io.Array(t.assignments, "topic.assignments", 8, [&](auto& a) {
      io.Int32(a.partition_index, "assignment.partition_index");
      io.Int32Array(a.broker_ids, "assignment.broker_ids");
    });
    io.Array(t.configs, "topic.configs", 4, [&](auto& c) {
      io.String(c.name, "config.name");
      io.NullableString(c.value, "config.value");
    });
  });
  io.Int32(m.timeout_ms, "timeout_ms");
  if (v >= 1) io.Bool(m.validate_only, "validate_only");
}

template <class Io, class M>
void CreateTopicsResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 2) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.topics, "topics", 4, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Error(t.error_code, "topic.error_code");
    if (v >= 1) io.NullableString(t.error_message, "topic.error_message");
  });
}

template <class Io, class M>
void DeleteTopicsRequestBody(Io& io, int16_t, M& m) {
  io.StringArray(m.topic_names, "topic_names");
  io.Int32(m.timeout_ms, "timeout_ms");
}

template <class Io, class M>
void DeleteTopicsResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.responses, "responses", 4, [&](auto& t) {
    io.String(t.name, "response.name");
    io.Error(t.error_code, "response.error_code");
  });
}

template <class Io, class M>
void InitProducerIdRequestBody(Io& io, int16_t, M& m) {
  io.NullableString(m.transactional_id, "transactional_id");
  io.Int32(m.transaction_timeout_ms, "transaction_timeout_ms");
}

template <class Io, class M>
void InitProducerIdResponseBody(Io& io, int16_t, M& m) {
  io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Error(m.error_code, "error_code");
  io.Int64(m.producer_id, "producer_id");
  io.Int16(m.producer_epoch, "producer_epoch");
}

template <class Io, class M>
void DescribeConfigsRequestBody(Io& io, int16_t v, M& m) {
  io.Array(m.resources, "resources", 7, [&](auto& res) {
    io.Int8(res.resource_type, "resource.resource_type");
    io.String(res.resource_name, "resource.resource_name");
    io.NullableArray(res.configuration_keys, "resource.configuration_keys", 2,
                     [&](auto& key) { io.String(key, "resource.configuration_key"); });
  });
  if (v >= 1) io.Bool(m.include_synonyms, "include_synonyms");
}

template <class Io, class M>
void DescribeConfigsResponseBody(Io& io, int16_t v, M& m) {
  io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.results, "results", 11, [&](auto& res) {
    io.Error(res.error_code, "result.error_code");
    io.NullableString(res.error_message, "result.error_message");
    io.Int8(res.resource_type, "result.resource_type");
    io.String(res.resource_name, "result.resource_name");
    io.Array(res.configs, "result.configs", 7, [&](auto& c) {
      io.String(c.name, "config.name");
      io.NullableString(c.value, "config.value");
      io.Bool(c.read_only, "config.read_only");
      if (v == 0) io.Bool(c.is_default, "config.is_default");
      if (v >= 1) io.Int8(c.config_source, "config.config_source");
      io.Bool(c.is_sensitive, "config.is_sensitive");
      if (v >= 1) {
        io.Array(c.synonyms, "config.synonyms", 5, [&](auto& s) {
          io.String(s.name, "synonym.name");
          io.NullableString(s.value, "synonym.value");
          io.Int8(s.source, "synonym.source");
        });
      }
    });
  });
}

template <class Io, class M>
void CreatePartitionsRequestBody(Io& io, int16_t, M& m) {
  io.Array(m.topics, "topics", 10, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Int32(t.count, "topic.count");
    io.NullableArray(t.assignments, "topic.assignments", 4,
                     [&](auto& a) { io.Int32Array(a.broker_ids, "assignment.broker_ids"); });
  });
  io.Int32(m.timeout_ms, "timeout_ms");
  io.Bool(m.validate_only, "validate_only");
}

template <class Io, class M>
void CreatePartitionsResponseBody(Io& io, int16_t, M& m) {
  io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.results, "results", 6, [&](auto& t) {
    io.String(t.name, "result.name");
    io.Error(t.error_code, "result.error_code");
    io.NullableString(t.error_message, "result.error_message");
  });
}

template <class Io, class M>
void DeleteGroupsRequestBody(Io& io, int16_t, M& m) {
  io.StringArray(m.group_names, "groups_names");
}

template <class Io, class M>
void DeleteGroupsResponseBody(Io& io, int16_t, M& m) {
  io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.results, "results", 4, [&](auto& g) {
    io.String(g.group_id, "result.group_id");
    io.Error(g.error_code, "result.error_code");
  });
}

}  // namespace

RDMQ_KAFKA_MESSAGE_CODEC(CreateTopicsRequest, ApiKey::kCreateTopics, CreateTopicsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(CreateTopicsResponse, ApiKey::kCreateTopics, CreateTopicsResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(DeleteTopicsRequest, ApiKey::kDeleteTopics, DeleteTopicsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(DeleteTopicsResponse, ApiKey::kDeleteTopics, DeleteTopicsResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(InitProducerIdRequest, ApiKey::kInitProducerId, InitProducerIdRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(InitProducerIdResponse, ApiKey::kInitProducerId, InitProducerIdResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(DescribeConfigsRequest, ApiKey::kDescribeConfigs, DescribeConfigsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(DescribeConfigsResponse, ApiKey::kDescribeConfigs, DescribeConfigsResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(CreatePartitionsRequest, ApiKey::kCreatePartitions, CreatePartitionsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(CreatePartitionsResponse, ApiKey::kCreatePartitions, CreatePartitionsResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(DeleteGroupsRequest, ApiKey::kDeleteGroups, DeleteGroupsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(DeleteGroupsResponse, ApiKey::kDeleteGroups, DeleteGroupsResponseBody)

}  // namespace rdmq::kafka
