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
  StateRef state;
  std::vector<std::pair<uint32_t, SendCallback>> callbacks;  // record index, callback
  Chunk* chunk = nullptr;
  std::byte* buf = nullptr;
  size_t capacity = 0;
  std::optional<storage::BatchBuilder> builder;  // while open
  uint64_t created_ns = 0;

  // Closes the batch to more records: its bytes are final. With a codec, its records are
  // compressed in place (the batch shrinks within its chunk) when that makes it smaller; a batch
  // that does not shrink, or whose compression fails, stays plain. Returns that failure (to be
  // logged), OK otherwise.
  Status Close(compression::Codec codec) {
    size = builder->Finish();
    count = builder->count();
    builder.reset();
    if (codec == compression::Codec::kNone || size == 0) return Status::Ok();
    auto packed = storage::CompressBatchInPlace({buf, size}, codec);
    if (!packed.ok()) return packed.status();
    size = *packed;
    return Status::Ok();
  }
};

}  // namespace rdmq::producer
