// CommitPoller: the data plane's thread. It polls the shared receive queue for producers'
// WRITE_WITH_IMM (one per exclusive range: the immediate is the lease index, the length the
// range's), commits each range to the log, writes the ack block and wakes readers; and polls
// the shared send queue (unsignalled acks and notifications, failures logged).
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
#include <thread>

#include "counters.h"
#include "lease_manager.h"
#include "publisher.h"
#include "rdmq/fabric/fabric.h"
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
  void Loop();
  void OnReceive(const fabric::Completion& c);
  // Commits the exclusive range the immediate announced; a refused one ends the lease.
  void Commit(const std::shared_ptr<Lease>& l, Session& session, uint64_t byte_len);

  Deps d_;
  const uint64_t spin_ns_;
  const std::atomic<bool>& stopping_;
  std::thread thread_;
};

}  // namespace rdmq::broker::internal
