#include "lease_manager.h"

#include <chrono>
#include <string>
#include <thread>
#include <tuple>

#include "rdmq/common/log.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/storage/record_batch.h"
#include "session.h"

namespace rdmq::broker::internal {

using protocol::WireError;

Result<fabric::RegionDescriptor> AckRegionOf(const protocol::Blob& region) {
  auto ack = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(region.bytes)));
  if (!ack.ok()) return Status(WireError::kInvalidRequest, "ack_region: " + ack.status().ToString());
  if (ack->length < protocol::kAckBlockSize || (ack->access & fabric::kRemoteWrite) == 0) {
    return Status(WireError::kInvalidRequest, "ack_region must be a writable region of at least 64 bytes");
  }
  return *ack;
}

Status ReplicaCommitOnly(const Lease& l) {
  return Status(WireError::kInvalidRequest,
                "lease " + std::to_string(l.id.value()) +
                    " is a replica lease: its ranges are committed with ReplicaCommit");
}

Status LeaseManager::CheckLive(const Partition& p, const Lease& l) {
  if (l.ended) return Status(WireError::kLeaseExpired, "lease " + std::to_string(l.id.value()) + " ended");
  if (p.deleted()) return TopicDeleted(p.topic_name());
  return Status::Ok();
}

void LeaseManager::ReleaseIdle(Partition& p, const Session* session, protocol::ProduceMode mode,
                               uint64_t now_ns) {
  for (const auto& l : p.Leases()) {
    if (l->session.get() == session || !Idle(*l, now_ns)) continue;
    if (l->shared() && mode == protocol::ProduceMode::kShared) continue;  // they coexist
    Counters::Add(n_.leases_idle);
    RDMQ_LOG(kInfo, "broker", "idle lease released for a waiting producer")
        .kv("partition", p.where())
        .kv("lease", l->id)
        .kv("client", l->session->Name())
        .kv("idle_ms", (now_ns - l->active_ns) / 1'000'000);
    EndLocked(p, l, WireError::kLeaseExpired, true);
  }
}

Status LeaseManager::Admit(Partition& p, const Session& session, const LeaseRequest& req) {
  // An idle holder does not keep the partition from a producer that wants to write.
  const uint64_t now = MonoNanos();
  ReleaseIdle(p, &session, req.mode, now);
  if (req.mode == protocol::ProduceMode::kExclusive) {
    if (p.LocalWriterActive(now, local_writer_window_ns())) {
      return Status(
          WireError::kPartitionBusy,
          p.where() + " is being written through the broker (Kafka producers); an exclusive lease must wait");
    }
    if (p.exclusive()) {
      const std::shared_ptr<Lease> h = p.exclusive();
      if (h->session.get() == &session) {
        // The same client opening again (it gave up on its lease): the new lease replaces it.
        EndLocked(p, h, WireError::kLeaseExpired, false);
      } else if (req.producer_id.value() >= 0 && req.producer_id == h->producer_id &&
                 req.producer_epoch > h->producer_epoch) {
        EndLocked(p, h, WireError::kInvalidProducerEpoch, true);  // fenced by the newer epoch
      } else if (req.replica_epoch >= 0 && h->replica_epoch < req.replica_epoch) {
        EndLocked(p, h, WireError::kFencedLeaderEpoch, true);  // a deposed leader's replica lease
      } else if (req.replica_epoch >= 0 && h->replica_epoch == req.replica_epoch) {
        // One leader per epoch: its feed connecting again (the old connection may linger).
        EndLocked(p, h, WireError::kLeaseExpired, true);
      } else {
        return Status(WireError::kPartitionBusy, p.where() + " is held by an exclusive producer (client '" +
                                                     h->session->Name() + "', lease " +
                                                     std::to_string(h->id.value()) + ")");
      }
    }
    if (p.shared_count() != 0) {
      return Status(WireError::kPartitionBusy, p.where() + " has " + std::to_string(p.shared_count()) +
                                                   " shared producers; an exclusive lease must wait");
    }
  } else if (p.exclusive()) {
    return Status(WireError::kPartitionBusy, p.where() + " is held by an exclusive producer (client '" +
                                                 p.exclusive()->session->Name() + "')");
  }
  if (req.producer_id.value() >= 0) {
    const std::optional<int16_t> seen = p.producers().Epoch(req.producer_id);
    if (seen && req.producer_epoch < *seen) {
      return Status(WireError::kInvalidProducerEpoch, "producer " + std::to_string(req.producer_id.value()) +
                                                          " epoch " + std::to_string(req.producer_epoch) +
                                                          " is older than epoch " + std::to_string(*seen) +
                                                          " already seen in " + p.where());
    }
  }
  return Status::Ok();
}

