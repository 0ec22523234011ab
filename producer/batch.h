// A batch: records encoded in place (storage::BatchBuilder) in a partition's chunk of the record
// arena, the futures and callbacks of those records, and (TrackedBatch) where it was written.
//
// Threading: owned by its partition and touched under the partition's lock until it completes;
// then by the one thread that finishes it (callbacks), which deletes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "producer/ack_tracker.h"
#include "producer/arena.h"
#include "producer/future.h"
#include "rdmq/producer/producer.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::producer {

struct Batch : TrackedBatch {
  std::shared_ptr<SendFuture::State> state;
  std::vector<std::pair<uint32_t, SendCallback>> callbacks;  // record index, callback
  Chunk* chunk = nullptr;
  std::byte* buf = nullptr;
  size_t capacity = 0;
  std::optional<storage::BatchBuilder> builder;  // while open
  uint64_t created_ns = 0;

  // Closes the batch to more records: its bytes are final.
  void Close() {
    size = builder->Finish();
    count = builder->count();
    builder.reset();
  }
};

}  // namespace rdmq::producer
