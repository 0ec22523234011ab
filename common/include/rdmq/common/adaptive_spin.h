// AdaptiveSpin: whether a poller should spin after a burst of work before it sleeps, learned
// from how far apart the bursts come. Sans-I/O: the caller feeds it the idle gaps it saw and
// asks it for the spin; nothing here reads a clock.
//
// Spinning pays when the next burst comes before the spin ends (it saves a wake-up, tens of
// microseconds on a VM) and wastes a core when it does not. The policy remembers, for the last
// kHistory gaps, whether each was longer than the configured spin, and spins the full spin
// unless most of them were: work that arrives every 2 ms (a producer's 1 MiB batches) gets a
// poller that sleeps at once and is woken by each commit, work that arrives every 50 us (one
// record in flight, a paced stream) a poller that spins and catches it. A single long pause
// counts once, so the policy comes back within a few bursts when work speeds up again.
//
// Threading: not thread-safe; one poller thread owns it.
#pragma once

#include <bit>
#include <cstdint>

namespace rdmq {

class AdaptiveSpin {
 public:
  static constexpr int kHistory = 8;

  explicit AdaptiveSpin(uint64_t max_spin_ns) noexcept : max_spin_ns_(max_spin_ns) {}

  // Work arrived `gap_ns` after the previous burst's last piece of it.
  void OnIdleGap(uint64_t gap_ns) noexcept {
    history_ = static_cast<uint8_t>((history_ << 1) | (gap_ns > max_spin_ns_ ? 1u : 0u));
  }
  // How long to spin after the burst that just ended: the full spin, or 0 (sleep at once) while
  // more than half of the last kHistory gaps outlasted it.
  uint64_t SpinNs() const noexcept { return std::popcount(history_) > kHistory / 2 ? 0 : max_spin_ns_; }
  uint64_t max_spin_ns() const noexcept { return max_spin_ns_; }

 private:
  static_assert(kHistory == 8, "history_ holds one bit per gap");
  const uint64_t max_spin_ns_;
  uint8_t history_ = 0;  // bit i: the i-th last gap outlasted the spin
};

}  // namespace rdmq
