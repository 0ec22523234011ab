// A partition's lease (core.h; docs/protocol.md section 4): opened on first use with OpenProduce,
// kept alive by acks, commits and renewals of idle leases, given back after lease.idle.ms
// unused, rolled to the next segment when the active one is full, and when lost (an error, a
// revocation, a failed write) opened again, with the batches not acknowledged resent on the new
// one (the AckTracker decides which). A busy partition is handled as partition.busy says; after
// a failed batch an idempotent partition moves to a new epoch (BumpEpoch).
#include <cstdint>
#include <thread>

#include "producer/core.h"
#include "producer/errors.h"
#include "rdmq/common/log.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::producer {

using protocol::Api;
using protocol::WireError;

Status Core::AttachSegment(PState& ps, protocol::SegmentLocation seg) {
  auto desc = fabric::RegionDescriptor::Decode(std::as_bytes(std::span(seg.region.bytes)));
  if (!desc.ok()) return desc.status().WithContext("segment descriptor from the broker");
  {
    MutexLock lock(data_.post_mu());
    if (ps.lease.remote) RetireRemote(std::move(ps.lease.remote));
    RDMQ_RETURN_IF_ERROR(data_.Usable());
    RDMQ_ASSIGN_OR_RETURN(ps.lease.remote, data_.endpoint().Attach(*desc));
  }
  ps.lease.seg = std::move(seg);
  return Status::Ok();
}

void Core::RetireRemote(std::unique_ptr<fabric::RemoteRegion> r) {
  {
    MutexLock lock(retired_mu_);
    retired_remotes_.push_back(std::move(r));
  }
  have_retired_.store(true, std::memory_order_release);
  io_cv_.NotifyAll();
}

void Core::DropRetiredRemotes() {
  if (!have_retired_.exchange(false, std::memory_order_acq_rel)) return;
  std::vector<std::unique_ptr<fabric::RemoteRegion>> gone;
  {
    MutexLock lock(retired_mu_);
    gone.swap(retired_remotes_);
  }
  gone.clear();  // unmapped here, outside every lock
}

Status Core::BumpEpoch(PState& ps) {
  if (producer_epoch_ + ps.epoch_bumps >= INT16_MAX) {
    return Status(Errc::kFailedPrecondition, "producer " + std::to_string(producer_id_.value()) +
                                                 " ran out of epochs; create a new producer");
  }
  ++ps.epoch_bumps;
  const int16_t epoch = Epoch(ps);
  const int32_t next = ps.tracker.Renumber([&](TrackedBatch* t) {
    auto* b = static_cast<Batch*>(t);
    storage::PatchProducerState({b->buf, b->size}, epoch, b->base_sequence);
  });
  ps.next_sequence = next;
  if (Batch* b = ps.open_batch; b != nullptr && b->base_sequence >= 0) {
    b->base_sequence = next;
    b->builder->SetProducerState(epoch, next);
  }
  RDMQ_LOG(kInfo, "producer", "a batch failed; the records after it go at a new epoch")
      .kv("topic", ps.topic->name)
      .kv("partition", ps.partition.value())
      .kv("producer_id", producer_id_.value())
      .kv("epoch", epoch);
  return Status::Ok();
}