Result<std::shared_ptr<Lease>> LeaseManager::Open(Partition& p, const std::shared_ptr<Session>& session,
                                                  const LeaseRequest& req,
                                                  const fabric::RegionDescriptor& ack) {
  RDMQ_RETURN_IF_ERROR(Admit(p, *session, req));
  auto l = std::make_shared<Lease>();
  l->mode = req.mode;
  l->session = session;
  l->partition = p.shared_from_this();
  l->producer_id = req.producer_id;
  l->producer_epoch = req.producer_epoch;
  l->replica_epoch = req.replica_epoch;
  l->ack_in_sync = req.ack_in_sync;
  RDMQ_RETURN_IF_ERROR(table_.Reserve(l));
  l->ack_buf = staging_->data() + uint64_t{protocol::LeaseSlot(l->index)} * protocol::kAckBlockSize;
  {
    MutexLock slock(session->mu);
    if (!session->usable()) {
      table_.Remove(*l);
      return Status(WireError::kUnavailable, "the client's data endpoint is closed");
    }
    auto attached = session->ep->Attach(ack);
    if (!attached.ok()) {
      table_.Remove(*l);
      return Status(WireError::kInvalidRequest,
                    "cannot attach the ack region: " + attached.status().ToString());
    }
    l->ack = std::move(*attached);
  }
  if (Status s = Grant(p, *l); !s.ok()) {
    table_.Remove(*l);
    return s;
  }
  const uint64_t now = MonoNanos();
  l->deadline_ns = now + lease_ns_;
  l->active_ns = now;
  l->acked_segment = p.active().base;
  l->acked_position = l->shared() ? Position(0) : p.active().committed;
  l->acked_next_offset = p.active().log_end;
  p.AddLease(l, now, 4 * lease_ns_);
  {
    MutexLock slock(session->mu);
    session->leases.insert(l->id);
  }
  table_.Publish(l);
  Counters::Add(n_.leases_granted);
  return l;
}

Status LeaseManager::Grant(Partition& p, Lease& l) {
  if (!l.shared() && p.active().capacity - p.active().committed.value() < storage::kMinFillerBytes) {
    // No room for even the smallest batch: start a new segment now.
    RDMQ_RETURN_IF_ERROR(p.Roll());
  }
  const ActiveSegment& a = p.active();
  const SegmentReg* seg = p.FindSegment(a.base);
  if (seg == nullptr) return Status(Errc::kInternal, "active segment of " + p.where() + " is not registered");
  std::unique_ptr<fabric::Grant> grant;
  {
    MutexLock slock(l.session->mu);
    if (!l.session->usable()) return Status(WireError::kUnavailable, "the client's data endpoint is closed");
    if (l.grant) {
      (void)l.grant->Revoke();
      l.grant.reset();
    }
    const uint64_t committed = a.committed.value();
    Result<std::unique_ptr<fabric::Grant>> g =
        l.shared() ? l.session->ep->GrantAccess(*seg->region, 0, seg->info.mapping_size,
                                                fabric::kRemoteWrite | fabric::kRemoteAtomic)
                   : l.session->ep->GrantAccess(*seg->region, storage::format::kSegmentHeaderSize + committed,
                                                a.capacity - committed, fabric::kRemoteWrite);
    if (!g.ok()) return g.status().WithContext("grant write access to " + p.where());
    grant = std::move(*g);
  }
  l.grant = std::move(grant);
  l.segment_base = a.base;
  l.grant_position = l.shared() ? Position(0) : a.committed;
  return Status::Ok();
}

protocol::LeaseResponse LeaseManager::Describe(const Partition& p, const Lease& l) const {
  protocol::LeaseResponse out;
  const ActiveSegment& a = p.active();
  out.lease_id = l.id;
  out.lease_index = l.index;
  out.lease_ms = lease_ms_;
  out.segment.base_offset = l.segment_base;
  out.segment.region.bytes = l.grant->descriptor().Encode();
  out.segment.capacity = a.capacity;
  if (l.shared()) {
    out.segment.data_offset = storage::format::kSegmentHeaderSize;
    out.segment.reservation_offset = storage::format::kReservationWord;
    out.segment.region_position = Position(0);
  } else {
    out.segment.data_offset = 0;
    out.segment.reservation_offset = 0;
    out.segment.region_position = l.grant_position;
  }
  out.write_position = a.committed;
  out.credit_end = Position(a.capacity);
  out.next_offset = a.log_end;
  out.last_sequence =
      l.producer_id.value() >= 0 ? p.producers().LastSequence(l.producer_id, l.producer_epoch) : -1;
  out.slot.bytes = p.slot_descriptor();
  out.idle_ms = idle_ms_;
  return out;
}

void LeaseManager::WriteAck(const Partition& p, Lease& l, uint16_t error, uint16_t flags) {
  if (!l.ack) return;
  protocol::AckBlock a;
  a.generation = ++l.ack_generation;
  a.acked_position = l.acked_position;
  a.next_offset = l.acked_next_offset;
  a.segment_base = l.acked_segment;
  a.credit_end = Position(p.active().capacity);
  a.error = error;
  a.flags = flags;
  protocol::EncodeAckBlock(a, l.ack_buf);
  fabric::WorkRequest wr;
  wr.opcode = fabric::Opcode::kWriteImm;
  wr.signaled = false;
  wr.local = {l.ack_buf, protocol::kAckBlockSize, staging_};
  wr.remote = l.ack.get();
  wr.remote_offset = 0;
  wr.imm = l.index;
  Session& s = *l.session;
  MutexLock slock(s.mu);
  if (!s.usable()) return;
  Status st = s.ep->Post({&wr, 1});
  for (int i = 0; st.is(fabric::FabricErrc::kQueueFull) && i < 1000; ++i) {
    // Unsignalled writes still occupy send slots until the peer answered (tcp) or a forced
    // completion was polled (verbs); the commit poller frees them.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    st = s.ep->Post({&wr, 1});
  }
  if (!st.ok()) {
    RDMQ_LOG(kDebug, "broker", "ack not sent").kv("lease", l.id).kv("error", st);
    return;
  }
  Counters::Add(n_.acks);
}

