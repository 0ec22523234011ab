// Core: the producer's engine behind the Producer facade (producer.cc), connected to one broker.
// In a cluster the facade is ClusterProducer (cluster_producer.h, with client/routes.h): a Core per
// broker, each record routed to its partition's leader. The Core's pieces, one file each:
//
//   core.cc        setup, Flush, Close
//   reconnect.cc   losing the broker and connecting again (the I/O thread)
//   send.cc        Send: picking the partition, building records into the open batch, sealing
//   post.cc        posting sealed batches: exclusive (WRITE_WITH_IMM) and shared (FETCH_ADD,
//                  WRITE, Commit RPC)
//   lease.cc       opening, renewing, rolling and losing a partition's lease
//   completion.cc  acks and Commit responses into the AckTracker; completed batches out of it
//                  (offsets, futures, callbacks, memory)
//   progress.cc    polling for progress, waiting, and the I/O thread
//   handoff.cc     a cluster: giving a partition's batches to another broker's Core, taking them
//
// Threads and progress. Application threads build records into the open batch of a partition
// under that partition's mutex. Whoever needs progress (a Send that sees a new ack generation,
// a waiting future, Flush) polls the data endpoint's queues itself, through a try-lock, so an
// ack is seen without a thread hand-off. The I/O thread covers what nobody waits for: linger
// deadlines, lease renewals of idle partitions, re-opening lost leases, and acks when no
// application thread is waiting (it then sleeps in the receive queue, woken by the ack's
// immediate).
//
// Losing the broker (docs/architecture.md, "Producer: losing the broker"). When the connection
// breaks, the I/O thread suspends the data path (no post, attachment or grant succeeds), takes
// every partition's lease as lost (its batches not acknowledged go back to the queue) and drops
// what was attached to or granted on the old endpoint; then it connects again with backoff
// (reconnect.backoff.ms..reconnect.backoff.max.ms, every bootstrap server in turn), keeping the
// fabric and so the arena and ack memory registered on it. Once connected, leases reopen as
// after any lost lease: an idempotent producer keeps its id, epoch and sequences, and batches
// the broker already has (by the new lease's last_sequence) complete without being resent.
// Records fail only when delivery.timeout.ms passes without a lease.
//
// Locks, outer to inner: a partition's `mu` -> the arena's, the data path's (posting, then
// operations), `commits_mu_`, `wait_mu_`. `failures_` is taken alone. Callbacks run with none
// held.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "producer/ack_tracker.h"
#include "producer/arena.h"
#include "producer/batch.h"
#include "producer/data_path.h"
#include "producer/partition.h"
#include "producer/topics.h"
#include "rdmq/client/backoff.h"
#include "rdmq/client/connection.h"
#include "rdmq/common/clock.h"
#include "rdmq/common/cpu.h"
#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/producer/producer.h"

namespace rdmq::producer {

using Clock = std::chrono::steady_clock;

// Ack blocks and scratch words in the producer's small registered region: four ack blocks per
// partition (one per lease, in turn), then a 64-byte scratch word per partition for atomics'
// results and small READs.
inline constexpr uint32_t kMaxPartitions = 1024;
inline constexpr uint32_t kAckBlocksPerPartition = 4;
inline constexpr uint64_t kScratchOffset = uint64_t{kMaxPartitions} * kAckBlocksPerPartition * 64;

// Records that failed since the last Flush (Flush reports the first and their count).
class FailureLog {
 public:
  void Add(const Status& s, uint64_t records) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (count_ == 0) first_ = s;
    count_ += records;
  }
  // OK if none failed; otherwise the first failure with the count, and starts afresh.
  Status Take() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (count_ == 0) return Status::Ok();
    Status first = first_.WithContext(std::to_string(count_) + " records failed since the last flush");
    count_ = 0;
    first_ = Status::Ok();
    return first;
  }

 private:
  Mutex mu_;
  uint64_t count_ GUARDED_BY(mu_) = 0;
  Status first_ GUARDED_BY(mu_);
};

