// AckTracker: the batches of one partition from sealed to acknowledged, as a pure state machine
// (docs/architecture.md, "Producer"). No fabric, no threads, no clock: the producer feeds it
// what happened (a batch sealed or posted, an ack block the broker wrote, a Commit response,
// the lease lost or regained, the time when it asks about timeouts) and reads out completions:
// which batches are done, with which status, in the order their callbacks must run.
//
// Batches move queued -> in flight -> completed:
//   Enqueue          a sealed batch joins the queue (waiting for room, a lease or a roll)
//   Posted           the queue's front was written to the segment: it is in flight
//   OnAck            a new ack block: in-flight batches it covers complete, in position order
//   OnCommit         shared mode: the Commit RPC's answer for one batch
//   LeaseLost        in-flight batches not known to be in the log go back to the queue's front
//   LeaseOpened      queued batches the broker already has (by last_sequence) complete
//   Refused/FailAll  batches that cannot be sent complete with an error
//
// Promises (what the producer's callbacks rely on): one partition's batches complete in offset
// order; in shared mode in position order even when Commit responses arrive out of order; a
// batch completes once (a duplicated ack or a stale Commit response completes nothing); a batch
// the broker already has is completed, not resent, after a lost lease.
//
// Threading: none; the producer calls it with the partition's lock held.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "rdmq/common/status.h"
#include "rdmq/common/types.h"
#include "rdmq/producer/producer.h"
#include "rdmq/protocol/data_plane.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::producer {

// A batch as the tracker sees it: its extent and where it was written. The producer's Batch
// (batch.h) extends it with the records' memory and futures.
struct TrackedBatch {
  size_t size = 0;             // bytes, once sealed
  int32_t count = 0;           // records
  int32_t base_sequence = -1;  // idempotence: its first record's sequence; -1 without
  // Set when it is posted.
  Offset segment_base{0};          // base offset of the segment it was written to
  Position position{0};            // its position in that segment's data area
  Offset base_offset = kNoOffset;  // exclusive: assigned at post; shared: see offset_known
  uint64_t post_id = 0;            // shared: the Commit RPC whose response counts
  bool committed = false;          // shared: that Commit succeeded
  bool offset_known = false;       // shared: its response carried base_offset
  bool complete = false;           // reported in a Completion (once)
};

// Where a posted batch went.
struct Placement {
  Offset segment_base{0};
  Position position{0};
  Offset base_offset = kNoOffset;  // exclusive: the offset it was given; shared: unknown yet
  uint64_t post_id = 0;            // shared: its Commit RPC
};

// One batch done, with its outcome. On success its offsets start at batch->base_offset, unless
// read_offset: (shared mode) the broker assigned them and wrote the base offset into the batch's
// header in the log (8 bytes at its position), which the producer reads back.
struct Completion {
  TrackedBatch* batch = nullptr;
  Status status;
  bool read_offset = false;
};

enum class AckVerdict : uint8_t {
  kConfirmed,  // the ack confirms the lease (and may complete batches)
  kLeaseLost,  // an error or a revoked lease: the caller treats the lease as lost
};

enum class CommitVerdict : uint8_t {
  kStale,      // not the response to the batch's latest post: ignored
  kCommitted,  // the batch is committed (it completes once an ack covers it, or at once)
  kFailed,     // not retriable: the batch completed with the error
  kLeaseLost,  // retriable: the caller treats the lease as lost (the batch is resent)
};

class AckTracker {
 public:
  AckTracker(PartitionMode mode, std::chrono::nanoseconds delivery_timeout)
      : mode_(mode), delivery_timeout_ns_(static_cast<uint64_t>(delivery_timeout.count())) {}
  AckTracker(const AckTracker&) = delete;
  AckTracker& operator=(const AckTracker&) = delete;

  // The partition changes mode (partition.busy=shared): only between leases, with nothing in
  // flight (queued batches are posted in the new mode).
  void set_mode(PartitionMode mode) { mode_ = mode; }
  PartitionMode mode() const { return mode_; }
  // acks=all: in shared mode too a batch completes only under an ack block that covers it (the
  // broker writes it once every in-sync replica holds the range), not at the Commit answer with
  // its offsets, nor when the lease is lost (then it is written again, or found stored by the
  // next lease's last_sequence, which the broker answers only once replicated).
  void set_ack_gated(bool gated) { ack_gated_ = gated; }

  // --- The queue and the batches in flight.
  void Enqueue(TrackedBatch* b) { queued_.push_back(b); }
  bool has_queued() const { return !queued_.empty(); }
  TrackedBatch* next() const { return queued_.front(); }  // the next to post; has_queued()
  size_t in_flight() const { return inflight_.size(); }
  bool idle() const { return queued_.empty() && inflight_.empty(); }  // nothing unacknowledged
  // The queue's front was posted at `at`: it is in flight now (in position order).
  void Posted(const Placement& at) {
    TrackedBatch* b = queued_.front();
    queued_.pop_front();
    b->segment_base = at.segment_base;
    b->position = at.position;
    b->base_offset = at.base_offset;
    b->post_id = at.post_id;
    inflight_.push_back(b);
  }
  // The queue's front cannot be sent (a non-retriable error): it completes with `s`.
  void Refused(const Status& s);
  // A batch in neither queue (the partition's open batch) completes with `s`.
  void Fail(TrackedBatch* b, const Status& s) { Complete(b, s); }
  // Every queued and in-flight batch completes with `s`, in order; the next batch's delivery
  // clock starts afresh.
  void FailAll(const Status& s);