void LeaseManager::AckCommitted(Partition& p, const std::shared_ptr<Lease>& l) {
  AckRange(p, l, p.active().base, p.active().committed, p.active().log_end);
}

void LeaseManager::AckRange(Partition& p, const std::shared_ptr<Lease>& l, Offset segment, Position position,
                            Offset next) {
  if (!l->ack_in_sync) {
    l->acked_segment = segment;
    l->acked_position = position;
    l->acked_next_offset = next;
    WriteAck(p, *l, 0, 0);
    return;
  }
  // The waiter runs under p.mu (from RaiseHighWatermark), after ranges acknowledged later may
  // have been written already: acks only move forward (by segment, then position).
  p.WhenReplicated(
      next, [this, &p, weak = std::weak_ptr<Lease>(l), segment, position, next](const Status& s) {
        std::shared_ptr<Lease> lease = weak.lock();
        if (!s.ok() || !lease || lease->ended) return;
        if (std::tie(segment, position) <= std::tie(lease->acked_segment, lease->acked_position) &&
            lease->acked_next_offset >= next) {
          return;
        }
        lease->acked_segment = segment;
        lease->acked_position = position;
        lease->acked_next_offset = std::max(next, lease->acked_next_offset);
        p.mu.AssertHeld();
        WriteAck(p, *lease, 0, 0);
      });
}

void LeaseManager::EndLocked(Partition& p, const std::shared_ptr<Lease>& l, WireError error, bool notify) {
  if (l->ended) return;
  l->ended = true;
  Session& s = *l->session;
  {
    // Revoke first: a producer that reads the final ack may write at once, and must fail.
    MutexLock slock(s.mu);
    if (l->grant) {
      if (Status st = l->grant->Revoke(); !st.ok()) {
        RDMQ_LOG(kWarn, "broker", "revoking a lease's write access failed")
            .kv("lease", l->id)
            .kv("error", st);
      }
      l->grant.reset();
    }
  }
  if (notify) WriteAck(p, *l, static_cast<uint16_t>(error), protocol::kAckLeaseRevoked);
  {
    MutexLock slock(s.mu);
    l->ack.reset();
    s.leases.erase(l->id);
  }
  p.RemoveLease(*l);
  table_.Remove(*l);
  RDMQ_LOG(kDebug, "broker", "lease ended")
      .kv("lease", l->id)
      .kv("partition", p.where())
      .kv("reason", protocol::make_error_code(error).message());
}

void LeaseManager::End(const std::shared_ptr<Lease>& l, WireError error, bool notify) {
  Partition& p = *l->partition;
  MutexLock lock(p.mu);
  EndLocked(p, l, error, notify);
}

void LeaseManager::EndById(LeaseId id, WireError error, bool notify) {
  if (std::shared_ptr<Lease> l = table_.ById(id)) End(l, error, notify);
}

void LeaseManager::Settle(Partition& p, std::span<const storage::CompletedRange> completed,
                          std::span<const storage::CompletedRange> dropped) {
  auto owner = [&](const storage::CompletedRange& r, PendingRange* out)
                   REQUIRES(p.mu) -> std::shared_ptr<Lease> {
    std::optional<PendingRange> pr = p.TakePending(r.segment, r.position);
    if (!pr) return nullptr;
    *out = *pr;
    return table_.ById(out->lease_id);
  };
  for (const auto& c : completed) {
    PendingRange pr;
    auto l = owner(c, &pr);
    if (pr.local_done) {
      if (pr.producer_id.value() >= 0)
        p.producers().NoteBatch(pr.producer_id, pr.epoch,
                                {pr.first_sequence, pr.last_sequence, c.base_offset});
      pr.local_done(c.base_offset);
      continue;
    }
    if (!l || l->ended) continue;
    AckRange(p, l, c.segment, c.position + c.length, c.next_offset);
  }
  for (const auto& d : dropped) {
    PendingRange pr;
    auto l = owner(d, &pr);
    if (pr.producer_id.value() >= 0) p.producers().Rewind(pr.producer_id, pr.first_sequence);
    if (pr.local_done) {
      pr.local_done(Status(WireError::kStaleLocation,
                           "the append to " + p.where() + " was dropped (segment rolled); retry"));
      continue;
    }
    if (l && !l->ended) EndLocked(p, l, WireError::kStaleLocation, true);
  }
}

}  // namespace rdmq::broker::internal
