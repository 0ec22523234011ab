#include "rdmq/client/backoff.h"

#include <algorithm>
#include <cmath>

namespace rdmq::client {

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed)
    : initial_(std::max(initial, std::chrono::milliseconds(0))),
      max_(std::max(max, initial_)),
      base_(initial_),
      rng_(seed != 0 ? seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {}

std::chrono::milliseconds Backoff::Next() {
  const auto base = base_;
  ++attempts_;
  if (base.count() == 0) return base;  // reconnect.backoff.ms=0: no wait at all
  base_ = base_ > max_ / 2 ? max_ : base_ * 2;
  // A factor in [1 - kJitter, 1 + kJitter], from the generator's raw output (the same sequence
  // on every standard library, unlike std::uniform_real_distribution).
  const double unit = static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // [0, 1)
  const double factor = 1.0 - kJitter + 2 * kJitter * unit;
  const auto ms = std::llround(static_cast<double>(base.count()) * factor);
  return std::chrono::milliseconds(std::clamp<int64_t>(ms, 1, max_.count()));
}

}  // namespace rdmq::client
