#include "producer/ack_tracker.h"

#include <algorithm>

#include "producer/errors.h"

namespace rdmq::producer {

using protocol::WireError;

void AckTracker::Refused(const Status& s) {
  TrackedBatch* b = queued_.front();
  queued_.pop_front();
  Complete(b, s);
}

void AckTracker::FailAll(const Status& s) {
  for (TrackedBatch* b : inflight_) Complete(b, s);
  for (TrackedBatch* b : queued_) Complete(b, s);
  inflight_.clear();
  queued_.clear();
  lost_since_ns_ = 0;
}

AckVerdict AckTracker::OnAck(const protocol::AckBlock& a, Status* why) {
  ack_segment_base_ = a.segment_base;
  acked_position_ = a.acked_position;
  have_ack_ = true;
  if (a.error == 0 && (a.flags & protocol::kAckLeaseRevoked) == 0) return AckVerdict::kConfirmed;
  // What the ack covers is committed; the rest is resent on a new lease.
  *why = a.error != 0 ? Status(static_cast<WireError>(a.error), "the broker refused a commit")
                      : Status(WireError::kLeaseExpired, "lease revoked");
  CompleteCovered();
  if (mode_ == PartitionMode::kExclusive && a.error != 0 && !Retriable(*why) && !inflight_.empty()) {
    // Not retriable (a bad batch): fail the first unacknowledged batch, resend the others.
    Complete(inflight_.front(), *why);
    inflight_.pop_front();
  }
  have_ack_ = false;
  return AckVerdict::kLeaseLost;
}

void AckTracker::CompleteCovered() {
  auto covered = [&](const TrackedBatch* b) {
    return b->segment_base == ack_segment_base_ && b->position + b->size <= acked_position_;
  };
  if (mode_ == PartitionMode::kExclusive) {
    while (!inflight_.empty() && covered(inflight_.front())) {
      Complete(inflight_.front(), Status::Ok());
      inflight_.pop_front();
    }
    return;
  }
  // Shared: a batch completes once its Commit succeeded and the cumulative ack covers it (its
  // offsets are assigned then). A batch in a segment older than the ack's is covered: the node
  // seals a segment only when everything in it is committed. In position order, stopping at the
  // first that cannot complete yet, so callbacks run in offset order even when Commit responses
  // arrive out of order.
  auto completable = [&](const TrackedBatch* b) {
    const bool acked = have_ack_ && (b->segment_base < ack_segment_base_ || covered(b));
    return b->committed && (acked || (b->offset_known && !ack_gated_));
  };
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    TrackedBatch* b = *it;
    if (b->complete) {
      it = inflight_.erase(it);
      continue;
    }
    if (!completable(b)) break;
    Complete(b, Status::Ok(), /*read_offset=*/!b->offset_known);
    it = inflight_.erase(it);
  }
}

CommitVerdict AckTracker::OnCommit(TrackedBatch* b, uint64_t post_id,
                                   const Result<protocol::CommitResponse>& r, Status* why) {
  // Only the response to a batch's latest post counts (a lost lease requeues and reposts).
  auto it = std::find(inflight_.begin(), inflight_.end(), b);
  if (it == inflight_.end() || b->post_id != post_id || b->complete) return CommitVerdict::kStale;
  Status s = r.status();
  if (s.ok() && (r->flags & protocol::kCommitFlagSegmentFull) != 0)
    s = Status(WireError::kStaleLocation, "segment full");
  if (!s.ok()) {
    if (Retriable(s)) {
      *why = s;
      return CommitVerdict::kLeaseLost;
    }
    inflight_.erase(it);
    Complete(b, s);
    return CommitVerdict::kFailed;
  }
  b->committed = true;
  if (r->base_offset != kNoOffset) {  // completes in order, by CompleteCovered
    b->base_offset = r->base_offset;
    b->offset_known = true;
  }
  return CommitVerdict::kCommitted;
}

std::deque<TrackedBatch*> AckTracker::TakeAll() {
  std::deque<TrackedBatch*> out;
  for (TrackedBatch* b : inflight_) {
    if (!b->complete) out.push_back(b);
  }
  out.insert(out.end(), queued_.begin(), queued_.end());
  inflight_.clear();
  queued_.clear();
  have_ack_ = false;
  lost_since_ns_ = 0;
  broken_seq_ = -1;
  return out;
}

void AckTracker::LeaseOpened(int32_t last_sequence) {
  have_ack_ = false;
  lost_since_ns_ = 0;
  // Batches the broker already has (a lease lost after the commit, before its ack): complete
  // them instead of writing them twice.
  while (!queued_.empty()) {
    TrackedBatch* b = queued_.front();
    if (b->base_sequence < 0 || b->base_sequence + b->count - 1 > last_sequence) break;
    queued_.pop_front();
    Complete(b, Status::Ok());
  }
}

void AckTracker::LeaseLost(uint64_t now_ns) {
  // Shared batches whose Commit already returned their offsets are in the log: complete them.
  // Everything else not acknowledged goes back to the front of the queue, in order.
  std::vector<TrackedBatch*> resend;
  for (TrackedBatch* b : inflight_) {
    if (b->complete) continue;
    if (b->offset_known && !ack_gated_) {
      Complete(b, Status::Ok());
      continue;
    }
    b->committed = false;
    b->offset_known = false;
    resend.push_back(b);
  }
  inflight_.clear();
  queued_.insert(queued_.begin(), resend.begin(), resend.end());
  // Nothing waits on an idle partition (a lease released while unused).
  lost_since_ns_ = idle() ? 0 : now_ns;
}

Offset AckTracker::OldestSegment(Offset current) const {
  Offset oldest = current;
  for (const TrackedBatch* b : inflight_) oldest = std::min(oldest, b->segment_base);
  return oldest;
}

}  // namespace rdmq::producer
