// Acks in, completed batches out (core.h). The broker's ack blocks and Commit responses are fed
// to the partition's AckTracker, which decides what is complete; here its completions are
// settled under the partition's lock (shared mode: offsets read back from the log; futures;
// arena memory) and finished without it (failure counts, callbacks, the batch freed), one
// finisher per partition at a time so that callbacks run in order.
#include "producer/core.h"
#include "rdmq/common/coding.h"
#include "rdmq/protocol/messages.h"
#include "rdmq/storage/format.h"

namespace rdmq::producer {

using protocol::Api;

void Core::CheckAcks(PState& ps) {
  if (!ps.ack.attached()) return;
  protocol::AckBlock a;
  if (ps.ack.Next(&a)) {
    Status why;
    if (ps.tracker.OnAck(a, &why) == AckVerdict::kLeaseLost) {
      LeaseLost(ps, why);
      return;
    }
    ps.lease.last_confirmed_ns = MonoNanos();
  }
  // The ack block is cumulative; a shared batch whose Commit response came after its ack is
  // covered by the ack seen before.
  ps.tracker.CompleteAcked();
  PostSealed(ps);
  // linger 0: what accumulated behind the acknowledged batches goes now.
  if (cfg_.linger.count() == 0 && ps.open_batch != nullptr && ps.tracker.idle()) Seal(ps);
}

void Core::HandleCommitResults() {
  std::vector<CommitResult> results;
  {
    MutexLock lock(commits_mu_);
    if (commit_results_.empty()) return;
    results.swap(commit_results_);
  }
  for (auto& cr : results) {
    PState& ps = *cr.ps;
    PLock lock(this, ps);
    const Result<protocol::CommitResponse> r = cr.r.ok()
                                                   ? protocol::DecodeResponse<protocol::CommitResponse>(
                                                         std::as_bytes(std::span(cr.r->data(), cr.r->size())))
                                                   : Result<protocol::CommitResponse>(cr.r.status());
    Status why;
    switch (ps.tracker.OnCommit(cr.b, cr.post_id, r, &why)) {
      case CommitVerdict::kLeaseLost:
        LeaseLost(ps, why);
        break;
      case CommitVerdict::kCommitted:
        ps.lease.last_confirmed_ns = MonoNanos();
        CheckAcks(ps);
        break;
      case CommitVerdict::kStale:
      case CommitVerdict::kFailed:
        break;
    }
  }
}

void Core::FailAll(PState& ps, const Status& s) {
  ps.tracker.FailAll(s);
  if (ps.open_batch != nullptr) {
    Batch* b = ps.open_batch;
    ps.open_batch = nullptr;
    (void)b->Close(compression::Codec::kNone);  // failed: not worth compressing
    unacked_.fetch_add(1, std::memory_order_relaxed);
    ps.tracker.Fail(b, s);
  }
}

void Core::FinishCompleted(PState& ps) {
  ps.finishing = true;
  std::vector<Completion> done;
  while (ps.tracker.has_completions()) {
    ps.tracker.TakeCompletions(done);
    Settle(ps, done);
    ps.mu.Unlock();
    Finish(done);
    ps.mu.Lock();
  }
  ps.tracker.TakeCompletions(done);  // both empty: the tracker keeps the buffer for next time
  ps.finishing = false;
}

void Core::Settle(PState& ps, std::vector<Completion>& done) {
  for (const Completion& c : done) {
    auto* b = static_cast<Batch*>(c.batch);
    if (c.read_offset) b->base_offset = ReadBaseOffset(ps, *b);
    SendFuture::State& st = *b->state;
    if (st.done.load(std::memory_order_relaxed) == 0) {  // acks=0 reported it at post already
      st.status = c.status;
      if (c.status.ok()) st.base_offset = cfg_.acks == 0 ? kNoOffset : b->base_offset;
    } else if (!c.status.ok()) {
      b->callbacks.clear();
    }
    // Nothing reads the batch's bytes any more: its chunk may go back to the arena.
    if (ChunkCursor::Unref(b->chunk)) ReleaseChunk(*b->chunk);
  }
  if (ps.mode == PartitionMode::kShared) {
    // Forget read attachments of segments no batch waits for any more.
    const Offset oldest = ps.tracker.OldestSegment(ps.lease.seg.base_offset);
    while (!ps.read_segs.empty() && ps.read_segs.begin()->first < oldest) {
      MutexLock lock(data_.post_mu());
      ps.read_segs.erase(ps.read_segs.begin());
    }
  }
}

void Core::Finish(std::vector<Completion>& done) {
  for (const Completion& c : done) {
    auto* b = static_cast<Batch*>(c.batch);
    SendFuture::State& st = *b->state;
    if (!st.status.ok()) failures_.Add(st.status, st.records.size());
    for (auto& [i, cb] : b->callbacks) {
      if (!st.status.ok()) {
        cb(st.status);
        continue;
      }
      cb(st.Metadata(i));
    }
    st.done.store(1, std::memory_order_release);
    delete b;
    unacked_.fetch_sub(1, std::memory_order_acq_rel);
  }
  done.clear();
  NotifySleepers();
}

Offset Core::ReadBaseOffset(PState& ps, const Batch& b) {
  // The node wrote the batch's offsets into its header (8 bytes at its position), which is read
  // through a read-only attachment of that segment (the write grant has no read right and moves
  // on with the lease).
  auto rs = ReadSegment(ps, b.segment_base);
  if (!rs.ok()) return kNoOffset;
  const uint64_t off = storage::format::kSegmentHeaderSize + b.position.value();
  if (const std::byte* m = (*rs)->mapped(); m != nullptr) return Offset(coding::LoadBE<int64_t>(m + off));
  std::byte* tmp = acks_->data() + kScratchOffset + uint64_t{ps.id} * 64 + 8;
  fabric::WorkRequest rd;
  rd.opcode = fabric::Opcode::kRead;
  rd.local = {tmp, 8, acks_.get()};
  rd.remote = *rs;
  rd.remote_offset = off;
  if (!data_.PostAndWait(rd).ok()) return kNoOffset;
  return Offset(coding::LoadBE<int64_t>(tmp));
}

Result<const fabric::RemoteRegion*> Core::ReadSegment(PState& ps, Offset base) {
  auto it = ps.read_segs.find(base);
  if (it != ps.read_segs.end()) return it->second.get();
  protocol::GetSegmentRequest req{ps.topic->name, ps.partition, base};
  RDMQ_ASSIGN_OR_RETURN(auto r, (conn_->Call<protocol::GetSegmentResponse>(Api::kGetSegment, req)));
  RDMQ_ASSIGN_OR_RETURN(auto d,
                        fabric::RegionDescriptor::Decode(std::as_bytes(std::span(r.segment.region.bytes))));
  MutexLock lock(data_.post_mu());
  RDMQ_RETURN_IF_ERROR(data_.Usable());
  RDMQ_ASSIGN_OR_RETURN(auto remote, data_.endpoint().Attach(d));
  const fabric::RemoteRegion* out = remote.get();
  ps.read_segs[base] = std::move(remote);
  return out;
}

}  // namespace rdmq::producer