// A partition's unacknowledged batches leaving one broker's Core for another's (the cluster
// producer, when the partition's leader moved; handoff.cc): the batches in order, each with its
// bytes (copied out of the old Core's arena), records' futures and callbacks, and the
// partition's idempotence state, so that the new leader, which has the producer's state up to
// what was replicated, takes each batch once.
struct Handoff {
  struct Moved {
    std::vector<std::byte> bytes;
    int32_t count = 0;
    int32_t base_sequence = -1;
    StateRef state;
    std::vector<std::pair<uint32_t, SendCallback>> callbacks;
  };
  bool has_state = false;  // the old Core had written the partition: its sequence state goes along
  ProducerId producer_id = kNoProducerId;
  int16_t epoch = 0;  // the partition's (the producer's, plus its bumps)
  int32_t next_sequence = 0;
  int32_t gap = -1;            // AckTracker::gap()
  uint64_t waiting_since = 0;  // AckTracker::waiting_since(): delivery.timeout.ms runs on
  PartitionMode mode = PartitionMode::kExclusive;
  std::vector<Moved> batches;
};

class Core : public std::enable_shared_from_this<Core> {
 public:
  explicit Core(ProducerConfig cfg);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  Status Init();
  // `*cb` (may be null) is moved from only when the record was taken; an error leaves it to the
  // caller, which may send it elsewhere.
  Status Send(const ProducerRecord& r, SendCallback* cb, SendFuture* fut);
  Status Flush(std::chrono::milliseconds timeout);
  Status Close(std::chrono::milliseconds timeout);
  Result<int32_t> PartitionCount(std::string_view topic);
  bool closed() const { return closed_.load(); }
  const ProducerConfig& config() const { return cfg_; }
  // The connection to the broker (its Call is thread-safe): the cluster producer asks it for
  // metadata.
  const client::Connection& connection() const { return *conn_; }

  // --- A cluster's Cores (cluster_producer.h, handoff.cc).
  // Before Init: write as this producer id and epoch instead of asking the broker for one (the
  // Cores of one cluster producer share them, so a partition's sequences carry over).
  void ShareIdentity(ProducerId id, int16_t epoch) {
    producer_id_ = id;
    producer_epoch_ = epoch;
    shared_identity_ = true;
  }
  ProducerId producer_id() const { return producer_id_; }
  int16_t producer_epoch() const { return producer_epoch_; }
  // Topics with a partition whose batches wait for a lease that this broker does not give (it
  // is unreachable, or it answered something other than OK): their leader may have moved.
  std::vector<std::string> Stranded();
  // Takes partition `p` of `topic` away from this Core: its open batch is sealed, its lease
  // given up, and its batches not acknowledged leave in order with its sequence state; Sends to
  // it answer NOT_LEADER until Adopt brings it back. Completes nothing that is not done.
  Handoff Release(std::string_view topic, PartitionId p);
  // Takes the handoff's sequence state and batches into partition `p` of `topic`, the batches
  // to be written to this broker on a new lease; what cannot be taken fails with the reason
  // (callbacks run).
  void Adopt(std::string_view topic, PartitionId p, Handoff h);

  // Progress: drains the queues (if no one else is) and processes new acks. True if it did
  // anything.
  bool Progress();
  // Waits until pred() holds or the deadline passes, driving progress meanwhile.
  template <class Pred>
  bool WaitFor(Pred pred, Clock::time_point deadline);

 private:
  friend class PLock;
  struct CommitResult {
    PState* ps;
    Batch* b;
    uint64_t post_id;
    Result<std::string> r;
  };

  // core.cc
  void NotifySleepers();  // wakes threads sleeping in WaitFor

  // reconnect.cc (the I/O thread)
  void CheckConnection();        // the broker is gone: suspend, take every lease as lost
  void Reconnect(uint64_t now);  // lost_: one attempt to connect again, when the backoff allows
  Status Undeliverable(PState& ps) REQUIRES(ps.mu);  // delivery.timeout.ms passed without a lease

  // send.cc
  // Whether the partition takes records: its fatal error, or NOT_LEADER once it moved away.
  Status Takes(const PState& ps) const REQUIRES(ps.mu);
  Status NewBatch(PState& ps, size_t need) REQUIRES(ps.mu);
  Result<Chunk*> AllocChunks(PState& ps, uint32_t n) REQUIRES(ps.mu);  // unlocks ps.mu to wait
  void ReleaseChunk(const Chunk& c);
  // Seals the open batch into the queue; with `post`, posts what the lease allows.
  void Seal(PState& ps, bool post = true) REQUIRES(ps.mu);

