#include "rdmq/cluster/replica_intake.h"

#include <string>

#include "rdmq/storage/errors.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::cluster {

namespace {

std::string At(const storage::BatchView& b) {
  return "batch at offset " + std::to_string(b.header.base_offset.value()) + " (position " +
         std::to_string(b.position) + " of the range)";
}

}  // namespace

Result<ReplicaRange> CheckReplicaRange(std::span<const std::byte> range, const ReplicaRangeFacts& facts,
                                       const LeaderEpochs& epochs) {
  if (facts.writer_epoch < facts.current_epoch) {
    return Status(Errc::kFailedPrecondition,
                  "fenced: the range came through a replica lease of leader epoch " +
                      std::to_string(facts.writer_epoch) + ", and the partition's leader epoch is " +
                      std::to_string(facts.current_epoch));
  }
  if (facts.writer_epoch > facts.current_epoch) {
    return Status(Errc::kFailedPrecondition, "the range came through a replica lease of leader epoch " +
                                                 std::to_string(facts.writer_epoch) + ", newer than the " +
                                                 std::to_string(facts.current_epoch) +
                                                 " this follower knows; retry once it has seen that epoch");
  }
  if (range.empty()) return Status(Errc::kInvalidArgument, "an empty replica range");
  ReplicaRange out{facts.log_end, 0, epochs};
  storage::BatchScanner scan(range, storage::Validation::kCrc);
  storage::BatchView b;
  while (scan.Next(&b)) {
    const storage::BatchHeader& h = b.header;
    if (h.total_size() > facts.max_batch_bytes) {
      return Status(Errc::kInvalidArgument, At(b) + " is " + std::to_string(h.total_size()) +
                                                " bytes, over max.message.bytes " +
                                                std::to_string(facts.max_batch_bytes));
    }
    if (h.base_offset != out.end) {
      return Status(storage::StorageErrc::kOffsetMismatch,
                    At(b) + ": the log continues at offset " + std::to_string(out.end.value()));
    }
    if (h.leader_epoch < 0) return Status(Errc::kInvalidArgument, At(b) + " carries no leader epoch");
    if (h.leader_epoch > facts.writer_epoch) {
      return Status(Errc::kInvalidArgument, At(b) + " carries leader epoch " +
                                                std::to_string(h.leader_epoch) + ", above its writer's " +
                                                std::to_string(facts.writer_epoch));
    }
    if (Status s = out.epochs.Observe(h.leader_epoch, h.base_offset); !s.ok()) return s.WithContext(At(b));
    out.end = h.next_offset();
    ++out.batches;
  }
  // The scanner stops at the first batch that is bad or does not end inside the range (a torn
  // range), or having consumed every byte.
  if (!scan.status().ok()) return scan.status();
  return out;
}

}  // namespace rdmq::cluster
