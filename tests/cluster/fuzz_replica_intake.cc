// Arbitrary bytes as a range a leader WROTE into a follower's log: the follower's checks never
// crash, and whatever they take is whole batches that continue the log from its end.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "rdmq/cluster/replica_intake.h"
#include "rdmq/storage/record_batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmq;
  const auto range = std::as_bytes(std::span(data, size));
  const cluster::ReplicaRangeFacts facts{Offset(0), 2, 2, 1 << 20};
  auto r = cluster::CheckReplicaRange(range, facts, {});
  if (!r.ok()) return 0;
  Offset next(0);
  storage::BatchScanner scan(range);
  storage::BatchView b;
  uint32_t n = 0;
  while (scan.Next(&b)) {
    if (b.header.base_offset != next || b.header.leader_epoch < 0 || b.header.leader_epoch > 2) std::abort();
    next = b.header.next_offset();
    ++n;
  }
  if (!scan.status().ok() || scan.consumed() != size || next != r->end || n != r->batches) std::abort();
  return 0;
}
