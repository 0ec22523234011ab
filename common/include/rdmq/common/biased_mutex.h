// BiasedMutex: a mutex that one thread, the one that takes it most, locks and unlocks with plain
// loads and stores, no locked instruction; every other thread takes it through a std::mutex and
// first revokes that fast path with membarrier(2). It guards state that one thread touches per
// item and others now and then: a producer's partition, which the sending thread locks once per
// record and the I/O thread once per tick.
//
//   BiasedMutex mu_;
//   int n_ GUARDED_BY(mu_) = 0;
//   { BiasedLock l(mu_); ++n_; }
//
// How (an asymmetric Dekker handshake, the technique of userspace RCU and folly's asymmetric
// barriers): the owner announces itself (`owner_in_` = 1), orders that store before its next
// load with a compiler barrier only, and enters unless a revoker is announced (`revoking_`); a
// revoker holds `slow_`, announces itself, then calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
// which runs a full memory barrier on every CPU running a thread of this process, and waits for
// `owner_in_` to be 0. Either the owner's load came after that barrier (it sees the revoker and
// queues on `slow_`) or its store is visible to the revoker (which waits for it to leave).
//
// Who the owner is: nobody at first. A thread that takes the lock kBiasAfter times in a row
// (through `slow_`) becomes the owner; a revocation that finds fewer than kKeepBias fast
// acquisitions since the previous one ends the bias (membarrier costs microseconds: it must be
// rare beside the fast path). Without membarrier (an old kernel, a sandbox) nobody ever becomes
// the owner and this is a std::mutex with a few more loads.
//
// Threading: not recursive; Unlock on the thread that locked.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "rdmq/common/thread_annotations.h"

namespace rdmq {

class CAPABILITY("mutex") BiasedMutex {
 public:
  static constexpr uint32_t kBiasAfter = 64;
  static constexpr uint64_t kKeepBias = 256;

  BiasedMutex() = default;
  BiasedMutex(const BiasedMutex&) = delete;
  BiasedMutex& operator=(const BiasedMutex&) = delete;

  void Lock() ACQUIRE() NO_THREAD_SAFETY_ANALYSIS {
    if (TryFast()) return;
    LockSlow(/*wait=*/true);
  }
  bool TryLock() TRY_ACQUIRE(true) NO_THREAD_SAFETY_ANALYSIS { return TryFast() || LockSlow(/*wait=*/false); }
  void Unlock() RELEASE() NO_THREAD_SAFETY_ANALYSIS {
    if (held_fast_) {
      held_fast_ = false;
      owner_in_.store(0, std::memory_order_release);  // a plain store
      return;
    }
    UnlockSlow();
  }
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

  // Whether the calling thread is the bias owner now (tests, metrics).
  bool BiasedToCaller() const { return owner_.load(std::memory_order_relaxed) == ThreadToken(); }
  // Whether this process can use membarrier(2) (registered once); false: never biased.
  static bool Supported();

 private:
  // A value unique to each live thread: the address of a thread_local.
  static uintptr_t ThreadToken() {
    static thread_local char token;
    return reinterpret_cast<uintptr_t>(&token);
  }
  bool TryFast() TRY_ACQUIRE(true) NO_THREAD_SAFETY_ANALYSIS;
  bool LockSlow(bool wait) TRY_ACQUIRE(true) NO_THREAD_SAFETY_ANALYSIS;
  void UnlockSlow() RELEASE() NO_THREAD_SAFETY_ANALYSIS;

  std::atomic<uintptr_t> owner_{0};      // the bias owner's token, 0: none; changed under slow_ only
  std::atomic<uint32_t> owner_in_{0};    // stored by the owner only: in (or entering) the fast path
  std::atomic<uint32_t> revoking_{0};    // a revoker holds slow_ and holds (or waits for) the lock
  std::atomic<uint64_t> fast_count_{0};  // fast acquisitions; the owner's (a load and a store)
  std::mutex slow_;
  // The holder's: how it took the lock, read back by Unlock.
  bool held_fast_ = false;
  bool revoked_ = false;
  // Under slow_: the bias policy.
  uintptr_t last_ = 0;
  uint32_t streak_ = 0;
  uint64_t fast_at_revoke_ = 0;
};

// Holds a BiasedMutex for its scope; std::defer_lock starts it unlocked (then TryLock).
class SCOPED_CAPABILITY BiasedLock {
 public:
  explicit BiasedLock(BiasedMutex& mu) ACQUIRE(mu) : mu_(mu), owns_(true) { mu_.Lock(); }
  BiasedLock(BiasedMutex& mu, std::defer_lock_t) EXCLUDES(mu) : mu_(mu) {}
  ~BiasedLock() RELEASE() {
    if (owns_) mu_.Unlock();
  }
  bool TryLock() TRY_ACQUIRE(true) {
    owns_ = mu_.TryLock();
    return owns_;
  }
  BiasedLock(const BiasedLock&) = delete;
  BiasedLock& operator=(const BiasedLock&) = delete;

 private:
  BiasedMutex& mu_;
  bool owns_ = false;
};

}  // namespace rdmq
