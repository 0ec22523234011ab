// CommitValidator: decides whether a producer's commit of a byte range may go to the log, for
// both commit paths (the data plane's WRITE_WITH_IMM and the Commit RPC).
//
// Sans-I/O: the caller hands it the facts (the lease's identity, the partition's active
// segment, the producers' state, the range's bytes) and gets a Status back; it reads no clock
// and takes no lock (the caller holds the partition's). The one thing it changes is the range
// itself: in shared mode a batch already committed is overwritten in place by a filler batch
// so that it is not delivered twice.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "producer_state.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"

namespace rdmq::broker::internal {

// Who commits: the lease's producer identity and mode.
struct Committer {
  ProducerId producer_id = kNoProducerId;  // kNoProducerId: not idempotent
  int16_t producer_epoch = 0;
  bool shared = false;
};

// The active segment of the partition as the commit finds it.
struct ActiveSegment {
  Offset base{0};
  std::byte* data = nullptr;  // the data area (after the segment header)
  uint64_t capacity = 0;      // bytes in the data area
  bool durable = false;       // its commits are made durable (msync), not only visible
  Position committed{0};      // the committed end
  Offset log_end{0};          // the offset after the last committed record: where writers continue
  // What readers may read up to: the log end, or in a replicated partition what every in-sync
  // replica holds (storage's exposed end).
  Offset high_watermark{0};
};

// What CheckBatches found. `status` is the verdict; `next` the producer's state to record once
// the range is committed; `first_sequence` the first new sequence in it (-1: none).
struct BatchCheck {
  Status status;
  ProducerState next;
  int32_t first_sequence = -1;
  uint32_t duplicates = 0;  // batches already committed (shared: replaced by fillers)
};

class CommitValidator {
 public:
  // `where` names the partition in messages; `max_batch_bytes` is its max.message.bytes.
  CommitValidator(std::string_view where, const ProducerStateTable& producers, uint64_t max_batch_bytes)
      : where_(where), producers_(producers), max_batch_(max_batch_bytes) {}

  // A data-plane commit of `length` bytes at the committed end of the lease's segment: only
  // exclusive leases commit so, on the active segment, within the credit (kInvalidRequest,
  // kStaleLocation, kOutOfCredit).
  Status CheckImmediate(const Committer& c, Offset lease_segment, const ActiveSegment& active,
                        uint64_t length) const;

  // A Commit RPC for [position, position + length) of segment `segment`, which is writable
  // (registered and not sealed) or not. Refuses a sealed or unknown segment (kStaleLocation), an
  // empty range, an exclusive range not at the committed end (kInvalidRequest). Returns whether
  // the range lies inside the segment's `capacity`: then its batches are checked
  // (CheckBatches); a range that does not is the log's to refuse.
  Result<bool> CheckRequest(const Committer& c, bool segment_writable, Offset segment, Position position,
                            uint64_t length, uint64_t capacity, const ActiveSegment& active) const;

  // Walks the batch headers of `range`: each at most max.message.bytes (kRecordTooLarge), from
  // the lease's producer and epoch (kInvalidProducerEpoch), and for an idempotent producer in
  // sequence (kOutOfOrderSequence; a batch already committed is kDuplicateSequence when
  // exclusive, replaced by a filler when shared). Malformed bytes end the walk: they are the
  // log's to report.
  BatchCheck CheckBatches(const Committer& c, std::span<std::byte> range) const;

 private:
  std::string_view where_;
  const ProducerStateTable& producers_;
  uint64_t max_batch_;
};

}  // namespace rdmq::broker::internal
