// BiasedMutex (biased_mutex.h): the owner's fast path, revocation with membarrier(2), and the
// bias policy.
#include "rdmq/common/biased_mutex.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "rdmq/common/cpu.h"

namespace rdmq {
namespace {

long Membarrier(int cmd) { return ::syscall(__NR_membarrier, cmd, 0, 0); }

// A full barrier on every CPU running a thread of this process. Should the kernel refuse it (an
// address space it does not count as registered, e.g. a child forked from a registered process:
// Linux 6.18 carries the registration across fork, this does not rely on it), register and try
// again; the slow global barrier is the last resort.
void BarrierOnEveryCpu() {
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  if (Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return;
  }
  (void)Membarrier(MEMBARRIER_CMD_GLOBAL);
}

}  // namespace

bool BiasedMutex::Supported() {
  static const bool supported = Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  return supported;
}

bool BiasedMutex::TryFast() {
  const uintptr_t me = ThreadToken();
  if (owner_.load(std::memory_order_relaxed) != me) return false;
  owner_in_.store(1, std::memory_order_relaxed);
  // Orders the store above before the loads below for the compiler only; a revoker's membarrier
  // orders them on the CPU (see the header).
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // Still the owner once no revoker is announced: a revoker that ended the bias stored owner_
  // before it cleared revoking_ (release), so this acquire sees that.
  if (revoking_.load(std::memory_order_acquire) == 0 && owner_.load(std::memory_order_relaxed) == me) {
    fast_count_.store(fast_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    held_fast_ = true;
    return true;
  }
  owner_in_.store(0, std::memory_order_release);
  return false;
}

bool BiasedMutex::LockSlow(bool wait) {
  if (wait) {
    slow_.lock();
  } else if (!slow_.try_lock()) {
    return false;
  }
  const uintptr_t me = ThreadToken();
  const uintptr_t owner = owner_.load(std::memory_order_relaxed);
  if (owner != 0 && owner != me) {
    revoking_.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    BarrierOnEveryCpu();
    for (uint32_t spins = 0; owner_in_.load(std::memory_order_acquire) != 0; ++spins) {
      if (!wait) {
        revoking_.store(0, std::memory_order_release);
        slow_.unlock();
        return false;
      }
      // The owner's critical sections are short (a record) but may hold an RPC (opening a
      // lease): spin, then yield (the owner may have been preempted inside), then sleep, up to
      // 1 ms at a time, rather than burn a core while it waits for a broker.
      if (spins < 64) {
        CpuRelax();
      } else if (spins < 128) {
        ::sched_yield();
      } else {
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::min<uint32_t>(1000, 10u << std::min<uint32_t>(spins - 128, 7))));
      }
    }
    revoked_ = true;
    // Keep the bias only while the owner takes the lock far more often than others do.
    const uint64_t fast = fast_count_.load(std::memory_order_relaxed);
    if (fast - fast_at_revoke_ < kKeepBias) {
      owner_.store(0, std::memory_order_relaxed);
      last_ = 0;
      streak_ = 0;
    }
    fast_at_revoke_ = fast;
  } else if (owner == 0) {
    if (last_ == me) {
      if (++streak_ >= kBiasAfter && Supported()) {
        owner_.store(me, std::memory_order_relaxed);
        fast_at_revoke_ = fast_count_.load(std::memory_order_relaxed);
      }
    } else {
      last_ = me;
      streak_ = 1;
    }
  }
  held_fast_ = false;
  return true;
}

void BiasedMutex::UnlockSlow() {
  if (revoked_) {
    revoked_ = false;
    revoking_.store(0, std::memory_order_release);
  }
  slow_.unlock();
}

}  // namespace rdmq
