// Equation 3.1 and Algorithm 1 on worked examples, plus properties over random inputs.
#include "rpc/scheduling.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

#include "support/test_util.h"

namespace rdmq::rpc {
namespace {

TEST_CASE("Equation 3.1: shares by utilisation, dormant clients keep one", "[rpc][sched]") {
  // MAX_AQP = 8. A reported 30, B 10, C nothing (dormant). sum U = 40:
  // A = 8 * 30/40 = 6, B = 8 * 10/40 = 2, C = 1.
  const std::vector<ClientUsage> clients = {
      {8, 30, false, 4},
      {8, 10, false, 4},
      {4, 0, false, 4},
  };
  CHECK(DistributeActiveChannels(clients, 8) == std::vector<uint32_t>{6, 2, 1});
}

TEST_CASE("Equation 3.1: rounding leftovers go to the largest remainders", "[rpc][sched]") {
  // MAX_AQP = 10, three equal clients: 3.33 each -> 3, 3, 3 and one channel left over, which
  // goes to the first of the tied remainders.
  std::vector<ClientUsage> clients(3, ClientUsage{8, 5, false, 1});
  CHECK(DistributeActiveChannels(clients, 10) == std::vector<uint32_t>{4, 3, 3});
  // U = 1, 2, 7 with MAX_AQP = 4: 0.4, 0.8, 2.8 -> floors 0, 0, 2, clamped to at least 1:
  // 1, 1, 2 = 4 assigned, nothing left to hand out.
  const std::vector<ClientUsage> skew = {{8, 1, false, 1}, {8, 2, false, 1}, {8, 7, false, 1}};
  CHECK(DistributeActiveChannels(skew, 4) == std::vector<uint32_t>{1, 1, 2});
  // U = 1, 3 with MAX_AQP = 6: 1.5, 4.5 -> 1, 4 and one left: remainders tie, first wins.
  const std::vector<ClientUsage> two = {{8, 1, false, 1}, {8, 3, false, 1}};
  CHECK(DistributeActiveChannels(two, 6) == std::vector<uint32_t>{2, 4});
}

TEST_CASE("Equation 3.1: a client never gets more channels than it has", "[rpc][sched]") {
  // A owns only 2 channels; its share of 8 would be 6. Equation 3.1 does not hand the unused
  // part of a clamped share to others: B keeps its own share, 8 * 10/40 = 2.
  const std::vector<ClientUsage> clients = {{2, 30, false, 2}, {8, 10, false, 2}};
  CHECK(DistributeActiveChannels(clients, 8) == std::vector<uint32_t>{2, 2});
}

TEST_CASE("new clients get the average of the functioning ones and keep it for the interval",
          "[rpc][sched]") {
  const std::vector<uint32_t> functioning = {6, 2, 3};
  CHECK(ChannelsForNewClient(functioning, 8, 256) == 4);  // 11/3 = 3.67 -> 4
  CHECK(ChannelsForNewClient(functioning, 2, 256) == 2);  // clamped to its channels
  CHECK(ChannelsForNewClient({}, 4, 256) == 4);           // nobody functioning: all it has
  CHECK(ChannelsForNewClient({}, 300, 256) == 256);       // ... up to MAX_AQP
  const std::vector<ClientUsage> clients = {{8, 10, false, 4}, {8, 0, true, 4}};
  CHECK(DistributeActiveChannels(clients, 8) == std::vector<uint32_t>{8, 4});
}

TEST_CASE("active channel selection keeps the active ones with the lowest indices", "[rpc][sched]") {
  const std::vector<bool> cur = {false, true, true, false, true};
  CHECK(SelectActiveChannels(cur, 2) == std::vector<bool>{false, true, true, false, false});
  CHECK(SelectActiveChannels(cur, 4) == std::vector<bool>{true, true, true, false, true});
  CHECK(SelectActiveChannels(cur, 9) == std::vector<bool>{true, true, true, true, true});
  CHECK(SelectActiveChannels(cur, 0) == std::vector<bool>{false, false, false, false, false});
}

TEST_CASE("Equation 3.1 properties over random inputs", "[rpc][sched]") {
  std::mt19937_64 rng(test::TestSeed());
  for (int t = 0; t < test::Trials(2000, 200); ++t) {
    std::vector<ClientUsage> cs(1 + rng() % 20);
    for (auto& c : cs) {
      c.channels = 1 + rng() % 16;
      c.utilization = rng() % 4 == 0 ? 0 : rng() % 10000;
    }
    const uint32_t max_aqp = 1 + rng() % 64;
    const auto out = DistributeActiveChannels(cs, max_aqp);
    uint64_t functioning_sum = 0, total_u = 0, raised = 0;
    for (const auto& c : cs) total_u += c.utilization;
    for (const auto& c : cs) {
      if (c.utilization > 0 && max_aqp * c.utilization / total_u == 0) ++raised;
    }
    for (size_t i = 0; i < cs.size(); ++i) {
      REQUIRE(out[i] >= 1);
      REQUIRE(out[i] <= cs[i].channels);
      if (cs[i].utilization == 0) {
        REQUIRE(out[i] == 1);
      } else {
        functioning_sum += out[i];
      }
    }
    // The functioning clients share MAX_AQP; only the floor of one channel each can add more.
    REQUIRE(functioning_sum <= max_aqp + raised);
    // More utilisation never means fewer channels, for clients with room to grow.
    for (size_t i = 0; i < cs.size(); ++i) {
      for (size_t j = 0; j < cs.size(); ++j) {
        if (cs[i].utilization > cs[j].utilization && cs[i].channels >= cs[j].channels + 1 &&
            cs[j].utilization > 0) {
          REQUIRE(out[i] + 1 >= out[j]);
        }
      }
    }
  }
}

TEST_CASE("Algorithm 1: worked example", "[rpc][sched]") {
  // Two active channels (3 and 5). Loads since the last scheduling:
  //   T0: median 64 B,   100 requests,  6400 B
  //   T1: median 64 B,    50 requests,  3200 B
  //   T2: median 4096 B,  10 requests, 40960 B
  //   T3: median 8192 B,   5 requests, 40960 B
  // total 91520 B, quota 45760 B. Sorted: T1, T0, T2, T3.
  //   T1 -> ch 3 (load 3200), T0 -> ch 3 (9600), T2 -> ch 3 (50560 >= quota: next channel),
  //   T3 -> ch 5.
  const std::vector<ThreadLoad> threads = {
      {64, 100, 6400, 3},
      {64, 50, 3200, 5},
      {4096, 10, 40960, 5},
      {8192, 5, 40960, 3},
  };
  const std::vector<uint32_t> active = {3, 5};
  CHECK(AssignThreads(threads, active) == std::vector<uint32_t>{3, 3, 3, 5});
}

TEST_CASE("Algorithm 1: channels fill in request-size order up to the byte quota", "[rpc][sched]") {
  // Four 64-byte threads and two 8 KiB threads (listed first) over three channels.
  std::vector<ThreadLoad> threads;
  threads.push_back({8192, 100, 819200, 0});
  threads.push_back({8192, 100, 819200, 0});
  for (int i = 0; i < 4; ++i) threads.push_back({64, 10000, 640000, 0});
  const std::vector<uint32_t> active = {0, 1, 2};
  // total 4198400, quota 1399466. Small ones first: 640000, 1280000, 1920000 (over quota:
  // channel 0 is full), the fourth small one opens channel 1 (640000), the first large one
  // joins it (1459200, full), the second large one gets channel 2 to itself.
  CHECK(AssignThreads(threads, active) == std::vector<uint32_t>{1, 2, 0, 0, 0, 1});
}

TEST_CASE("Algorithm 1: idle threads stay put or leave inactive channels", "[rpc][sched]") {
  const std::vector<ThreadLoad> threads = {
      {0, 0, 0, 2},  // idle on active channel 2: stays
      {0, 0, 0, 7},  // idle on inactive channel 7: round-robin
      {0, 0, 0, 9},  // idle on inactive channel 9: round-robin
      {100, 10, 1000, 7},
  };
  const std::vector<uint32_t> active = {1, 2};
  CHECK(AssignThreads(threads, active) == std::vector<uint32_t>{2, 1, 2, 1});
  // Every thread lands on an active channel, whatever the input.
  std::mt19937_64 rng(test::TestSeed());
  for (int t = 0; t < test::Trials(1000, 100); ++t) {
    std::vector<ThreadLoad> ts(1 + rng() % 40);
    for (auto& th : ts) {
      th.requests = rng() % 3 == 0 ? 0 : rng() % 1000;
      th.median_size = static_cast<uint32_t>(rng() % 9000);
      th.bytes = th.requests * th.median_size;
      th.current = static_cast<uint32_t>(rng() % 8);
    }
    std::vector<uint32_t> act;
    for (uint32_t c = 0; c < 8; ++c) {
      if (rng() % 2) act.push_back(c);
    }
    if (act.empty()) act.push_back(static_cast<uint32_t>(rng() % 8));
    const auto out = AssignThreads(ts, act);
    REQUIRE(out.size() == ts.size());
    for (uint32_t c : out) REQUIRE(std::find(act.begin(), act.end(), c) != act.end());
  }
}

TEST_CASE("placement balance decides whether Algorithm 1 runs again", "[rpc][sched]") {
  const std::vector<uint32_t> active = {0, 1};
  // 4 equal threads, 2 per channel: balanced.
  std::vector<ThreadLoad> t = {{64, 10, 640, 0}, {64, 10, 640, 0}, {64, 10, 640, 1}, {64, 10, 640, 1}};
  CHECK(PlacementBalanced(t, active, 1.5));
  // 3 on one channel: 1920 of 2560 bytes = 1.5 times the share of 1280: still within 1.5.
  t[2].current = 0;
  CHECK(PlacementBalanced(t, active, 1.5));
  // All on one channel: twice its share.
  t[3].current = 0;
  CHECK_FALSE(PlacementBalanced(t, active, 1.5));
  // A busy thread on an inactive channel always triggers a new placement.
  t = {{64, 10, 640, 0}, {64, 10, 640, 7}};
  CHECK_FALSE(PlacementBalanced(t, active, 1.5));
  // Idle threads do not count.
  t = {{64, 10, 640, 0}, {64, 10, 640, 1}, {0, 0, 0, 7}};
  CHECK(PlacementBalanced(t, active, 1.5));
}

}  // namespace
}  // namespace rdmq::rpc
