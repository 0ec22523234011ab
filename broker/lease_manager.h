// LeaseManager: the life of a lease. Admits and grants it (write access to the active segment),
// describes it to the producer, writes its ack block, extends it, ends it (revoking its access),
// and settles the shared ranges whose offsets were assigned or which were dropped.
//
// Threading: every method that names a Partition runs under that partition's lock (REQUIRES);
// End, EndById and WithLease take it. The lease table's and sessions' locks are taken inside.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "counters.h"
#include "lease.h"
#include "partition.h"
#include "rdmq/common/clock.h"
#include "rdmq/fabric/fabric.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/log.h"

namespace rdmq::broker::internal {

// What a producer asks for in OpenProduce.
struct LeaseRequest {
  protocol::ProduceMode mode = protocol::ProduceMode::kExclusive;
  ProducerId producer_id = kNoProducerId;
  int16_t producer_epoch = 0;
  int32_t replica_epoch = -1;  // a replica lease (OpenReplica): the leader epoch it is granted under
  bool ack_in_sync = false;    // acks=all (Lease::ack_in_sync)
};

// The ack block a lease request names: INVALID_REQUEST unless it decodes to a writable region of
// at least kAckBlockSize bytes.
Result<fabric::RegionDescriptor> AckRegionOf(const protocol::Blob& region);

// A replica lease commits with ReplicaCommit only (its ranges are checked as a leader's, not as a
// producer's): INVALID_REQUEST for Commit or an immediate.
Status ReplicaCommitOnly(const Lease& l);

class LeaseManager {
 public:
  // Ack blocks are staged in `staging` from byte 0, one per lease slot (max_leases of them).
  // A lease that committed nothing for `idle_ms` is idle (0: never): the housekeeper releases
  // it, and a producer asking for its partition does not wait for that.
  LeaseManager(uint32_t max_leases, fabric::Region* staging, uint32_t lease_ms, uint32_t idle_ms,
               Counters& counters)
      : table_(max_leases),
        staging_(staging),
        lease_ms_(lease_ms),
        lease_ns_(uint64_t{lease_ms} * 1'000'000),
        idle_ms_(idle_ms),
        idle_ns_(uint64_t{idle_ms} * 1'000'000),
        n_(counters) {}

  // Grants `session` a lease on `p`: refused while another client holds
  // it exclusively or (for exclusive) while shared producers write, or for an epoch older than
  // one seen (kPartitionBusy, kInvalidProducerEpoch). The same client's exclusive lease, or one
  // of an older epoch of the same producer, is ended first. The ack block is attached at `ack`.
  Result<std::shared_ptr<Lease>> Open(Partition& p, const std::shared_ptr<Session>& session,
                                      const LeaseRequest& req, const fabric::RegionDescriptor& ack)
      REQUIRES(p.mu);
  // Grants the lease write access to the active segment (rolling first if an exclusive lease
  // would have no room for the smallest batch).
  Status Grant(Partition& p, Lease& l) REQUIRES(p.mu);
  // The lease's location and resume point, as OpenProduce and RenewLease answer.
  protocol::LeaseResponse Describe(const Partition& p, const Lease& l) const REQUIRES(p.mu);
  // The lease lives another lease.ms from now.
  void Extend(Lease& l) const { l.deadline_ns = MonoNanos() + lease_ns_; }
  // The lease committed (or is about to write): extended, and not idle from now.
  void Active(Lease& l) const {
    const uint64_t now = MonoNanos();
    l.deadline_ns = now + lease_ns_;
    l.active_ns = now;
  }
  // Whether the lease committed nothing for lease.idle.ms (and may be released).
  bool Idle(const Lease& l, uint64_t now_ns) const {
    return idle_ns_ != 0 && now_ns > l.active_ns && now_ns - l.active_ns >= idle_ns_;
  }
  // Writes the lease's ack block (acked position, next offset, credit, `error`, `flags`).
  void WriteAck(const Partition& p, Lease& l, uint16_t error, uint16_t flags) REQUIRES(p.mu);
  // An exclusive lease's commit just advanced the active segment: acknowledges everything
  // committed so far (AckRange up to the active segment's committed end).
  void AckCommitted(Partition& p, const std::shared_ptr<Lease>& l) REQUIRES(p.mu);
  // Acknowledges the lease's records up to `position` of `segment`, the offsets before `next`
  // included: now (acks=1) or once the high watermark reaches `next` (acks=all: a waiter on
  // Partition::WhenReplicated; nothing if the leadership ends first, which ends the lease).
  // Acks only move forward.
  void AckRange(Partition& p, const std::shared_ptr<Lease>& l, Offset segment, Position position, Offset next)
      REQUIRES(p.mu);

  // Ends a lease: revokes its write access, tells the producer (an ack with `error` and the
  // revoked flag) if `notify`, forgets it. Ending an ended lease does nothing.
  void EndLocked(Partition& p, const std::shared_ptr<Lease>& l, protocol::WireError error, bool notify)
      REQUIRES(p.mu);
  void End(const std::shared_ptr<Lease>& l, protocol::WireError error, bool notify);
  void EndById(LeaseId id, protocol::WireError error, bool notify);

  // Acks the producers of completed shared ranges; ends the leases of dropped ones (rewinding
  // their producers' sequences).
  void Settle(Partition& p, std::span<const storage::CompletedRange> completed,
              std::span<const storage::CompletedRange> dropped) REQUIRES(p.mu);

  Result<std::shared_ptr<Lease>> Find(LeaseId id, uint64_t client_id) const {
    return table_.Find(id, client_id);
  }
  std::shared_ptr<Lease> ByIndex(uint32_t index) const { return table_.ByIndex(index); }

  // The start of every request about a lease the client holds: the lease found, its partition
  // locked, an ended lease (kLeaseExpired) or a deleted topic refused; then act(partition, lease).
  template <class Act>
  Status WithLease(LeaseId id, uint64_t client_id, Act&& act) {
    RDMQ_ASSIGN_OR_RETURN(std::shared_ptr<Lease> l, table_.Find(id, client_id));
    Partition& p = *l->partition;
    MutexLock lock(p.mu);
    RDMQ_RETURN_IF_ERROR(CheckLive(p, *l));
    return CallLocked(p, act, l);
  }

  // Ends the idle leases of clients other than `session` (null: of every client) that would keep a
  // writer of `mode` off the partition.
  void ReleaseIdle(Partition& p, const Session* session, protocol::ProduceMode mode, uint64_t now_ns)
      REQUIRES(p.mu);
  // How long after the broker's own last append to a partition an exclusive lease is refused:
  // lease.idle.ms, or lease.ms when idle release is off.
  uint64_t local_writer_window_ns() const { return idle_ns_ != 0 ? idle_ns_ : lease_ns_; }

 private:
  static Status CheckLive(const Partition& p, const Lease& l) REQUIRES(p.mu);
  Status Admit(Partition& p, const Session& session, const LeaseRequest& req) REQUIRES(p.mu);

  LeaseTable table_;
  fabric::Region* const staging_;
  const uint32_t lease_ms_;
  const uint64_t lease_ns_;
  const uint32_t idle_ms_;
  const uint64_t idle_ns_;
  Counters& n_;
};

}  // namespace rdmq::broker::internal
