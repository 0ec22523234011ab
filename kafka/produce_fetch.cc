// Produce and Fetch bodies (produce_fetch.h; docs/kafka-protocol.md, "Produce" and "Fetch").
#include "rdmq/kafka/produce_fetch.h"

#include "kafka/codec_io.h"
#include "rdmq/kafka/api.h"

namespace rdmq::kafka {
namespace {

template <class Io, class M>
void ProduceRequestBody(Io& io, int16_t v, M& m) {
  if (v >= 3) io.NullableString(m.transactional_id, "transactional_id");
  io.Int16(m.acks, "acks");
  io.Int32(m.timeout_ms, "timeout_ms");
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 8, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.NullableBytes(p.records, "partition.records");
    });
  });
}

template <class Io, class M>
void ProduceResponseBody(Io& io, int16_t v, M& m) {
  io.Array(m.topics, "responses", 6, [&](auto& t) {
    io.String(t.name, "response.name");
    io.Array(t.partitions, "response.partitions", 14, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.Error(p.error_code, "partition.error_code");
      io.Int64(p.base_offset, "partition.base_offset");
      if (v >= 2) io.Int64(p.log_append_time_ms, "partition.log_append_time_ms");
      if (v >= 5) io.Int64(p.log_start_offset, "partition.log_start_offset");
      if (v >= 8) {
        io.Array(p.record_errors, "partition.record_errors", 6, [&](auto& e) {
          io.Int32(e.batch_index, "record_error.batch_index");
          io.NullableString(e.message, "record_error.message");
        });
        io.NullableString(p.error_message, "partition.error_message");
      }
    });
  });
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
}

template <class Io, class M>
void FetchRequestBody(Io& io, int16_t v, M& m) {
  io.Int32(m.replica_id, "replica_id");
  io.Int32(m.max_wait_ms, "max_wait_ms");
  io.Int32(m.min_bytes, "min_bytes");
  if (v >= 3) io.Int32(m.max_bytes, "max_bytes");
  if (v >= 4) io.Int8(m.isolation_level, "isolation_level");
  if (v >= 7) {
    io.Int32(m.session_id, "session_id");
    io.Int32(m.session_epoch, "session_epoch");
  }
  io.Array(m.topics, "topics", 6, [&](auto& t) {
    io.String(t.name, "topic.name");
    io.Array(t.partitions, "topic.partitions", 16, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      if (v >= 9) io.Int32(p.current_leader_epoch, "partition.current_leader_epoch");
      io.Int64(p.fetch_offset, "partition.fetch_offset");
      if (v >= 5) io.Int64(p.log_start_offset, "partition.log_start_offset");
      io.Int32(p.max_bytes, "partition.max_bytes");
    });
  });
  if (v >= 7) {
    io.Array(m.forgotten_topics, "forgotten_topics", 6, [&](auto& t) {
      io.String(t.name, "forgotten_topic.name");
      io.Int32Array(t.partitions, "forgotten_topic.partitions");
    });
  }
  if (v >= 11) io.String(m.rack_id, "rack_id");
}

template <class Io, class M>
void FetchResponseBody(Io& io, int16_t v, M& m) {
  if (v >= 1) io.Int32(m.throttle_time_ms, "throttle_time_ms");
  if (v >= 7) {
    io.Error(m.error_code, "error_code");
    io.Int32(m.session_id, "session_id");
  }
  io.Array(m.topics, "responses", 6, [&](auto& t) {
    io.String(t.name, "response.topic");
    io.Array(t.partitions, "response.partitions", 18, [&](auto& p) {
      io.Int32(p.index, "partition.index");
      io.Error(p.error_code, "partition.error_code");
      io.Int64(p.high_watermark, "partition.high_watermark");
      if (v >= 4) io.Int64(p.last_stable_offset, "partition.last_stable_offset");
      if (v >= 5) io.Int64(p.log_start_offset, "partition.log_start_offset");
      if (v >= 4) {
        io.NullableArray(p.aborted_transactions, "partition.aborted_transactions", 16, [&](auto& a) {
          io.Int64(a.producer_id, "aborted_transaction.producer_id");
          io.Int64(a.first_offset, "aborted_transaction.first_offset");
        });
      }
      if (v >= 11) io.Int32(p.preferred_read_replica, "partition.preferred_read_replica");
      io.Records(p.records, "partition.records");
    });
  });
}

}  // namespace

RDMQ_KAFKA_MESSAGE_CODEC(ProduceRequest, ApiKey::kProduce, ProduceRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(ProduceResponse, ApiKey::kProduce, ProduceResponseBody)
RDMQ_KAFKA_MESSAGE_CODEC(FetchRequest, ApiKey::kFetch, FetchRequestBody)
RDMQ_KAFKA_MESSAGE_CODEC(FetchResponse, ApiKey::kFetch, FetchResponseBody)

}  // namespace rdmq::kafka
