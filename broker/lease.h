// Lease: a producer's right to append to a partition (docs/protocol.md, "Leases"). LeaseTable:
// every live lease, by id and by slot.
//
// A lease's slot is its index in the table (the low 24 bits of its `index`, with a reuse count
// above them): the producer's WRITE_WITH_IMM carries the index, the broker's staging region
// holds one ack block per slot.
//
// Threading: id, index, mode, session, partition and the producer identity are set before the
// lease is published and never change. The rest is guarded by partition->mu (not annotated:
// the analysis cannot name another object's lock through a shared_ptr). The table's lock is a
// leaf: nothing is locked under it.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::broker::internal {

class Partition;
struct Session;

struct Lease {
  LeaseId id{0};
  uint32_t index = 0;  // lease slot | reuse << 24 (protocol::LeaseSlot)
  protocol::ProduceMode mode = protocol::ProduceMode::kExclusive;
  std::shared_ptr<Session> session;
  std::shared_ptr<Partition> partition;
  ProducerId producer_id = kNoProducerId;
  int16_t producer_epoch = 0;
  // A replica lease (the partition's leader writing this follower's log, OpenReplica): the
  // leader epoch it was granted under; -1 for a producer's lease.
  int32_t replica_epoch = -1;
  // acks=all: a commit is acknowledged once every in-sync replica holds it (the high watermark),
  // not when the leader committed it.
  bool ack_in_sync = false;

  // Guarded by partition->mu.
  std::unique_ptr<fabric::RemoteRegion> ack;  // the producer's ack block (session->mu to reset)
  std::unique_ptr<fabric::Grant> grant;       // write access to the segment (window)
  Offset segment_base{0};                     // segment the grant covers
  Position grant_position{0};                 // data-area position the window starts at
  uint64_t deadline_ns = 0;
  uint64_t active_ns = 0;  // granted, committed, or renewed with kRenewActive (lease.idle.ms)
  uint64_t ack_generation = 0;
  Offset acked_segment{0};       // segment of acked_position
  Position acked_position{0};    // end of the lease's last committed range
  Offset acked_next_offset{0};   // the offset after that range
  std::byte* ack_buf = nullptr;  // 64 bytes in the broker's staging region
  bool ended = false;

  bool shared() const { return mode == protocol::ProduceMode::kShared; }
  bool replica() const { return replica_epoch >= 0; }
};

class LeaseTable {
 public:
  explicit LeaseTable(uint32_t max_leases);

  // Takes a free slot for `l` and gives it its id and index. kUnavailable when every slot is
  // taken. The lease is not found by id until Publish.
  Status Reserve(const std::shared_ptr<Lease>& l) EXCLUDES(mu_);
  // Makes a reserved lease findable by id.
  void Publish(const std::shared_ptr<Lease>& l) EXCLUDES(mu_);
  // Forgets `l`; its slot (if still its own) is free again, with the next reuse count.
  void Remove(const Lease& l) EXCLUDES(mu_);

  // The lease `id` if `client_id` holds it; else kLeaseExpired (unknown, ended, or another
  // client's).
  Result<std::shared_ptr<Lease>> Find(LeaseId id, uint64_t client_id) const EXCLUDES(mu_);
  std::shared_ptr<Lease> ById(LeaseId id) const EXCLUDES(mu_);
  // The lease whose index is exactly `index` (slot and reuse count), null if none.
  std::shared_ptr<Lease> ByIndex(uint32_t index) const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);
  uint32_t capacity() const { return max_; }

 private:
  const uint32_t max_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<Lease>> slots_ GUARDED_BY(mu_);
  std::vector<uint8_t> reuse_ GUARDED_BY(mu_);
  std::vector<uint32_t> free_ GUARDED_BY(mu_);
  std::unordered_map<LeaseId, std::shared_ptr<Lease>> by_id_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
};

}  // namespace rdmq::broker::internal
