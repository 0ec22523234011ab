#include "futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

#include "rdmq/fabric/fabric.h"

namespace rdmq::fabric::internal {

namespace {
long Futex(const void* addr, int op, uint32_t val, const timespec* ts) noexcept {
  return ::syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}
timespec ToTimespec(std::chrono::nanoseconds d) noexcept {
  if (d.count() < 0) d = std::chrono::nanoseconds(0);
  timespec ts;
  ts.tv_sec = static_cast<time_t>(d.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(d.count() % 1'000'000'000);
  return ts;
}
}  // namespace

int FutexWait32(const std::atomic<uint32_t>* word, uint32_t expected,
                std::chrono::nanoseconds timeout) noexcept {
  const timespec ts = ToTimespec(timeout);
  if (Futex(word, FUTEX_WAIT, expected, &ts) == 0) return 0;
  return errno;
}

void FutexWake32(const std::atomic<uint32_t>* word) noexcept { Futex(word, FUTEX_WAKE, INT_MAX, nullptr); }

Status WaitWordWhileEqual(const void* word, uint64_t expected, std::chrono::nanoseconds timeout) {
  if (reinterpret_cast<uintptr_t>(word) % 8 != 0) return Status(FabricErrc::kUnaligned, "WaitWhileEqual");
  auto* w64 = static_cast<uint64_t*>(const_cast<void*>(word));
  if (std::atomic_ref<uint64_t>(*w64).load(std::memory_order_acquire) != expected) return Status::Ok();
  // Little-endian: the low 32 bits are the first four bytes.
  const auto* low = reinterpret_cast<const std::atomic<uint32_t>*>(word);
  const int err = FutexWait32(low, static_cast<uint32_t>(expected), timeout);
  if (err == ETIMEDOUT) {
    if (std::atomic_ref<uint64_t>(*w64).load(std::memory_order_acquire) != expected) return Status::Ok();
    return Status(Errc::kTimeout, "WaitWhileEqual");
  }
  return Status::Ok();  // woken, value changed (EAGAIN) or interrupted: callers recheck
}

void WakeWord(const void* word) noexcept {
  FutexWake32(reinterpret_cast<const std::atomic<uint32_t>*>(word));
}

}  // namespace rdmq::fabric::internal
