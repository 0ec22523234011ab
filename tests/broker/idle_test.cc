// An idle broker stays asleep: with nothing sent, its commit poller wakes once per 10 ms wait
// slice and never spins (it spins only after real completions). Counts, not timings: the bound
// is the number of slices that fit in the time measured, plus a margin.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "inproc_broker.h"
#include "rdmq/broker/broker.h"
#include "support/test_util.h"

namespace rdmq::broker {
namespace {

using namespace std::chrono_literals;

TEST_CASE("an idle broker's commit poller sleeps: one wake per wait slice, no spinning", "[broker][idle]") {
  rdmq::test::TempDir dir("rdmq-idle");
  auto b = Broker::Start(test::TestConfig(dir));
  REQUIRE_OK(b);
  Broker& broker = **b;
  std::this_thread::sleep_for(100ms);  // past start-up
  const Broker::Stats before = broker.stats();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1500ms);
  const Broker::Stats after = broker.stats();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  const uint64_t slices = static_cast<uint64_t>(elapsed / 10ms);
  const uint64_t wakeups = after.poller_wakeups - before.poller_wakeups;
  INFO("wake-ups " << wakeups << " in " << slices << " slices of 10 ms");
  CHECK(wakeups <= slices + 10);
  CHECK(after.poller_spins == before.poller_spins);
  CHECK(after.poller_spins == 0);  // nothing was ever sent to this broker
  CHECK(after.commits == 0);
  REQUIRE_OK(broker.Shutdown());
}

}  // namespace
}  // namespace rdmq::broker
