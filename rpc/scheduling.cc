#include "rpc/scheduling.h"

#include <algorithm>
#include <numeric>

namespace rdmq::rpc {
namespace {
__extension__ typedef unsigned __int128 U128;  // exact MAX_AQP * U_i products
}  // namespace

std::vector<uint32_t> DistributeActiveChannels(std::span<const ClientUsage> clients, uint32_t max_active) {
  std::vector<uint32_t> out(clients.size(), 1);
  uint64_t total = 0;
  for (const auto& c : clients) {
    if (!c.joined) total += c.utilization;
  }
  struct Rem {
    size_t index;
    uint64_t remainder;  // fractional part scaled by total
  };
  std::vector<Rem> rems;
  uint64_t assigned = 0;
  for (size_t i = 0; i < clients.size(); ++i) {
    const ClientUsage& c = clients[i];
    const uint32_t cap = std::max<uint32_t>(1, c.channels);
    if (c.joined) {
      out[i] = std::clamp<uint32_t>(c.current, 1, cap);
      continue;
    }
    if (c.utilization == 0 || total == 0) continue;  // dormant: 1
    // floor(MAX_AQP * U_i / sum U) without overflow for realistic values (128-bit product).
    const U128 prod = static_cast<U128>(max_active) * c.utilization;
    const auto share = static_cast<uint64_t>(prod / total);
    const auto rem = static_cast<uint64_t>(prod % total);
    out[i] = static_cast<uint32_t>(std::clamp<uint64_t>(share, 1, cap));
    assigned += out[i];
    if (out[i] < cap) rems.push_back({i, rem});
  }
  // Channels lost to rounding down go to the largest remainders.
  std::stable_sort(rems.begin(), rems.end(),
                   [](const Rem& a, const Rem& b) { return a.remainder > b.remainder; });
  for (const Rem& r : rems) {
    if (assigned >= max_active) break;
    if (r.remainder == 0) break;
    ++out[r.index];
    ++assigned;
  }
  return out;
}

uint32_t ChannelsForNewClient(std::span<const uint32_t> functioning_allotments, uint32_t channels,
                              uint32_t max_active) {
  const uint32_t cap = std::max<uint32_t>(1, channels);
  if (functioning_allotments.empty()) return std::clamp<uint32_t>(max_active, 1, cap);
  const uint64_t sum =
      std::accumulate(functioning_allotments.begin(), functioning_allotments.end(), uint64_t{0});
  const uint64_t n = functioning_allotments.size();
  const uint64_t avg = (sum + n / 2) / n;
  return static_cast<uint32_t>(std::clamp<uint64_t>(avg, 1, cap));
}

std::vector<bool> SelectActiveChannels(const std::vector<bool>& current, uint32_t target) {
  std::vector<bool> out(current.size(), false);
  uint32_t n = 0;
  for (size_t i = 0; i < current.size() && n < target; ++i) {
    if (current[i]) {
      out[i] = true;
      ++n;
    }
  }
  for (size_t i = 0; i < current.size() && n < target; ++i) {
    if (!out[i]) {
      out[i] = true;
      ++n;
    }
  }
  return out;
}

std::vector<uint32_t> AssignThreads(std::span<const ThreadLoad> threads, std::span<const uint32_t> active) {
  std::vector<uint32_t> out(threads.size(), active.empty() ? 0 : active[0]);
  if (active.empty()) return out;
  std::vector<size_t> busy;
  uint64_t total_bytes = 0;
  size_t idle_rr = 0;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i].requests > 0) {
      busy.push_back(i);
      total_bytes += threads[i].bytes;
    } else if (std::find(active.begin(), active.end(), threads[i].current) != active.end()) {
      out[i] = threads[i].current;
    } else {
      out[i] = active[idle_rr++ % active.size()];
    }
  }
  // Sorted by median request size, then by request count, each compared by its power-of-two
  // class: statistics of threads doing the same work differ a little every interval, and exact
  // keys would reshuffle them (every move costs a drain of the thread's responses). Ties keep
  // threads on their current channel first, then input order.
  auto cls = [](uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); };
  std::stable_sort(busy.begin(), busy.end(), [&](size_t a, size_t b) {
    const int sa = cls(threads[a].median_size), sb = cls(threads[b].median_size);
    if (sa != sb) return sa < sb;
    const int ra = cls(threads[a].requests), rb = cls(threads[b].requests);
    if (ra != rb) return ra < rb;
    return threads[a].current < threads[b].current;
  });
  const uint64_t quota = std::max<uint64_t>(1, total_bytes / active.size());
  size_t qp = 0;
  uint64_t load = 0;
  for (size_t i : busy) {
    load += threads[i].bytes;
    out[i] = active[std::min(qp, active.size() - 1)];
    if (load >= quota) {
      ++qp;
      load = 0;
    }
  }
  return out;
}

bool PlacementBalanced(std::span<const ThreadLoad> threads, std::span<const uint32_t> active,
                       double tolerance) {
  if (active.empty()) return false;
  std::vector<uint64_t> load(active.size(), 0);
  uint64_t total = 0;
  for (const auto& t : threads) {
    if (t.requests == 0) continue;
    const auto it = std::find(active.begin(), active.end(), t.current);
    if (it == active.end()) return false;
    load[static_cast<size_t>(it - active.begin())] += t.bytes;
    total += t.bytes;
  }
  const double quota = static_cast<double>(total) / static_cast<double>(active.size());
  for (uint64_t l : load) {
    if (static_cast<double>(l) > tolerance * quota) return false;
  }
  return true;
}

}  // namespace rdmq::rpc
