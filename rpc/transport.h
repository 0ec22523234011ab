// Internal: what client and server share on top of the fabric: a spinlock, canaries, the
// selectively signalled send queue of one endpoint, the WRITEs that put a staged message into the
// peer's ring, and the doorbell that wakes a parked peer on shm.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>

#include "rdmq/common/status.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/fabric/fabric.h"
#include "rpc/handshake.h"
#include "rpc/ring.h"
#include "rpc/wait.h"

namespace rdmq::rpc::internal {

using Clock = std::chrono::steady_clock;

inline constexpr uint64_t kTagSignal = 1;  // the periodic signalled WRITE
inline constexpr uint64_t kTagRead = 2;    // READ of the peer's ring head
inline constexpr uint64_t kTagOther = 3;   // unsignalled helpers (doorbell, renewal)

// Test-and-test-and-set; yields after a while so that a preempted holder can run (the machine
// may have fewer cores than threads). A capability for clang's thread-safety analysis: members it
// protects say GUARDED_BY(that lock), and SpinGuard holds it for a scope.
class CAPABILITY("spinlock") SpinLock {
 public:
  void lock() noexcept ACQUIRE() {
    for (uint32_t spins = 0;; ++spins) {
      if (!flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire)) return;
      kBackoff.Pause(spins);
    }
  }
  bool try_lock() noexcept TRY_ACQUIRE(true) {
    return !flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept RELEASE() { flag_.store(false, std::memory_order_release); }

 private:
  static constexpr Backoff kBackoff{200, 0, std::chrono::microseconds(0)};
  std::atomic<bool> flag_{false};
};

// Holds a SpinLock for its scope (std::lock_guard, visible to the analysis). The adopting form
// takes over a lock the caller already holds (after a successful try_lock).
class SCOPED_CAPABILITY SpinGuard {
 public:
  explicit SpinGuard(SpinLock& mu) noexcept ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  SpinGuard(SpinLock& mu, std::adopt_lock_t) noexcept REQUIRES(mu) : mu_(mu) {}
  ~SpinGuard() RELEASE() { mu_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& mu_;
};

// A fresh non-zero 64-bit canary (xorshift64*).
inline uint64_t NextCanary(uint64_t* state) noexcept {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  const uint64_t v = x * 0x2545F4914F6CDD1Dull;
  return v != 0 ? v : 1;
}
uint64_t RandomSeed() noexcept;

// Posting on one endpoint with selective signalling: one work request in `signal_every` is
// signalled; its completion proves every earlier one done (RC ordering), which is how the queue
// is kept within max_send_wr. Error completions (signalled or not) surface from every call.
// Thread-compatible: used by the endpoint's current owner (the leader, or the channel lock).
class SendQueue {
 public:
  SendQueue(fabric::Endpoint* ep, fabric::CompletionQueue* cq, uint32_t max_wr) noexcept
      : ep_(ep), cq_(cq), max_wr_(max_wr), signal_every_(std::max<uint32_t>(1, max_wr / 4)) {}

  // Posts `wrs` with one doorbell, reaping completions first if the queue could overflow.
  Status Post(std::span<fabric::WorkRequest> wrs);
  // Posts a signalled READ and waits for it (or for an error, or `deadline`).
  Status ReadSync(fabric::WorkRequest read, Clock::time_point deadline);
  // Non-blocking: consumes available completions; an error completion becomes the status.
  Status Reap();

 private:
  Status Handle(const fabric::Completion& c);
  fabric::Endpoint* ep_;
  fabric::CompletionQueue* cq_;
  uint32_t max_wr_;
  uint32_t signal_every_;
  uint32_t since_signal_ = 0;
  uint64_t posted_ = 0;
  uint64_t completed_ = 0;      // every request up to this count has completed
  std::deque<uint64_t> marks_;  // post counts of the outstanding signalled requests
  bool read_done_ = false;
};

// The WRITEs that carry a staged message (and its pad, if any) from `staging` (a mirror of the
// ring at the same offsets) into the peer's ring region at `ring_offset`: each piece's body
// first, its trailing canary as a separate, later WRITE (or WRITE_WITH_IMM kDoorbell when the
// peer is woken through its receive queue). Returns the number of requests written to `out` (4 max).
size_t MessageWrites(const RingProducer::Placement& p, uint64_t capacity, uint32_t body, uint32_t length,
                     const fabric::Region& staging, const fabric::RemoteRegion& ring, uint64_t ring_offset,
                     bool doorbell_imm, fabric::WorkRequest* out);

// Dekker-style doorbell for shm (`wake` mapped): after the message is written, a full fence, then
// if the peer's poller has published "parked", bump its doorbell word (FETCH_ADD) and futex-wake
// it. The parking side does: publish parked, full fence, recheck its rings, sleep on the doorbell.
// No-op where the peer's wake region is not mapped (tcp/verbs use WRITE_WITH_IMM instead).
// `*woke` says whether a wake-up was sent: the caller should then yield its core soon (the
// woken thread is often placed on the waker's core, and would wait behind a spinner).
Status RingDoorbellIfParked(SendQueue& sq, fabric::RemoteRegion& wake, const fabric::Region& scratch_region,
                            std::byte* scratch, bool* woke);

// The parked flag of a local wake region.
inline void SetParked(fabric::Region& wake, uint64_t v) noexcept {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(wake.data() + kParkedOffset))
      .store(v, std::memory_order_seq_cst);
}
inline uint64_t Doorbell(const fabric::Region& wake) noexcept {
  return LoadAcquire64(wake.data() + kDoorbellOffset);
}
// Wakes the local poller sleeping on `wake` (from another thread of this process).
inline void WakeLocal(fabric::Region& wake) noexcept {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(wake.data() + kDoorbellOffset))
      .fetch_add(1, std::memory_order_seq_cst);
  wake.Wake(kDoorbellOffset);
}

// The generic condition of a status, as a wire status (1..255), kInternal when none matches.
uint16_t WireErrc(const Status& s) noexcept;

}  // namespace rdmq::rpc::internal
