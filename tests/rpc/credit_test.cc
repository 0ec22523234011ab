// Credits fed by hand: renewal at half, grant and refusal, and a simulated channel in which an
// exhausted sender blocks and never overflows the ring.
#include "rpc/credit.h"

#include <catch2/catch.hpp>
#include <deque>
#include <random>

#include "rpc/ring.h"
#include "support/test_util.h"

namespace rdmq::rpc {
namespace {

TEST_CASE("median of a sample window", "[rpc][credit]") {
  SampleWindow w;
  CHECK(w.MedianX16() == 0);
  w.Add(3);
  CHECK(w.MedianX16() == 48);
  w.Add(1);
  CHECK(w.MedianX16() == 32);  // (1 + 3) / 2
  w.Add(10);
  CHECK(w.Median() == 3);
  w.Add(4);
  CHECK(w.MedianX16() == 56);  // (3 + 4) / 2 = 3.5
  // Only the latest 64 samples count.
  for (int i = 0; i < 64; ++i) w.Add(7);
  CHECK(w.size() == 64);
  CHECK(w.Median() == 7);
}

TEST_CASE("the sender asks for renewal at half and the grant adds C", "[rpc][credit]") {
  CreditSender s(32);
  CHECK(s.available() == 32);
  // Three messages of degree 4, 6 and 6 leave 16: renewal is due, with median degree 6.
  CHECK(s.Take(4) == 4);
  CHECK_FALSE(s.MaybeRenew());
  CHECK(s.Take(6) == 6);
  CHECK_FALSE(s.MaybeRenew());
  CHECK(s.Take(6) == 6);
  auto r = s.MaybeRenew();
  REQUIRE(r);
  CHECK(r->seq == 1);
  CHECK(r->degree_x16 == 6 * 16);
  CHECK(s.renewal_pending());
  // Only one renewal in flight.
  CHECK(s.Take(1) == 1);
  CHECK_FALSE(s.MaybeRenew());
  // A response that does not answer the renewal keeps it pending.
  s.OnServerState(32, true, false, 0);
  CHECK(s.renewal_pending());
  // The answer: limit 64.
  s.OnServerState(64, true, true, 1);
  CHECK_FALSE(s.renewal_pending());
  CHECK(s.available() == 64 - 17);
  CHECK(s.limit() == 64);
  // An older limit arriving later never shrinks it.
  s.OnServerState(32, true, false, 0);
  CHECK(s.limit() == 64);
}

TEST_CASE("exhausted credits block the sender, refusal deactivates the channel", "[rpc][credit]") {
  CreditSender s(8);
  CHECK(s.Take(100) == 8);
  CHECK(s.available() == 0);
  CHECK(s.Take(1) == 0);
  auto r = s.MaybeRenew();
  REQUIRE(r);
  CHECK(r->degree_x16 == 8 * 16);
  // Refused: inactive, nothing available even if the limit were higher.
  s.OnServerState(8, false, true, r->seq);
  CHECK_FALSE(s.active());
  CHECK_FALSE(s.renewal_pending());
  CHECK(s.Take(1) == 0);
  CHECK_FALSE(s.MaybeRenew());
  // Reactivated by the server's scheduler with a fresh window.
  s.OnServerState(16, true, false, 0);
  CHECK(s.active());
  CHECK(s.available() == 8);
}

TEST_CASE("the granter grants while active, refuses while not, and enforces the limit", "[rpc][credit]") {
  CreditGranter g(32, true);
  CHECK(g.OnRequests(20));
  auto d = g.OnRenewal(1, 3 * 16);
  CHECK(d.granted);
  CHECK(d.limit == 64);
  CHECK(d.seq == 1);
  CHECK(g.OnRequests(44));
  CHECK_FALSE(g.OnRequests(1));  // 65 > 64: a credit violation, nothing changes
  CHECK(g.consumed() == 64);
  g.SetActive(false);
  auto refused = g.OnRenewal(2, 16);
  CHECK_FALSE(refused.granted);
  CHECK(refused.limit == 64);
  auto u = g.TakeUsage();
  CHECK(u.utilization_x16 == 4 * 16);
  CHECK(u.requests == 64);
  CHECK(g.TakeUsage().utilization_x16 == 0);
  // Reactivation opens C beyond what was consumed.
  g.SetActive(true);
  CHECK(g.limit() == 96);
  // Every granted renewal adds exactly C, however far consumption lags.
  auto again = g.OnRenewal(3, 16);
  CHECK(again.granted);
  CHECK(again.limit == 128);
}

// A whole channel, simulated step by step: a sender that coalesces random batches under credits
// and ring space, a server that consumes and grants lazily (or stops altogether).
TEST_CASE("simulated channel: the sender blocks on credits and never overflows the ring", "[rpc][credit]") {
  std::mt19937_64 rng(test::TestSeed());
  const uint64_t cap = 16384;
  for (int trial = 0; trial < test::Trials(50, 5); ++trial) {
    CreditSender sender(32);
    CreditGranter granter(32, true);
    RingProducer prod(cap);
    uint64_t server_head = 0;
    std::deque<std::pair<uint64_t, uint32_t>> ring;  // (end position, requests) not yet consumed
    std::deque<Renewal> renewals;                    // imms in flight
    bool server_stalled = false;
    uint64_t blocked_on_credit = 0, blocked_on_ring = 0;
    for (int step = 0; step < 5000; ++step) {
      if (step == 4000) server_stalled = true;  // the server stops consuming and granting
      switch (rng() % 3) {
        case 0: {  // the leader builds a message of up to 16 requests of random sizes
          const uint32_t want = 1 + rng() % 16;
          const uint32_t n = sender.Take(want);
          if (n == 0) {
            ++blocked_on_credit;
            break;
          }
          uint64_t bytes = 0;
          for (uint32_t i = 0; i < n; ++i) bytes += EntryBytes(rng() % 400);  // 16 such fit max_message
          const uint64_t len = MessageLength(bytes);
          auto pl = prod.Reserve(len);
          if (!pl) {
            // No room: READ the head and try again; if still none, the leader waits.
            REQUIRE(prod.UpdateHead(server_head));
            pl = prod.Reserve(len);
          }
          if (!pl) {
            ++blocked_on_ring;
            // The credits were taken for a message that waits: it goes out later (here: as
            // soon as there is room), so they stay taken.
            while (!pl) {
              if (server_stalled) break;
              // consume one message to make room
              REQUIRE(!ring.empty());
              REQUIRE(granter.OnRequests(ring.front().second));
              server_head = ring.front().first;
              ring.pop_front();
              REQUIRE(prod.UpdateHead(server_head));
              pl = prod.Reserve(len);
            }
            if (!pl) break;
          }
          ring.emplace_back(pl->position + len, n);
          if (auto r = sender.MaybeRenew()) renewals.push_back(*r);
          break;
        }
        case 1:  // the server consumes a message
          if (server_stalled || ring.empty()) break;
          REQUIRE(granter.OnRequests(ring.front().second));
          server_head = ring.front().first;
          ring.pop_front();
          break;
        case 2:  // the server's scheduler answers a renewal; responses carry the state back
          if (server_stalled || renewals.empty()) break;
          {
            const Renewal r = renewals.front();
            renewals.pop_front();
            const auto d = granter.OnRenewal(r.seq, r.degree_x16);
            sender.OnServerState(d.limit, granter.active(), true, d.seq);
            REQUIRE(prod.UpdateHead(server_head));
          }
          break;
      }
      // Invariants: never more requests in flight than granted, never more bytes than the ring.
      REQUIRE(sender.sent() <= sender.limit());
      REQUIRE(granter.consumed() <= granter.limit());
      REQUIRE(prod.tail() - server_head <= cap);
    }
    // Stalled: the sender has run out of credits and is blocked.
    CHECK(sender.Take(1) == 0);
    CHECK(blocked_on_credit > 0);
    INFO("blocked on ring " << blocked_on_ring);
  }
}

}  // namespace
}  // namespace rdmq::rpc
