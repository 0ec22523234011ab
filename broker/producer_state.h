// ProducerStateTable: the idempotent producers of one partition (Kafka's producer state: per
// producer id the newest epoch seen and the last sequence committed at it, and the offsets of its
// last few batches, so that a Kafka producer's retry of a batch already stored is answered with
// the offset it got).
//
// Sans-I/O: it reads no clock, touches no log and no fabric. Not thread-safe: the partition that
// owns it guards it with its lock (Partition::mu).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "rdmq/common/types.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::broker::internal {

struct ProducerState {
  int16_t epoch = 0;
  int32_t last_sequence = -1;  // of the last committed (or, shared, accepted) record
};

// A stored batch of an idempotent producer: its sequences and where its offsets start.
struct BatchPlace {
  int32_t first_sequence = -1;
  int32_t last_sequence = -1;
  Offset base_offset{kNoOffset};
};
// How many batches per producer are remembered (Kafka keeps five).
inline constexpr size_t kRecentBatches = 5;

class ProducerStateTable {
 public:
  // The state a range from `id` at `epoch` continues: what is known for that epoch, or a fresh
  // start (epoch, no sequence yet) for an unknown producer or another epoch.
  ProducerState Expected(ProducerId id, int16_t epoch) const;
  // The last sequence committed by `id` at `epoch`, -1 if none (what a new lease resumes from).
  int32_t LastSequence(ProducerId id, int16_t epoch) const;
  // The epoch last recorded for `id`, if any (an older one is fenced).
  std::optional<int16_t> Epoch(ProducerId id) const;

  // Records the state after a commit of `id`'s batches.
  void Set(ProducerId id, ProducerState state);
  // A shared range of `id` starting at `first_sequence` was dropped: its sequences (and any
  // after it) may be sent again.
  void Rewind(ProducerId id, int32_t first_sequence);
  // Rebuilding after a restart: feed every committed batch header in log order.
  void Observe(const storage::BatchHeader& h);
  void Clear() {
    states_.clear();
    recent_.clear();
  }
  size_t size() const { return states_.size(); }

  // The batch of `id` at `epoch` was stored at `base_offset` (the newest kRecentBatches are kept).
  void NoteBatch(ProducerId id, int16_t epoch, const BatchPlace& place);
  // The base offset of the batch of `id` at `epoch` with these sequences, when a remembered range
  // holds them (a range appended at once may span several requests: offsets follow sequences).
  std::optional<Offset> FindBatch(ProducerId id, int16_t epoch, int32_t first_sequence,
                                  int32_t last_sequence) const;

 private:
  struct Recent {
    int16_t epoch = 0;
    std::array<BatchPlace, kRecentBatches> batches{};
    size_t next = 0;  // ring position of the next batch
  };
  std::unordered_map<ProducerId, ProducerState> states_;
  std::unordered_map<ProducerId, Recent> recent_;
};

}  // namespace rdmq::broker::internal
