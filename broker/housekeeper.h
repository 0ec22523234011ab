// Housekeeper: the broker's periodic work, every lease.ms/10 (5..100 ms): expires leases (a
// final ack, the window revoked), fills expired shared reservations and settles what that
// completes, drops retired registrations past their grace period, checkpoints partitions with
// new commits every log.checkpoint.interval.ms, applies retention every
// log.retention.check.interval.ms, drops deleted partitions' registrations, and offers each partition
// to the SegmentPreparer (which makes its next segment ahead when Partition::WantsSpare says so).
//
// Threading: Tick runs on the housekeeping thread (Start) only; Stop wakes and joins it.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "counters.h"
#include "lease_manager.h"
#include "publisher.h"
#include "rdmq/common/mutex.h"
#include "segment_preparer.h"
#include "topic_table.h"

namespace rdmq::broker::internal {

class Housekeeper {
 public:
  struct Intervals {
    uint32_t lease_ms = 0;
    uint32_t checkpoint_ms = 0;
    uint32_t retention_check_ms = 0;
  };
  // `preparer` (may be null) is offered every partition each tick: the commit poller offers
  // exclusive producers' partitions after their commits, this catches the rest.
  Housekeeper(Intervals iv, TopicTable& topics, LeaseManager& leases, Publisher& publisher,
              Counters& counters, SegmentPreparer* preparer, const std::atomic<bool>& stopping);
  ~Housekeeper() { Stop(); }
  Housekeeper(const Housekeeper&) = delete;
  Housekeeper& operator=(const Housekeeper&) = delete;

  void Start();
  // Call after setting `stopping`.
  void Stop();

 private:
  void Loop();
  void Tick(uint64_t now_ns);
  void Tend(Partition& p, uint64_t now_ns, bool checkpoint, bool retention) REQUIRES(p.mu);
  void ExpireReservations(Partition& p) REQUIRES(p.mu);
  void ApplyRetention(Partition& p) REQUIRES(p.mu);

  const Intervals iv_;
  TopicTable& topics_;
  LeaseManager& leases_;
  Publisher& publisher_;
  Counters& n_;
  SegmentPreparer* const preparer_;
  const std::atomic<bool>& stopping_;
  uint64_t last_checkpoint_ns_ = 0;  // the housekeeping thread's
  uint64_t last_retention_ns_ = 0;
  Mutex mu_;
  CondVar cv_;
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
