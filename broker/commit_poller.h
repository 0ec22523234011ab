// CommitPoller: the data plane's thread. It polls the shared receive queue for producers'
// WRITE_WITH_IMM (one per exclusive range: the immediate is the lease index, the length the
// range's), commits each range to the log, writes the ack block and wakes readers; and polls
// the shared send queue (unsignalled acks and notifications, failures logged).
//
// Group commit: the ranges one lease announced within one poll (up to kPollBatch completions)
// lie one after another at the committed end, so they are committed as one range: one
// validation pass, one log commit (one persist on a durable topic), one ack, one wake-up. The
// ack block is cumulative, so the producer sees the same acks as for separate commits. When the
// group is refused, its ranges are committed one by one, so that those before the refused one
// are in and the lease ends at the refused one, as if each had come alone.
//
// Threading: Start runs the loop on its own thread; Stop (after the broker set `stopping`)
// lets it drain what was delivered and joins it. The loop spins `spin_us` after the last
// completion (yielding its core every 32 rounds) unless most of the last eight gaps between
// bursts of completions were longer than that (AdaptiveSpin: then the spin would only burn a
// core), then sleeps in the receive queue (a completion ends the sleep at once) in 10 ms slices,
// 50 ms once nothing arrived for a second; a slice that ends with nothing to do sleeps again at
// once, without spinning. Counters: poller_wakeups (sleeps that ended), poller_spins (spin phases
// begun, at most one per burst of completions).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>

#include "counters.h"
#include "lease_manager.h"
#include "publisher.h"
#include "rdmq/fabric/fabric.h"
#include "segment_preparer.h"
#include "session.h"

namespace rdmq::broker::internal {

class CommitPoller {
 public:
  struct Deps {
    fabric::CompletionQueue* recv_cq = nullptr;
    fabric::CompletionQueue* send_cq = nullptr;
    SessionTable* sessions = nullptr;
    LeaseManager* leases = nullptr;
    Publisher* publisher = nullptr;
    Counters* counters = nullptr;
    SegmentPreparer* preparer = nullptr;  // null: next segments are made at their roll
    // A client's data endpoint is gone (its session ends).
    std::function<void(uint64_t client_id, const char* why)> end_session;
  };
  CommitPoller(Deps deps, uint32_t spin_us, const std::atomic<bool>& stopping)
      : d_(std::move(deps)), spin_ns_(uint64_t{spin_us} * 1000), stopping_(stopping) {}
  ~CommitPoller() { Join(); }
  CommitPoller(const CommitPoller&) = delete;
  CommitPoller& operator=(const CommitPoller&) = delete;

  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }
  // Returns once the loop saw `stopping` and drained the queues.
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr size_t kPollBatch = 64;
  // A commit one receive completion announced.
  struct Arrival {
    std::shared_ptr<Lease> lease;
    uint64_t bytes = 0;
  };

  void Loop();
  // Reposts the receive; the lease whose commit it announced, or null (an error, an unknown lease).
  std::shared_ptr<Lease> OnReceive(const fabric::Completion& c);
  // Commits the arrivals, grouped by lease in arrival order; leaves them empty.
  void CommitArrivals(std::span<Arrival> arrivals);
  // Commits consecutive exclusive ranges of one lease (see Group commit); a refused one ends it.
  void Commit(const std::shared_ptr<Lease>& l, std::span<const uint64_t> ranges);
  // Validates and commits `byte_len` bytes at the committed end; on refusal nothing changed.
  // `duplicates`: the duplicate batches the check found (refused or not), for the caller to count.
  Status TryCommit(Partition& p, Lease& l, uint64_t byte_len, uint64_t* duplicates) REQUIRES(p.mu);
  // After a commit of `ranges` ranges: counters, the ack, the readers' wake-up.
  void Committed(Partition& p, const std::shared_ptr<Lease>& l, uint64_t byte_len, size_t ranges, uint64_t t0)
      REQUIRES(p.mu);
  // Ends the lease whose range at the committed end was refused.
  void Refuse(Partition& p, const std::shared_ptr<Lease>& l, uint64_t byte_len, const Status& s)
      REQUIRES(p.mu);

  Deps d_;
  const uint64_t spin_ns_;
  const std::atomic<bool>& stopping_;
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