  // --- Acks (the broker's cumulative ack block) and Commit responses (shared mode).
  // A new ack block (the caller filters repeated generations). On kLeaseLost `why` is the error:
  // what the ack covers has completed; in exclusive mode a batch the broker refused for good
  // (a non-retriable error) completes with it; the caller then calls LeaseLost.
  AckVerdict OnAck(const protocol::AckBlock& a, Status* why);
  // Completes what the newest ack (and, shared, the Commit responses) allow, in order.
  void CompleteAcked() {
    if (have_ack_ || mode_ == PartitionMode::kShared) CompleteCovered();
  }
  // The response (decoded, or the RPC's error) to the Commit with `post_id` for `b`. On
  // kLeaseLost `why` is the error. After kCommitted the caller calls CompleteAcked.
  CommitVerdict OnCommit(TrackedBatch* b, uint64_t post_id, const Result<protocol::CommitResponse>& r,
                         Status* why);

  // --- The lease.
  // A new lease: its acks start afresh; queued batches whose sequences the broker already has
  // (up to `last_sequence`, from the lease response) complete instead of being written twice.
  void LeaseOpened(int32_t last_sequence);
  // The lease is gone at `now_ns`: shared batches whose Commit returned their offsets are in the
  // log and complete (not when ack-gated); every other in-flight batch goes back to the queue's
  // front, in order.
  void LeaseLost(uint64_t now_ns);
  // Opening a lease failed (retriably) at `now_ns`: the queue waits without one since then
  // (an empty queue waits for nothing: its clock starts with the next failure after a batch).
  void LeaseUnavailable(uint64_t now_ns) {
    if (lost_since_ns_ == 0 && !idle()) lost_since_ns_ = now_ns;
  }
  // Since when the queue waits without a lease (0: it does not).
  uint64_t waiting_since() const { return lost_since_ns_; }
  // True once the queue has waited without a lease for longer than delivery.timeout.ms.
  bool DeliveryExpired(uint64_t now_ns) const {
    return lost_since_ns_ != 0 && now_ns > lost_since_ns_ && now_ns - lost_since_ns_ > delivery_timeout_ns_;
  }

  // --- Sequences (idempotence). A batch with sequences that fails leaves a gap the broker never
  // gets past: the batches after it must be sent at a new epoch, numbered from 0 (Kafka bumps
  // the epoch there too). No batch after the failed one can be in the log (the broker takes a
  // producer's sequences in order), so renumbering them cannot store anything twice; the ones
  // before it are sent first, at the old epoch.
  bool sequence_broken() const { return broken_seq_ >= 0; }
  // The queue's front comes after the failed batch: it waits for the renumbering.
  bool BlockedByGap() const {
    return broken_seq_ >= 0 && !queued_.empty() && queued_.front()->base_sequence > broken_seq_;
  }
  // Nothing before the failed batch is unresolved: the epoch may be bumped now.
  bool ReadyToRenumber() const {
    return broken_seq_ >= 0 && inflight_.empty() && (queued_.empty() || BlockedByGap());
  }
  // Numbers the queued batches from 0, calling rewrite(batch) on each; returns the sequence
  // after them.
  template <class F>
  int32_t Renumber(F&& rewrite) {
    int32_t seq = 0;
    for (TrackedBatch* b : queued_) {
      if (b->base_sequence < 0) continue;
      b->base_sequence = seq;
      rewrite(b);
      seq += b->count;
    }
    broken_seq_ = -1;
    return seq;
  }

  // --- Moving the partition to another broker's engine (cluster_producer.h): every batch not
  // complete leaves the tracker, in order (in flight first: call LeaseLost before), and the
  // tracker starts afresh; the sequence gap, if any, goes with them (RestoreGap on the other
  // side). Completions not taken yet stay.
  std::deque<TrackedBatch*> TakeAll();
  int32_t gap() const { return broken_seq_; }
  void RestoreGap(int32_t first_failed_sequence) { broken_seq_ = first_failed_sequence; }

  // --- Output: the batches completed since the last call, in callback order.
  bool has_completions() const { return !completions_.empty(); }
  // Swaps the completions into `out` (which the caller returns empty, keeping its capacity).
  void TakeCompletions(std::vector<Completion>& out) { out.swap(completions_); }
  // The oldest segment an in-flight batch was written to, or `current` if older than all.
  Offset OldestSegment(Offset current) const;

 private:
  friend class AckTrackerTestPeer;
  void CompleteCovered();
  void Complete(TrackedBatch* b, const Status& s, bool read_offset = false) {
    if (b->complete) return;
    b->complete = true;
    if (!s.ok() && b->base_sequence >= 0 && (broken_seq_ < 0 || b->base_sequence < broken_seq_)) {
      broken_seq_ = b->base_sequence;
    }
    completions_.push_back(Completion{b, s, read_offset});
  }

  PartitionMode mode_;
  bool ack_gated_ = false;
  const uint64_t delivery_timeout_ns_;
  std::deque<TrackedBatch*> queued_;    // sealed, not posted, in order
  std::deque<TrackedBatch*> inflight_;  // posted, not acknowledged, in position order
  std::vector<Completion> completions_;
  // The newest ack of the current lease (cumulative: everything below acked_position of that
  // segment is committed).
  bool have_ack_ = false;
  Offset ack_segment_base_{0};
  Position acked_position_{0};
  uint64_t lost_since_ns_ = 0;  // 0: a lease is open (or none was lost yet)
  int32_t broken_seq_ = -1;     // the first sequence of the earliest failed batch, until renumbered
};

}  // namespace rdmq::producer
