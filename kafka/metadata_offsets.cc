// Metadata, ListOffsets, OffsetCommit and OffsetFetch bodies (metadata_offsets.h;
// docs/kafka-protocol.md).
#include "rdmq/kafka/metadata_offsets.h"

#include "kafka/codec_io.h"
#include "rdmq/kafka/api.h"

namespace rdmq::kafka {
namespace {

template <class Io, class M>
void MetadataRequestBody(Io& io, int16_t v, M& m) {
  io.NullableArray(m.topics, "topics", 2, [&](auto& name) { io.String(name, "topic.name"); });
  if (v >= 4) io.Bool(m.allow_auto_topic_creation, "allow_auto_topic_creation");
  if (v >= 8) {
    io.Bool(m.include_cluster_authorized_operations, "include_cluster_authorized_operations");
    io.Bool(m.include_topic_authorized_operations, "include_topic_authorized_operations");
  }
}

template <class Io, class M>
void MetadataResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 3) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.brokers, "brokers", 10, [&](auto& b) {
    io.Int32(b.node_id, "broker.node_id");
    io.String(b.host, "broker.host");
    io.Int32(b.port, "broker.port");
    if (v >= 1) io.NullableString(b.rack, "broker.rack");
  });
  if (v >= 2) io.NullableString(m.cluster_id, "cluster_id");
  if (v >= 1) io.Int32(m.controller_id, "controller_id");
  io.Array(m.topics, "topics", 8, [&](auto& t) {
    io.Error(t.error_code, "topic.error_code");
    io.String(t.name, "topic.name");
    if (v >= 1) io.Bool(t.is_internal, "topic.is_internal");
    io.Array(t.partitions, "topic.partitions", 18, [&](auto& p) {
      io.Error(p.error_code, "partition.error_code");
      io.Int32(p.index, "partition.index");
      io.Int32(p.leader_id, "partition.leader_id");
      if (v >= 7) io.Int32(p.leader_epoch, "partition.leader_epoch");
      io.Int32Array(p.replica_nodes, "partition.replica_nodes");
      io.Int32Array(p.isr_nodes, "partition.isr_nodes");
      if (v >= 5) io.Int32Array(p.offline_replicas, "partition.offline_replicas");
    });
    if (v >= 8) io.Int32(t.topic_authorized_operations, "topic.topic_authorized_operations");
  });
  if (v >= 8) io.Int32(m.cluster_authorized_operations, "cluster_authorized_operations");
}

template <class Io, class M>
void ListOffsetsRequestBody(Io& io, int16_t v, M& m) {
  io.Int32(m.replica_id, "replica_id");
  if (v >= 2) io.Int8(m.isolation_level, "isolation_level");
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 12, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      if (v >= 4) io.Int32(p.current_leader_epoch, "partition.current_leader_epoch");
      io.Int64(p.timestamp, "partition.timestamp");
    });
  });
}

template <class Io, class M>
void ListOffsetsResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 2) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 22, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.Error(p.error_code, "partition.error_code");
      io.Int64(p.timestamp, "partition.timestamp");
      io.Int64(p.offset, "partition.offset");
      if (v >= 4) io.Int32(p.leader_epoch, "partition.leader_epoch");
    });
  });
}

template <class Io, class M>
void OffsetCommitRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.group_id, "group_id");
  io.Int32(m.generation_id, "generation_id");
  io.String(m.member_id, "member_id");
  if (v >= 7) io.NullableString(m.group_instance_id, "group_instance_id");
  if (v >= 2 && v <= 4) io.Int64(m.retention_time_ms, "retention_time_ms");
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 14, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.Int64(p.committed_offset, "partition.committed_offset");
      if (v >= 6) io.Int32(p.committed_leader_epoch, "partition.committed_leader_epoch");
      io.NullableString(p.committed_metadata, "partition.committed_metadata");
    });
  });
}

template <class Io, class M>
void OffsetCommitResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 3) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 6, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.Error(p.error_code, "partition.error_code");
    });
  });
}

template <class Io, class M>
void OffsetFetchRequestBody(Io& io, int16_t v, M& m) {
  io.String(m.group_id, "group_id");
  auto topic = [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Int32Array(t.partitions, "topic.partition_indexes");
  };
  if (v >= 2) {
    io.NullableArray(m.topics, "topics", 6, topic);
  } else {
    io.RequiredArray(m.topics, "topics", 6, topic);
  }
}

template <class Io, class M>
void OffsetFetchResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 3) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 16, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.Int64(p.committed_offset, "partition.committed_offset");
      if (v >= 5) io.Int32(p.committed_leader_epoch, "partition.committed_leader_epoch");
      io.NullableString(p.metadata, "partition.metadata");
      io.Error(p.error_code, "partition.error_code");
    });
  });
  if (v >= 2) io.Error(m.error_code, "error_code");
}

}  // namespace

RDMQ_KAFKA_MESSAGE_CODEC(MetadataRequest, ApiKey::kMetadata, MetadataRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(MetadataResponse, ApiKey::kMetadata, MetadataResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(ListOffsetsRequest, ApiKey::kListOffsets, ListOffsetsRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(ListOffsetsResponse, ApiKey::kListOffsets, ListOffsetsResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(OffsetCommitRequest, ApiKey::kOffsetCommit, OffsetCommitRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(OffsetCommitResponse, ApiKey::kOffsetCommit, OffsetCommitResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(OffsetFetchRequest, ApiKey::kOffsetFetch, OffsetFetchRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(OffsetFetchResponse, ApiKey::kOffsetFetch, OffsetFetchResponseBody)

}  // namespace rdmq::kafka
