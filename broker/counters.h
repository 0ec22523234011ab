// The broker's event counters (Broker::Stats). Shared by reference by the pieces that count;
// relaxed atomics, read by stats().
#pragma once

#include <atomic>
#include <cstdint>

#include "rdmq/metrics/histogram.h"

namespace rdmq::broker::internal {

struct Counters {
  std::atomic<uint64_t> commits{0};        // ranges committed (data plane and Commit RPC)
  std::atomic<uint64_t> commit_errors{0};  // commits refused
  std::atomic<uint64_t> acks{0};           // ack blocks written
  std::atomic<uint64_t> leases_granted{0};
  std::atomic<uint64_t> leases_expired{0};
  std::atomic<uint64_t> leases_idle{0};            // released by lease.idle.ms
  std::atomic<uint64_t> notifications{0};          // Watch notifications sent
  std::atomic<uint64_t> duplicates{0};             // idempotent batches found to be duplicates
  std::atomic<uint64_t> poller_wakeups{0};         // the commit poller's sleeps that ended (wake or timeout)
  std::atomic<uint64_t> poller_spins{0};           // spin phases the commit poller began (after completions)
  std::atomic<uint64_t> commit_groups{0};          // one lease's ranges from one poll committed as one
  std::atomic<uint64_t> commit_groups_split{0};    // such groups refused, then committed range by range
  std::atomic<uint64_t> spare_segments{0};         // next segments made ahead of their roll
  std::atomic<uint64_t> spare_segments_failed{0};  // attempts that failed (the roll made the segment)
  std::atomic<uint64_t> data_receives{0};          // receive completions on the data plane (commits)
  std::atomic<uint64_t> data_sends{0};             // send completions (acks, notifications, signalled)
  std::atomic<uint64_t> data_errors{0};            // data-plane completions with an error

  // Latencies, observed once per commit or request (never per record), in nanoseconds.
  metrics::Histogram data_commit_ns{metrics::LatencyBoundsNs()};    // commit received → ack posted
  metrics::Histogram rpc_commit_ns{metrics::LatencyBoundsNs()};     // Commit RPC handled
  metrics::Histogram kafka_produce_ns{metrics::LatencyBoundsNs()};  // Produce read → reply queued

  static void Add(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
};

}  // namespace rdmq::broker::internal
