#include "rpc/wait.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace rdmq::rpc {

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) noexcept {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout.count() > 0) {
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    tsp = &ts;
  }
  // Relative timeout; EINTR/EAGAIN/ETIMEDOUT all mean "recheck".
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, tsp, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word, int count) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

uint32_t Signal::WaitWhile(uint32_t expected, std::chrono::steady_clock::time_point deadline,
                           int spins) noexcept {
  for (int i = 0; i < spins; ++i) {
    const uint32_t v = value();
    if (v != expected) return v;
    CpuRelax();
  }
  for (;;) {
    uint32_t w = word_.load(std::memory_order_acquire);
    if ((w & ~kSleeping) != expected) return w & ~kSleeping;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return expected;
    if ((w & kSleeping) == 0) {
      if (!word_.compare_exchange_weak(w, w | kSleeping, std::memory_order_acq_rel)) continue;
      w |= kSleeping;
    }
    // Sleep in slices of at most 100 ms so that a far deadline never overflows the timespec.
    const auto left = std::min<std::chrono::nanoseconds>(deadline - now, std::chrono::milliseconds(100));
    FutexWait(&word_, w, left);
  }
}

}  // namespace rdmq::rpc