Status Core::OpenLease(PState& ps, PartitionMode mode) {
  Lease& l = ps.lease;
  if (ps.tracker.ReadyToRenumber()) RDMQ_RETURN_IF_ERROR(BumpEpoch(ps));
  {
    // Each lease gets the next of the partition's ack blocks, so that a late ack of an earlier
    // lease (its last words) can never be taken for one of this lease.
    MutexLock lock(data_.post_mu());
    if (ps.id >= kMaxPartitions) {
      return Status(Errc::kResourceExhausted,
                    "a producer writes to at most " + std::to_string(kMaxPartitions) + " partitions");
    }
    const uint64_t block = uint64_t{ps.id} * kAckBlocksPerPartition + (l.opened++ % kAckBlocksPerPartition);
    l.ack_grant.reset();
    RDMQ_RETURN_IF_ERROR(data_.Usable());
    RDMQ_ASSIGN_OR_RETURN(l.ack_grant,
                          data_.endpoint().GrantAccess(*acks_, block * 64, 64, fabric::kRemoteWrite));
    ps.ack.Attach(acks_->data() + block * 64);
  }
  protocol::OpenProduceRequest req;
  req.topic = ps.topic->name;
  req.partition = ps.partition;
  req.mode =
      mode == PartitionMode::kExclusive ? protocol::ProduceMode::kExclusive : protocol::ProduceMode::kShared;
  req.producer_id = producer_id_;
  req.producer_epoch = Epoch(ps);
  req.ack_region.bytes = l.ack_grant->descriptor().Encode();
  req.acks = cfg_.acks == -1 ? protocol::AckLevel::kInSync : protocol::AckLevel::kLeader;
  RDMQ_ASSIGN_OR_RETURN(auto resp, (conn_->Call<protocol::LeaseResponse>(Api::kOpenProduce, req)));
  RDMQ_RETURN_IF_ERROR(AttachSegment(ps, std::move(resp.segment)));
  if (mode != ps.mode) {
    // Nothing is in flight between leases: the queued batches are posted the new way.
    ps.mode = mode;
    ps.tracker.set_mode(mode);
  }
  ps.tracker.set_ack_gated(cfg_.acks == -1);
  l.open = true;
  l.id = resp.lease_id;
  l.index = resp.lease_index;
  l.ms = resp.lease_ms;
  l.idle_ms = resp.idle_ms;
  l.last_active_ns = MonoNanos();
  l.write_pos = resp.write_position;
  l.next_offset = resp.next_offset;
  l.prefault_to = l.write_pos;
  l.last_confirmed_ns = MonoNanos();
  l.need_roll = false;
  // (The ack block was cleared when attached: every generation the broker writes now is new.)
  ps.tracker.LeaseOpened(resp.last_sequence);
  return Status::Ok();
}

Status Core::Acquire(PState& ps) {
  Status s = OpenLease(ps, ps.mode);
  if (!s.is(WireError::kPartitionBusy)) return s;
  if (ps.mode == PartitionMode::kExclusive && cfg_.busy == BusyPolicy::kShared) {
    // Other producers write here: join them in shared mode. While one holds it exclusively
    // that is refused too, and the records wait (the broker releases an idle holder's lease).
    Status shared = OpenLease(ps, PartitionMode::kShared);
    if (shared.ok()) {
      RDMQ_LOG(kInfo, "producer", "partition busy; writing it in shared mode (partition.busy=shared)")
          .kv("topic", ps.topic->name)
          .kv("partition", ps.partition.value())
          .kv("holder", s.context());
      return shared;
    }
    if (!shared.is(WireError::kPartitionBusy)) return shared;
  }
  return s;
}

uint64_t Core::RetryAfterNs(const Status& s) const {
  // Busy: asking again soon will not help; others: the broker should be back shortly.
  if (s.is(WireError::kPartitionBusy)) {
    return static_cast<uint64_t>(std::chrono::nanoseconds(cfg_.client.retry_backoff).count());
  }
  return 2'000'000;  // 2 ms
}

Status Core::Reopen(PState& ps) {
  if (ps.lease.open || !ps.fatal.ok()) return ps.fatal;
  const uint64_t now = MonoNanos();
  if (lost_.load(std::memory_order_relaxed)) {
    ps.tracker.LeaseUnavailable(now);  // the queue's delivery clock runs from here at the latest
    return Status(Errc::kUnavailable, "reconnecting to the broker");
  }
  if (now < ps.lease.retry_at_ns) return Status(Errc::kUnavailable, "retrying later");
  Status s = Acquire(ps);
  if (s.ok()) {
    PostSealed(ps);
    return s;
  }
  ps.lease.last_error = s;
  if (!Retriable(s)) {
    ps.fatal = s;
    FailAll(ps, s);
    return s;
  }
  ps.tracker.LeaseUnavailable(now);
  ps.lease.retry_at_ns = now + RetryAfterNs(s);
  RDMQ_LOG(kDebug, "producer", "lease not available; retrying")
      .kv("topic", ps.topic->name)
      .kv("partition", ps.partition.value())
      .kv("error", s);
  return s;
}

