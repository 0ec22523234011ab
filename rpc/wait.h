// Spin-then-sleep waiting on 32-bit words (process-private futexes), for the RPC layer's
// thread hand-offs: a thread spins briefly (the fast path when a core is free), then sleeps in
// the kernel, and a notifier pays for a wake-up system call only when someone actually sleeps.
//
// Threading: every function may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "rdmq/common/cpu.h"

namespace rdmq::rpc {

using rdmq::CpuRelax;

// The spin -> yield -> sleep ladder of a thread that waits for something it cannot sleep on
// (a peer's progress it can only poll for): round r < spin_rounds pauses the CPU, r < yield_rounds
// gives the core to any runnable thread, later rounds sleep `sleep` (zero: keep yielding).
struct Backoff {
  uint32_t spin_rounds = 0;
  uint32_t yield_rounds = 0;
  std::chrono::microseconds sleep{0};

  void Pause(uint32_t round) const noexcept {
    if (round < spin_rounds) {
      CpuRelax();
    } else if (round < yield_rounds || sleep.count() == 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
    }
  }
};

// The same ladder by time, for a poller that found nothing for `idle`: spin until `spin`, then
// yield until `park_after`, then park (sleep until woken).
enum class IdleStep { kSpin, kYield, kPark };
inline IdleStep NextIdleStep(std::chrono::steady_clock::duration idle,
                             std::chrono::steady_clock::duration spin,
                             std::chrono::steady_clock::duration park_after) noexcept {
  if (idle >= park_after) return IdleStep::kPark;
  return idle < spin ? IdleStep::kSpin : IdleStep::kYield;
}

// futex(2) on a process-private word. Wait returns on a wake, a signal, a timeout or when the
// word differs from `expected` (callers recheck). A timeout <= 0 means "no timeout".
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) noexcept;
void FutexWake(std::atomic<uint32_t>* word, int count) noexcept;

// A 31-bit value that one thread waits on and others set. Bit 31 records a sleeping waiter, so
// Set makes a system call only when one sleeps. Set may be called on an object the waiter frees
// right after seeing the new value: the wake-up then goes to a stale address, which is harmless
// (private futexes never touch the memory on wake; a stray wake only makes a waiter recheck).
class Signal {
 public:
  static constexpr uint32_t kSleeping = 1u << 31;

  explicit Signal(uint32_t v = 0) noexcept : word_(v) {}
  uint32_t value() const noexcept { return word_.load(std::memory_order_acquire) & ~kSleeping; }
  // Plain store for a value no thread waits on yet.
  void Reset(uint32_t v) noexcept { word_.store(v, std::memory_order_relaxed); }
  void Set(uint32_t v) noexcept {
    if (word_.exchange(v, std::memory_order_acq_rel) & kSleeping) FutexWake(&word_, 1 << 30);
  }
  // Waits while value() == expected: `spins` rounds of CpuRelax, then sleeps until the value
  // changes or `deadline` passes. Returns the value seen last.
  uint32_t WaitWhile(uint32_t expected, std::chrono::steady_clock::time_point deadline, int spins) noexcept;

 private:
  std::atomic<uint32_t> word_;
};

// A counter that sleepers wait to see change (an "event count"): Notify bumps it and wakes every
// sleeper; Wait sleeps while it still has the value read before the condition was checked.
class EventCount {
 public:
  uint32_t Read() const noexcept { return seq_.load(std::memory_order_acquire); }
  // Returns true when a sleeper was woken (a system call was made).
  bool Notify() noexcept {
    seq_.fetch_add(1, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) == 0) return false;
    FutexWake(&seq_, 1 << 30);
    return true;
  }
  // Sleeps while the count is still `seen`, up to `timeout`.
  void Wait(uint32_t seen, std::chrono::nanoseconds timeout) noexcept {
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (seq_.load(std::memory_order_seq_cst) == seen) FutexWait(&seq_, seen, timeout);
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> waiters_{0};
};

}  // namespace rdmq::rpc
