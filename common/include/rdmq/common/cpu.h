// Spin-wait support shared by every busy-polling loop (commit poller, producer, consumer, RPC).
#pragma once

namespace rdmq {

// Tells the CPU this thread is spinning (x86 PAUSE, ARM YIELD): saves power and lets a sibling
// hyperthread run. Costs tens of cycles; call it once per empty poll.
inline void CpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace rdmq
