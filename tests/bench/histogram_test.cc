#include "rdmq/bench/histogram.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "support/test_util.h"

using rdmq::bench::LogHistogram;

TEST_CASE("bucket boundaries are contiguous and cover every value", "[bench][histogram]") {
  // Each bucket starts where the previous one ended, from 0 to 2^64.
  uint64_t expect_low = 0;
  for (int b = 0; b < LogHistogram::kBuckets; ++b) {
    INFO("bucket " << b);
    REQUIRE(LogHistogram::BucketLow(b) == expect_low);
    REQUIRE(LogHistogram::BucketOf(LogHistogram::BucketLow(b)) == b);
    const uint64_t last = LogHistogram::BucketLow(b) + (LogHistogram::BucketWidth(b) - 1);
    REQUIRE(LogHistogram::BucketOf(last) == b);
    expect_low = last + 1;  // wraps to 0 after the last bucket
  }
  REQUIRE(expect_low == 0);
  REQUIRE(LogHistogram::BucketOf(~uint64_t{0}) == LogHistogram::kBuckets - 1);
}

TEST_CASE("bucket width is at most 1/64 of its values", "[bench][histogram]") {
  for (int b = 0; b < LogHistogram::kBuckets; ++b) {
    const uint64_t low = LogHistogram::BucketLow(b);
    if (low < LogHistogram::kLinear) {
      REQUIRE(LogHistogram::BucketWidth(b) == 1);
    } else {
      REQUIRE(LogHistogram::BucketWidth(b) * 64 <= low);
    }
  }
}

TEST_CASE("small values are exact", "[bench][histogram]") {
  LogHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  REQUIRE(h.count() == 100);
  REQUIRE(h.min() == 1);
  REQUIRE(h.max() == 100);
  REQUIRE(h.Percentile(50) == 50);
  REQUIRE(h.Percentile(99) == 99);
  REQUIRE(h.Percentile(100) == 100);
  REQUIRE(h.Percentile(0) == 1);
  REQUIRE(h.mean() == Approx(50.5));
}

TEST_CASE("percentiles of random samples are within the bucket precision", "[bench][histogram]") {
  std::mt19937_64 rng(rdmq::test::TestSeed());
  for (int trial = 0; trial < rdmq::test::Trials(20, 3); ++trial) {
    // Log-normal-ish latencies from ~100 ns to ~10 ms.
    std::lognormal_distribution<double> dist(std::log(2000.0), 1.5 + trial * 0.05);
    std::vector<uint64_t> v(20000);
    LogHistogram h;
    for (auto& x : v) {
      x = static_cast<uint64_t>(dist(rng)) + 1;
      h.Record(x);
    }
    std::sort(v.begin(), v.end());
    for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99}) {
      const size_t rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
      const uint64_t exact = v[std::max<size_t>(rank, 1) - 1];
      const uint64_t got = h.Percentile(p);
      INFO("p" << p << " exact " << exact << " got " << got);
      REQUIRE(std::abs(static_cast<double>(got) - static_cast<double>(exact)) <=
              static_cast<double>(exact) / 64 + 1);
    }
    REQUIRE(h.max() == v.back());
    REQUIRE(h.min() == v.front());
  }
}

TEST_CASE("merge adds samples, reset empties", "[bench][histogram]") {
  LogHistogram a, b;
  for (int i = 0; i < 1000; ++i) a.Record(1000);
  for (int i = 0; i < 1000; ++i) b.Record(1'000'000);
  a.Merge(b);
  REQUIRE(a.count() == 2000);
  REQUIRE(a.min() == 1000);
  REQUIRE(a.max() == 1'000'000);
  REQUIRE(a.Percentile(50) == Approx(1000).epsilon(1.0 / 64));
  REQUIRE(a.Percentile(51) == Approx(1'000'000).epsilon(1.0 / 64));
  a.Reset();
  REQUIRE(a.count() == 0);
  REQUIRE(a.Percentile(50) == 0);
  REQUIRE(a.max() == 0);
  LogHistogram empty;
  b.Merge(empty);
  REQUIRE(b.count() == 1000);
  REQUIRE(b.min() == 1'000'000);
}

TEST_CASE("huge values land in the last buckets without overflow", "[bench][histogram]") {
  LogHistogram h;
  h.Record(~uint64_t{0});
  h.Record(uint64_t{1} << 63);
  h.Record(0);
  REQUIRE(h.count() == 3);
  REQUIRE(h.min() == 0);
  REQUIRE(h.max() == ~uint64_t{0});
  REQUIRE(h.Percentile(100) == ~uint64_t{0});
  REQUIRE(h.Percentile(50) >= (uint64_t{1} << 63));
}
