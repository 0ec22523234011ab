// client::Backoff: exponential, capped, jittered within +-20%, deterministic for a seed.
#include "rdmq/client/backoff.h"

#include <catch2/catch.hpp>
#include <vector>

namespace rdmq::client {
namespace {

using namespace std::chrono_literals;

std::vector<int64_t> Draw(Backoff& b, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(b.Next().count());
  return out;
}

TEST_CASE("backoff doubles from the initial wait up to the max, each wait jittered", "[client][backoff]") {
  Backoff b(50ms, 1000ms, 42);
  // Bases: 50, 100, 200, 400, 800, 1000, 1000, ...
  const int64_t bases[] = {50, 100, 200, 400, 800, 1000, 1000, 1000};
  for (int64_t base : bases) {
    CHECK(b.base().count() == base);
    const int64_t w = b.Next().count();
    CHECK(w >= base * 8 / 10);
    CHECK(w <= std::min<int64_t>(base * 12 / 10, 1000));  // never past the max
  }
  CHECK(b.attempts() == 8);
  b.Reset();
  CHECK(b.base() == 50ms);
  CHECK(b.attempts() == 0);
}

TEST_CASE("backoff is deterministic for a seed and jitters across seeds", "[client][backoff]") {
  Backoff a(100ms, 100'000ms, 7), b(100ms, 100'000ms, 7), c(100ms, 100'000ms, 8);
  const auto da = Draw(a, 10), db = Draw(b, 10), dc = Draw(c, 10);
  CHECK(da == db);
  CHECK(da != dc);
  // Jittered: not every wait is exactly its base.
  Backoff d(1000ms, 1000ms, 3);
  const auto dd = Draw(d, 20);
  int off_base = 0;
  for (int64_t w : dd) {
    CHECK(w >= 800);
    CHECK(w <= 1000);
    off_base += w != 1000;
  }
  CHECK(off_base > 0);
}

TEST_CASE("backoff edge cases: zero initial, max below initial", "[client][backoff]") {
  Backoff zero(0ms, 1000ms, 1);
  CHECK(zero.Next() == 0ms);
  CHECK(zero.Next() == 0ms);
  Backoff inverted(500ms, 100ms, 1);  // the max is taken as the initial
  for (int i = 0; i < 5; ++i) {
    const auto w = inverted.Next();
    CHECK(w >= 400ms);
    CHECK(w <= 500ms);
  }
  Backoff big(std::chrono::milliseconds(int64_t{1} << 40), std::chrono::milliseconds(int64_t{1} << 41), 1);
  for (int i = 0; i < 80; ++i) CHECK(big.Next() <= std::chrono::milliseconds(int64_t{1} << 41));
}

}  // namespace
}  // namespace rdmq::client