  // post.cc
  void PostSealed(PState& ps) REQUIRES(ps.mu);
  Status PostExclusive(PState& ps, Batch& b, Placement* at) REQUIRES(ps.mu);
  Status PostShared(PState& ps, Batch& b, Placement* at) REQUIRES(ps.mu);

  // lease.cc
  Status OpenLease(PState& ps, PartitionMode mode) REQUIRES(ps.mu);
  // OpenLease in the partition's mode, then as partition.busy says when the partition is busy.
  Status Acquire(PState& ps) REQUIRES(ps.mu);
  uint64_t RetryAfterNs(const Status& why) const;  // after a failed Acquire
  Status Reopen(PState& ps) REQUIRES(ps.mu);
  void LeaseLost(PState& ps, const Status& why) REQUIRES(ps.mu);
  Status Roll(PState& ps) REQUIRES(ps.mu);
  Status AwaitSharedRoll(PState& ps) REQUIRES(ps.mu);
  Status AttachSegment(PState& ps, protocol::SegmentLocation seg) REQUIRES(ps.mu);
  // Keeps an idle lease alive; gives it back once unused for lease.idle.ms.
  void RenewIfIdle(PState& ps, uint64_t now) REQUIRES(ps.mu);
  // Before a write: the lease counts as active (renewed with kRenewActive first when unused for
  // half of lease.idle.ms, so the broker does not release it under the write).
  Status MarkActive(PState& ps, uint64_t now) REQUIRES(ps.mu);
  void Forget(PState& ps) REQUIRES(ps.mu);  // the lease was given back: closed, no error
  // Idempotence: the partition's producer epoch (the producer's, plus its bumps), and the bump
  // after a failed batch (the AckTracker's sequence gap): queued batches renumbered from 0.
  int16_t Epoch(const PState& ps) const REQUIRES(ps.mu) {
    return static_cast<int16_t>(producer_epoch_ + ps.epoch_bumps);
  }
  Status BumpEpoch(PState& ps) REQUIRES(ps.mu);

  // completion.cc
  void CheckAcks(PState& ps) REQUIRES(ps.mu);
  void HandleCommitResults();
  void FailAll(PState& ps, const Status& s) REQUIRES(ps.mu);
  // Finishes the batches the tracker completed: settles them under the lock, runs their
  // callbacks with it released; loops until none are left. Called by ~PLock.
  void FinishCompleted(PState& ps) REQUIRES(ps.mu);
  void Settle(PState& ps, std::vector<Completion>& done) REQUIRES(ps.mu);
  void Finish(std::vector<Completion>& done);  // no lock: callbacks, futures, memory
  Offset ReadBaseOffset(PState& ps, const Batch& b) REQUIRES(ps.mu);
  Result<const fabric::RemoteRegion*> ReadSegment(PState& ps, Offset base) REQUIRES(ps.mu);

  // progress.cc
  void IoLoop();
  void Tick(uint64_t now);
  void Prefault();  // I/O thread: prefaults exclusive windows ahead of the writes (shm)
  // The window on a segment rolled away from is unmapped by the I/O thread, not by the sending
  // thread that rolled: unmapping a written 64 MiB shm window takes 3-7 ms (its page tables torn
  // down), which every record behind the roll would wait out.
  void RetireRemote(std::unique_ptr<fabric::RemoteRegion> r) EXCLUDES(retired_mu_);
  void DropRetiredRemotes() EXCLUDES(retired_mu_);

  ProducerConfig cfg_;
  std::unique_ptr<client::Connection> conn_;
  Arena arena_;
  std::unique_ptr<fabric::Region> acks_;  // ack blocks and scratch words
  DataPath data_;
  Topics topics_;
  ProducerId producer_id_ = kNoProducerId;
  int16_t producer_epoch_ = 0;
  bool shared_identity_ = false;  // ShareIdentity: Init asks for no producer id

  Mutex commits_mu_;  // shared mode: Commit responses, for whoever drives progress next
  uint64_t next_post_id_ GUARDED_BY(commits_mu_) = 1;
  std::vector<CommitResult> commit_results_ GUARDED_BY(commits_mu_);

