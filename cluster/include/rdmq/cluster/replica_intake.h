// CheckReplicaRange: what a follower checks before it commits a range of batches that its leader
// WROTE into the follower's log over the fabric (docs/replication.md, "Replication over the
// fabric"). The leader copies its own committed batches verbatim: their offsets, producer ids,
// sequences and the partitionLeaderEpoch it stamped on append. So the follower takes a range only
// when
//   - it came through a replica lease of the partition's current leader epoch (a deposed
//     leader's lease is fenced even if its window was not yet revoked),
//   - it is whole batches, each CRC-valid and at most max.message.bytes,
//   - the first batch starts at the follower's log end and each next one where the previous
//     ended (no gap, no overlap),
//   - every batch carries a leader epoch, none above the writer's, and epochs never go back
//     along the log (LeaderEpochs::Observe).
// On success it answers the new log end and the follower's epoch cache with the range's epochs
// added; on failure nothing is taken and the caller's cache is unchanged.
//
// Sans-I/O: bytes and facts in, a verdict out; no clock, no lock, no allocation beyond the
// returned cache. Threading: a pure function.
#pragma once

#include <cstdint>
#include <span>

#include "rdmq/cluster/leader_epochs.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"

namespace rdmq::cluster {

struct ReplicaRangeFacts {
  Offset log_end{0};             // the follower's log end: where the first batch must start
  int32_t writer_epoch = -1;     // the leader epoch of the replica lease the range came through
  int32_t current_epoch = -1;    // the partition's leader epoch as the follower knows it
  uint64_t max_batch_bytes = 0;  // the topic's max.message.bytes
};

struct ReplicaRange {
  Offset end{0};  // the follower's log end once the range is committed
  uint32_t batches = 0;
  LeaderEpochs epochs;  // the follower's epoch cache with the range's epochs observed
};

// Errors: kFailedPrecondition when the writer's epoch is not the current one (older: a deposed
// leader, fenced; newer: this follower has not seen that epoch yet and may retry once it has);
// kInvalidArgument for an empty range, a batch over max_batch_bytes, a batch without a leader
// epoch or above the writer's, or epochs going back; StorageErrc::kOffsetMismatch when the
// offsets do not continue the log; kCorruptBatch / kMalformedBatch (with the position in the
// range) for a bad or torn batch.
Result<ReplicaRange> CheckReplicaRange(std::span<const std::byte> range, const ReplicaRangeFacts& facts,
                                       const LeaderEpochs& epochs);

}  // namespace rdmq::cluster
