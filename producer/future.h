// SendFuture's shared state: one per batch, shared by the futures of its records and the batch
// itself until it completes.
//
// Threading: the producer fills `status`, `base_offset` and `records` under the partition's
// lock, then publishes them with `done` (release); readers look at them only once `done` is set
// (acquire).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/producer/producer.h"

namespace rdmq::producer {

class Core;

// What a record's metadata needs beyond its batch's.
struct RecordInfo {
  TimestampMs timestamp{0};
  uint32_t key_size = 0;
  uint32_t value_size = 0;
};

}  // namespace rdmq::producer

struct rdmq::producer::SendFuture::State {
  std::shared_ptr<Core> core;  // drives progress while a caller waits
  std::atomic<int> done{0};
  Status status;
  std::string_view topic;  // points into the producer's topic table (lives as long as core)
  PartitionId partition{0};
  Offset base_offset = kNoOffset;  // kNoOffset with acks=0
  std::vector<RecordInfo> records;

  bool ready() const { return done.load(std::memory_order_acquire) != 0; }
  // The metadata of record `index` of a batch that succeeded.
  RecordMetadata Metadata(uint32_t index) const {
    RecordMetadata md;
    md.topic = std::string(topic);
    md.partition = partition.value();
    md.offset = base_offset < Offset(0) ? -1 : (base_offset + index).value();
    if (index < records.size()) {
      md.timestamp_ms = records[index].timestamp.value();
      md.serialized_key_size = records[index].key_size;
      md.serialized_value_size = records[index].value_size;
    }
    return md;
  }
};

namespace rdmq::producer {

// A future that is already failed with `s` (a Send refused before the record was taken).
inline SendFuture FailedFuture(Status s) {
  auto st = std::make_shared<SendFuture::State>();
  st->status = std::move(s);
  st->done.store(1);
  return SendFuture(std::move(st), 0);
}

}  // namespace rdmq::producer