void Core::LeaseLost(PState& ps, const Status& why) {
  if (!ps.lease.open) return;
  RDMQ_LOG(kDebug, "producer", "lease lost; resending what was not acknowledged")
      .kv("topic", ps.topic->name)
      .kv("partition", ps.partition.value())
      .kv("error", why);
  ps.lease.open = false;
  ps.lease.last_error = why;
  ps.lease.retry_at_ns = 0;
  {
    MutexLock lock(data_.post_mu());
    ps.lease.remote.reset();
  }
  ps.tracker.LeaseLost(MonoNanos());
  io_cv_.NotifyAll();
}

Status Core::Roll(PState& ps) {
  Lease& l = ps.lease;
  protocol::LeaseRequest req{l.id, protocol::kRenewRoll};
  auto resp = conn_->Call<protocol::LeaseResponse>(Api::kRenewLease, req);
  if (!resp.ok()) return resp.status();
  RDMQ_RETURN_IF_ERROR(AttachSegment(ps, std::move(resp->segment)));
  l.write_pos = resp->write_position;
  l.next_offset = resp->next_offset;
  l.prefault_to = l.write_pos;
  l.need_roll = false;
  return Status::Ok();
}

Status Core::AwaitSharedRoll(PState& ps) {
  Lease& l = ps.lease;
  const Offset old_base = l.seg.base_offset;
  const auto deadline = MonoNanos() + 4 * uint64_t{l.ms} * 1'000'000;
  while (true) {
    protocol::LeaseRequest lr{l.id, 0};
    auto resp = conn_->Call<protocol::LeaseResponse>(Api::kRenewLease, lr);
    if (!resp.ok()) return resp.status();
    if (resp->segment.base_offset != old_base) return AttachSegment(ps, std::move(resp->segment));
    if (MonoNanos() > deadline) return Status(WireError::kStaleLocation, "the full segment was not rolled");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void Core::RenewIfIdle(PState& ps, uint64_t now) {
  Lease& l = ps.lease;
  if (!l.open || l.ms == 0 || now - l.last_confirmed_ns <= uint64_t{l.ms} * 1'000'000 / 3) return;
  if (l.idle_ms != 0 && now - l.last_active_ns >= uint64_t{l.idle_ms} * 1'000'000 && ps.tracker.idle() &&
      ps.open_batch == nullptr) {
    // Unused for lease.idle.ms: give the partition back (the broker would release it now
    // anyway); the next Send opens a new lease.
    (void)conn_->Call<protocol::Empty>(Api::kReleaseLease, protocol::LeaseRequest{l.id, 0});
    Forget(ps);
    return;
  }
  auto r = conn_->Call<protocol::LeaseResponse>(Api::kRenewLease, protocol::LeaseRequest{l.id, 0});
  l.last_confirmed_ns = now;
  if (!r.ok()) LeaseLost(ps, r.status());
}

Status Core::MarkActive(PState& ps, uint64_t now) {
  Lease& l = ps.lease;
  if (l.idle_ms == 0 || now - l.last_active_ns < uint64_t{l.idle_ms} * 500'000) {
    l.last_active_ns = now;
    return Status::Ok();
  }
  // Unused for half of lease.idle.ms: the broker may release the lease before this write's
  // commit arrives. Tell it first (a lease it released already answers LEASE_EXPIRED).
  auto r = conn_->Call<protocol::LeaseResponse>(Api::kRenewLease,
                                                protocol::LeaseRequest{l.id, protocol::kRenewActive});
  if (!r.ok()) return r.status();
  l.last_active_ns = now;
  l.last_confirmed_ns = now;
  return Status::Ok();
}

void Core::Forget(PState& ps) {
  ps.lease.open = false;
  ps.lease.retry_at_ns = 0;
  MutexLock lock(data_.post_mu());
  ps.lease.remote.reset();
}

}  // namespace rdmq::producer
