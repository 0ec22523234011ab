// Backoff: the waits between attempts to reach the broker again (reconnect.backoff.ms and
// reconnect.backoff.max.ms, retry.backoff.ms), as Kafka's clients space them: the first wait is
// `initial`, each next one twice the one before up to `max`, and each is jittered by up to
// +-20% (never past `max`) so that many clients that lost the same broker do not come back in
// step.
//
// Deterministic for a given seed (tests); clients seed it from a random device.
// Threading: none; the owner serialises calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace rdmq::client {

class Backoff {
 public:
  // `max` below `initial` is taken as `initial`; an `initial` of 0 never waits. A seed of 0
  // draws one from a random device.
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed = 0);

  // The wait before the next attempt; each call doubles the base (up to `max`).
  std::chrono::milliseconds Next();
  // The un-jittered base the next Next() starts from.
  std::chrono::milliseconds base() const noexcept { return base_; }
  // Attempts so far since the last Reset.
  uint32_t attempts() const noexcept { return attempts_; }
  // An attempt succeeded: the next failure waits `initial` again.
  void Reset() noexcept {
    base_ = initial_;
    attempts_ = 0;
  }

  static constexpr double kJitter = 0.2;

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds base_;
  uint32_t attempts_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace rdmq::client
