// Histogram: fixed buckets over integer observations (nanoseconds, bytes), cheap to record from
// any thread and read by a scrape. Observe is one relaxed add on the bucket and one on the sum:
// no lock, no allocation; callers record per batch or per request, never per record.
//
//   metrics::Histogram h(metrics::LatencyBoundsNs());
//   h.Observe(elapsed_ns);
//   e.Histogram({}, h.Snapshot(1e-9));   // exposed in seconds
//
// Thread safety: Observe and Snapshot from any thread; a snapshot taken while others observe
// may be a few observations behind in some buckets (each count is exact on its own).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "rdmq/metrics/exposition.h"

namespace rdmq::metrics {

class Histogram {
 public:
  // `bounds`: ascending upper bounds (inclusive), in the observed unit.
  explicit Histogram(std::vector<uint64_t> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(uint64_t v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }
  // The state, each bound and the sum multiplied by `scale` (1e-9: nanoseconds to seconds).
  HistogramSnapshot Snapshot(double scale = 1) const;
  uint64_t count() const;

 private:
  std::vector<uint64_t> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<uint64_t> sum_{0};
};

// 1 us to 10 s, about three buckets per decade: for commit, ack and request latencies.
std::vector<uint64_t> LatencyBoundsNs();

}  // namespace rdmq::metrics
