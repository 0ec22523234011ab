// Futexes on words that may live in memory shared between processes (never FUTEX_PRIVATE): the
// sleep/wake of Region::WaitWhileEqual/Wake and of the software completion queues' doorbells.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "rdmq/common/status.h"

namespace rdmq::fabric::internal {

// Futex wait/wake on the low 32 bits of an 8-byte word. Writers that want to wake sleepers must
// change the low 32 bits. Wait returns OK when the word differs from `expected`, a wake arrived
// or a signal interrupted the wait; kTimeout when `timeout` passed; kUnaligned for a word that
// is not 8-byte aligned.
Status WaitWordWhileEqual(const void* word, uint64_t expected, std::chrono::nanoseconds timeout);
void WakeWord(const void* word) noexcept;
// Raw 32-bit futex helpers for doorbells. Wait returns 0 or the errno (ETIMEDOUT, EAGAIN, EINTR).
int FutexWait32(const std::atomic<uint32_t>* word, uint32_t expected,
                std::chrono::nanoseconds timeout) noexcept;
void FutexWake32(const std::atomic<uint32_t>* word) noexcept;

}  // namespace rdmq::fabric::internal
