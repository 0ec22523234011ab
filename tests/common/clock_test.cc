// Clocks (rdmq/common/clock.h): the coarse wall clock that stamps records lags the precise one
// by at most a tick and never runs ahead of it.
#include "rdmq/common/clock.h"

#include <catch2/catch.hpp>

TEST_CASE("CoarseWallMillis is never ahead of WallMillis and close behind it") {
  for (int i = 0; i < 10000; ++i) {
    const int64_t before = rdmq::WallMillis().value();
    const int64_t coarse = rdmq::CoarseWallMillis().value();
    const int64_t after = rdmq::WallMillis().value();
    REQUIRE(coarse <= after);
    // A tick is 1-4 ms; a second covers a thread descheduled between the reads.
    REQUIRE(coarse >= before - 1000);
  }
}
