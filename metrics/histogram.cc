#include "rdmq/metrics/histogram.h"

#include <cassert>

namespace rdmq::metrics {

Histogram::Histogram(std::vector<uint64_t> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 1; i < bounds_.size(); ++i) assert(bounds_[i - 1] < bounds_[i]);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot(double scale) const {
  HistogramSnapshot s;
  s.bounds.reserve(bounds_.size());
  for (uint64_t b : bounds_) s.bounds.push_back(static_cast<double>(b) * scale);
  s.counts.reserve(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) s.counts.push_back(counts_[i].load(std::memory_order_relaxed));
  s.sum = static_cast<double>(sum_.load(std::memory_order_relaxed)) * scale;
  return s;
}

uint64_t Histogram::count() const {
  uint64_t n = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) n += counts_[i].load(std::memory_order_relaxed);
  return n;
}

std::vector<uint64_t> LatencyBoundsNs() {
  std::vector<uint64_t> b;
  for (uint64_t decade = 1000; decade <= 1'000'000'000; decade *= 10) {
    for (uint64_t m : {1, 2, 5}) b.push_back(decade * m);
  }
  b.push_back(10'000'000'000);
  return b;
}

}  // namespace rdmq::metrics
