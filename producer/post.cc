// Posting sealed batches (core.h; docs/protocol.md sections 4-5). Exclusive: the producer owns
// the partition's append position; each batch is one WRITE_WITH_IMM into the leased window, its
// offsets patched in just before. Shared: the batch reserves its place with FETCH_ADD on the
// segment's reservation word, is written with a WRITE, and is committed with the Commit RPC
// (the broker assigns its offsets).
#include <atomic>

#include "producer/core.h"
#include "producer/errors.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/record_batch.h"

namespace rdmq::producer {

using protocol::Api;
using protocol::WireError;

namespace {

Status TooLargeForSegment(size_t size, uint64_t capacity) {
  return Status(
      WireError::kRecordTooLarge,
      "a batch of " + std::to_string(size) + " bytes does not fit a segment of " + std::to_string(capacity));
}

}  // namespace

void Core::PostSealed(PState& ps) {
  Lease& l = ps.lease;
  while (ps.tracker.has_queued() && ps.fatal.ok()) {
    if (ps.tracker.BlockedByGap()) {
      // A batch failed: what comes after it goes at a new epoch, on a new lease, once what came
      // before it is resolved (lease.cc, BumpEpoch).
      if (ps.tracker.in_flight() != 0) break;
      if (l.open) {
        (void)conn_->Call<protocol::Empty>(Api::kReleaseLease, protocol::LeaseRequest{l.id, 0});
        Forget(ps);
      }
    }
    if (!l.open) {
      if (!Reopen(ps).ok()) break;
      if (!l.open) break;
      continue;  // Reopen posted what it could
    }
    if (ps.tracker.in_flight() >= cfg_.max_in_flight) break;
    if (ps.mode == PartitionMode::kExclusive && l.ms > 0 &&
        MonoNanos() - l.last_confirmed_ns > uint64_t{l.ms} * 500'000) {
      // Nothing confirmed the lease for half its length (this process was stopped or starved):
      // take it as lost and open a new one before writing. A write under a revoked window is
      // refused harmlessly on shm and tcp, but on verbs it breaks the whole data connection.
      LeaseLost(ps, Status(WireError::kLeaseExpired, "the lease was not confirmed for half its length"));
      continue;
    }
    Batch* b = static_cast<Batch*>(ps.tracker.next());
    Placement at;
    Status s = MarkActive(ps, MonoNanos());
    if (s.ok())
      s = ps.mode == PartitionMode::kExclusive ? PostExclusive(ps, *b, &at) : PostShared(ps, *b, &at);
    if (s.is(Errc::kResourceExhausted)) break;  // waiting for the in-flight batches (a roll)
    if (!s.ok()) {
      if (s.is(Errc::kUnavailable)) {
        // The data connection itself failed (peer gone, flushed) or is being made again: the
        // lease is lost and the I/O thread reconnects (reconnect.cc); the batches wait.
        LeaseLost(ps, s);
        io_cv_.NotifyAll();
        break;
      }
      if (Retriable(s)) {
        LeaseLost(ps, s);
        if (!l.open) l.retry_at_ns = MonoNanos() + 2'000'000;
        continue;
      }
      ps.tracker.Refused(s);
      continue;
    }
    ps.tracker.Posted(at);
    if (cfg_.acks == 0 && b->state->done.load(std::memory_order_relaxed) == 0) {
      // acks=0: the future is ready once the batch is posted; callbacks run at the broker's ack.
      b->state->base_offset = kNoOffset;
      b->state->done.store(1, std::memory_order_release);
      NotifySleepers();
    }
  }
}

Status Core::PostExclusive(PState& ps, Batch& b, Placement* at) {
  Lease& l = ps.lease;
  if (b.size > l.seg.capacity - std::min(l.write_pos.value(), l.seg.capacity)) {
    // The segment is full: roll once everything written to it is acknowledged.
    if (b.size > l.seg.capacity) return TooLargeForSegment(b.size, l.seg.capacity);
    l.need_roll = true;
    if (ps.tracker.in_flight() != 0) return Status(Errc::kResourceExhausted, "waiting to roll");
    RDMQ_RETURN_IF_ERROR(Roll(ps));
  }
  storage::PatchBaseOffset(b.buf, l.next_offset);
  *at = Placement{l.seg.base_offset, l.write_pos, l.next_offset, 0};
  fabric::WorkRequest wr;
  wr.opcode = fabric::Opcode::kWriteImm;
  wr.tag = (kTagWrite << kTagKindShift) | ps.id;
  wr.signaled = false;
  wr.local = {b.buf, b.size, arena_.region()};
  wr.remote = l.remote.get();
  wr.remote_offset = l.seg.RemoteOffset(l.write_pos);
  wr.imm = l.index;
  RDMQ_RETURN_IF_ERROR(data_.Post({&wr, 1}));
  l.write_pos += b.size;
  l.next_offset += b.count;
  return Status::Ok();
}

Status Core::PostShared(PState& ps, Batch& b, Placement* at) {
  Lease& l = ps.lease;
  // Built for an exclusive lease before partition.busy=shared switched the partition: the
  // broker assigns a shared batch's offsets.
  storage::PatchBaseOffset(b.buf, kNoOffset);
  while (true) {
    // Reserve.
    auto* result = reinterpret_cast<uint64_t*>(acks_->data() + kScratchOffset + uint64_t{ps.id} * 64);
    fabric::WorkRequest fa;
    fa.opcode = fabric::Opcode::kFetchAdd;
    fa.local = {result, 8, acks_.get()};
    fa.remote = l.remote.get();
    fa.remote_offset = l.seg.reservation_offset;
    fa.operand = b.size;
    RDMQ_RETURN_IF_ERROR(data_.PostAndWait(fa));
    const uint64_t r = std::atomic_ref<uint64_t>(*result).load(std::memory_order_acquire);
    if (r <= l.seg.capacity && b.size <= l.seg.capacity - r) {
      fabric::WorkRequest w;
      w.opcode = fabric::Opcode::kWrite;
      w.local = {b.buf, b.size, arena_.region()};
      w.remote = l.remote.get();
      w.remote_offset = l.seg.RemoteOffset(Position(r));
      // The Commit RPC travels on another connection: the bytes must be in place first.
      RDMQ_RETURN_IF_ERROR(data_.PostAndWait(w));
      protocol::CommitRequest req{l.id, l.seg.base_offset, Position(r), static_cast<uint32_t>(b.size),
                                  kNoOffset};
      const std::string bytes = protocol::Encode(req);
      uint64_t post_id;
      {
        MutexLock lock(commits_mu_);
        post_id = next_post_id_++;
      }
      *at = Placement{l.seg.base_offset, Position(r), kNoOffset, post_id};
      PState* pp = &ps;
      Batch* bp = &b;
      // The response is handled by whoever drives progress next (never inside this call, which
      // holds the partition's lock).
      return conn_->CallAsync(Api::kCommit, bytes, [this, pp, bp, post_id](Result<std::string> res) {
        {
          MutexLock lock(commits_mu_);
          commit_results_.push_back(CommitResult{pp, bp, post_id, std::move(res)});
        }
        io_cv_.NotifyAll();
        NotifySleepers();
      });
    }
    // The reservation crossed the segment end: report it, then move to the next segment.
    if (b.size > l.seg.capacity) return TooLargeForSegment(b.size, l.seg.capacity);
    protocol::CommitRequest req{l.id, l.seg.base_offset, Position(r), static_cast<uint32_t>(b.size),
                                kNoOffset};
    auto cr = conn_->Call<protocol::CommitResponse>(Api::kCommit, req);
    if (!cr.ok() && !Retriable(cr.status())) return cr.status();
    RDMQ_RETURN_IF_ERROR(AwaitSharedRoll(ps));
  }
}

}  // namespace rdmq::producer
