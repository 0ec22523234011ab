// AdaptiveSpin (rdmq/common/adaptive_spin.h): a poller spins after work while work comes back
// within the spin, and sleeps at once while it mostly does not.
#include "rdmq/common/adaptive_spin.h"

#include <catch2/catch.hpp>

using rdmq::AdaptiveSpin;

namespace {
constexpr uint64_t kSpin = 1'000'000;  // 1 ms
}

TEST_CASE("AdaptiveSpin: spins at first and while bursts come within the spin") {
  AdaptiveSpin s(kSpin);
  CHECK(s.SpinNs() == kSpin);  // nothing learned yet: spin, as a fixed spin would
  for (int i = 0; i < 100; ++i) {
    s.OnIdleGap(20'000);  // one record in flight: the next commit 20 us later
    CHECK(s.SpinNs() == kSpin);
  }
  s.OnIdleGap(kSpin);  // exactly the spin still counts as caught
  CHECK(s.SpinNs() == kSpin);
}

TEST_CASE("AdaptiveSpin: sleeps at once while most gaps outlast the spin") {
  AdaptiveSpin s(kSpin);
  // 1 MiB batches 2 ms apart: after a majority of the last eight, no more spinning.
  for (int i = 0; i < AdaptiveSpin::kHistory / 2; ++i) {
    s.OnIdleGap(2 * kSpin);
    CHECK(s.SpinNs() == kSpin);  // half of the history is not a majority
  }
  s.OnIdleGap(2 * kSpin);
  CHECK(s.SpinNs() == 0);
  for (int i = 0; i < 50; ++i) s.OnIdleGap(2 * kSpin);
  CHECK(s.SpinNs() == 0);
}

TEST_CASE("AdaptiveSpin: comes back to spinning within a few bursts, whatever the pause") {
  AdaptiveSpin s(kSpin);
  for (int i = 0; i < 20; ++i) s.OnIdleGap(2 * kSpin);
  REQUIRE(s.SpinNs() == 0);
  // A stream that speeds up: spinning again once short gaps are half of the history.
  int bursts = 0;
  while (s.SpinNs() == 0) {
    s.OnIdleGap(10'000);
    ++bursts;
  }
  CHECK(bursts == AdaptiveSpin::kHistory / 2);
  // One long pause (an hour) in a fast stream counts as one gap, not as an hour of history.
  AdaptiveSpin t(kSpin);
  for (int i = 0; i < 8; ++i) t.OnIdleGap(10'000);
  t.OnIdleGap(3'600'000'000'000ULL);
  CHECK(t.SpinNs() == kSpin);
  t.OnIdleGap(10'000);
  CHECK(t.SpinNs() == kSpin);
}

TEST_CASE("AdaptiveSpin: a spin of 0 never spins") {
  AdaptiveSpin s(0);
  CHECK(s.SpinNs() == 0);
  s.OnIdleGap(0);
  CHECK(s.SpinNs() == 0);
  CHECK(s.max_spin_ns() == 0);
}