  std::atomic_flag cq_sleeper_ = ATOMIC_FLAG_INIT;  // who may sleep in the receive queue
  std::atomic<uint64_t> unacked_{0};                // batches sealed and not complete
  std::atomic<uint32_t> waiters_{0};                // application threads driving progress
  std::atomic<uint32_t> sleepers_{0};
  Mutex wait_mu_;
  CondVar wait_cv_;
  std::atomic<uint64_t> last_app_progress_ns_{0};
  std::atomic<bool> app_active_{false};  // set by Send, cleared by the I/O thread each tick

  std::atomic<bool> closing_{false};
  // The connection to the broker is gone and not yet made again. Set and cleared by the I/O
  // thread; the reconnect state below is the I/O thread's alone.
  std::atomic<bool> lost_{false};
  std::unique_ptr<client::Backoff> backoff_;
  uint64_t lost_since_ns_ = 0;
  uint64_t next_dial_ns_ = 0;
  Status last_dial_error_;
  FailureLog failures_;
  std::atomic<bool> closed_{false};
  Mutex retired_mu_;
  std::vector<std::unique_ptr<fabric::RemoteRegion>> retired_remotes_ GUARDED_BY(retired_mu_);
  std::atomic<bool> have_retired_{false};

  std::thread io_;
  Mutex io_mu_;
  CondVar io_cv_;
};

// Locks a partition; on release first finishes the batches completed meanwhile (callbacks run
// with the lock released, one partition's by one thread at a time, in order).
class SCOPED_CAPABILITY PLock {
 public:
  PLock(Core* c, PState& ps) ACQUIRE(ps.mu) : c_(c), ps_(ps) {
    ps_.mu.Lock();
    owns_ = true;
  }
  // Unlocked; then TryLock.
  PLock(Core* c, PState& ps, std::defer_lock_t) EXCLUDES(ps.mu) : c_(c), ps_(ps) {}
  bool TryLock() TRY_ACQUIRE(true) {
    owns_ = ps_.mu.TryLock();
    return owns_;
  }
  ~PLock() RELEASE() {
    if (!owns_) return;  // a failed try-lock
    ps_.mu.AssertHeld();
    // One finisher per partition at a time: a callback that sends to the same partition only
    // adds completions, which the finisher's loop picks up.
    if (!ps_.finishing && ps_.tracker.has_completions()) c_->FinishCompleted(ps_);
    ps_.mu.Unlock();
  }
  PLock(const PLock&) = delete;
  PLock& operator=(const PLock&) = delete;

 private:
  Core* c_;
  PState& ps_;
  bool owns_ = false;
};

template <class Pred>
bool Core::WaitFor(Pred pred, Clock::time_point deadline) {
  if (pred()) return true;
  waiters_.fetch_add(1, std::memory_order_acq_rel);
  const auto spin_until = Clock::now() + cfg_.spin;
  bool ok = false;
  while (true) {
    if (pred()) {
      ok = true;
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (Progress()) continue;
    if (now < spin_until) {
      CpuRelax();
      continue;
    }
    // Sleep. One sleeper at a time waits in the receive queue itself (an ack's immediate
    // wakes it, and it then processes the ack: no hand-off); others wait to be notified.
    const auto until = std::min(deadline, Clock::now() + std::chrono::milliseconds(1));
    if (!cq_sleeper_.test_and_set(std::memory_order_acquire)) {
      if (!pred()) (void)conn_->recv_cq()->Wait(until - Clock::now());
      cq_sleeper_.clear(std::memory_order_release);
      continue;
    }
    waiters_.fetch_sub(1, std::memory_order_acq_rel);
    io_cv_.NotifyAll();
    {
      UniqueLock lock(wait_mu_);
      sleepers_.fetch_add(1, std::memory_order_acq_rel);
      if (!pred()) wait_cv_.WaitUntil(lock, until);
      sleepers_.fetch_sub(1, std::memory_order_acq_rel);
    }
    waiters_.fetch_add(1, std::memory_order_acq_rel);
  }
  waiters_.fetch_sub(1, std::memory_order_acq_rel);
  last_app_progress_ns_.store(MonoNanos(), std::memory_order_relaxed);
  return ok;
}

}  // namespace rdmq::producer
