// FLOCK's symbiotic send-recv scheduling (section 3.4), sans-I/O: pure functions that the
// server's channel scheduler and the client's thread scheduler call once per interval.
//
// Threading: pure functions; no state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rdmq::rpc {

// --- Server: how many channels each client may keep active (Equation 3.1) -------------------

struct ClientUsage {
  uint32_t channels = 1;     // channels the client's connection handle owns
  uint64_t utilization = 0;  // U_i: sum of coalescing degrees reported in renewals (any unit)
  bool joined = false;       // connected during this interval: keeps `current`
  uint32_t current = 1;      // active channels it has now
};

// Equation 3.1: AQP_i = MAX_AQP * U_i / sum_k U_k for a functioning client (U_i > 0), 1 for a
// dormant one (U_i = 0). Shares are rounded down, then the channels lost to rounding go to the
// largest remainders (earlier clients first on ties); every share is clamped to [1, channels].
// A client that joined during the interval keeps its current allotment (see ChannelsForNewClient).
// Dormant clients' single channels come on top of MAX_AQP, as in the thesis.
std::vector<uint32_t> DistributeActiveChannels(std::span<const ClientUsage> clients, uint32_t max_active);

// A client that connects gets the average allotment of the functioning clients (rounded to
// nearest), or min(channels, max_active) when nobody is functioning; clamped to [1, channels].
uint32_t ChannelsForNewClient(std::span<const uint32_t> functioning_allotments, uint32_t channels,
                              uint32_t max_active);

// Which of a client's channels are active once it may have `target` of them: the active ones
// with the lowest indices stay, then the lowest inactive ones are added. Returns the new mask.
std::vector<bool> SelectActiveChannels(const std::vector<bool>& current, uint32_t target);

// --- Client: which channel each thread uses (Algorithm 1) ------------------------------------

struct ThreadLoad {
  uint32_t median_size = 0;  // median request size since the last scheduling
  uint64_t requests = 0;     // requests sent since the last scheduling
  uint64_t bytes = 0;        // request bytes sent since the last scheduling
  uint32_t current = 0;      // channel the thread uses now
};

// Algorithm 1: the threads that sent requests are sorted by median request size, then by
// request count, and handed out in that order to the active channels, moving to the next channel
// once a channel's load reaches quota = total bytes / number of active channels. Sizes and
// counts are compared by power-of-two class (so that threads doing the same work keep their
// order between intervals), ties by current channel, then input order. Threads that sent
// nothing keep their channel if it is active, else they are spread round-robin. Returns the
// channel for each thread, in input order. `active` must not be empty.
std::vector<uint32_t> AssignThreads(std::span<const ThreadLoad> threads, std::span<const uint32_t> active);

// Whether the current placement is good enough to keep: every thread that sent requests is on
// an active channel, and no active channel carries more than `tolerance` times its share of
// the bytes (total / active channels). The client's scheduler runs Algorithm 1 only when the
// active set changed or this is false, since every move makes a thread drain its responses.
bool PlacementBalanced(std::span<const ThreadLoad> threads, std::span<const uint32_t> active,
                       double tolerance);

}  // namespace rdmq::rpc
