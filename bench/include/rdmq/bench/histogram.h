// LogHistogram: a fixed-size, HDR-style histogram of non-negative 64-bit values (latencies in
// nanoseconds), for recording one sample per record on a hot path without allocating.
//
// Values below 128 have a bucket each; above, every power of two [2^e, 2^(e+1)) is split into 64
// equal buckets, so a bucket is at most 1/64 (1.6%) of its lower bound wide and the reported
// value (the bucket's midpoint, clamped to the exact min and max) is within 0.8% of the truth.
// The exact count, sum, min and max are kept beside the buckets.
//
//   LogHistogram h;                 // ~30 KiB, all zero; no heap memory
//   h.Record(latency_ns);           // a few instructions, no allocation
//   h.Percentile(99.9);             // value below which 99.9% of the samples lie
//
// The type is trivially copyable and has no pointers, so it may live in memory shared between
// processes (the benchmark's fork mode puts one per worker in a MAP_SHARED region).
// Threading: not synchronised; one writer at a time. Merge() into another histogram after the
// writers are done, or from the single thread that owns both.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rdmq::bench {

class LogHistogram {
 public:
  static constexpr int kSubBits = 6;  // 64 buckets per power of two
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr uint64_t kLinear = 2 * kSub;  // values < 128 bucketed exactly
  static constexpr int kBuckets = (64 - kSubBits + 1) * static_cast<int>(kSub);  // 3776

  void Record(uint64_t value) noexcept { RecordN(value, 1); }
  void RecordN(uint64_t value, uint64_t n) noexcept {
    counts_[static_cast<std::size_t>(BucketOf(value))] += n;
    count_ += n;
    sum_ += value * n;
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
  }
  // Adds every sample of `other`.
  void Merge(const LogHistogram& other) noexcept;
  void Reset() noexcept { *this = LogHistogram(); }

  uint64_t count() const noexcept { return count_; }
  uint64_t min() const noexcept { return count_ ? min_ : 0; }
  uint64_t max() const noexcept { return max_; }
  double mean() const noexcept {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0;
  }
  // The value at percentile p in [0, 100]: the smallest recorded bucket holding the
  // ceil(p/100 * count)-th smallest sample, reported as its midpoint clamped to [min, max].
  // 0 for an empty histogram; p=100 gives max() exactly and p=0 min() exactly.
  uint64_t Percentile(double p) const noexcept;

  // Bucket arithmetic, public for tests and for exporting the distribution.
  static int BucketOf(uint64_t value) noexcept {
    if (value < kLinear) return static_cast<int>(value);
    const int e = 63 - __builtin_clzll(value);  // >= 7
    const int shift = e - kSubBits;
    return (shift * static_cast<int>(kSub)) + static_cast<int>(value >> shift);
  }
  static uint64_t BucketLow(int bucket) noexcept {
    if (bucket < static_cast<int>(kLinear)) return static_cast<uint64_t>(bucket);
    const int shift = bucket / static_cast<int>(kSub) - 1;
    return (kSub + static_cast<uint64_t>(bucket % static_cast<int>(kSub))) << shift;
  }
  static uint64_t BucketWidth(int bucket) noexcept {
    if (bucket < static_cast<int>(kLinear)) return 1;
    return uint64_t{1} << (bucket / static_cast<int>(kSub) - 1);
  }
  uint64_t BucketCount(int bucket) const noexcept { return counts_[static_cast<std::size_t>(bucket)]; }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = ~uint64_t{0};
  uint64_t max_ = 0;
};

static_assert(std::is_trivially_copyable_v<LogHistogram>, "lives in shared memory");
static_assert(LogHistogram::kBuckets == 3776);

}  // namespace rdmq::bench
