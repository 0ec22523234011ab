// Rebalances driven through simulated clients: cooperative revokes only what moves, eager
// revokes everything first, and no partition is ever owned by two clients (Sim checks that after
// every heartbeat).
#include <catch2/catch.hpp>
#include <random>

#include "rdmq/group/group.h"
#include "sim.h"
#include "support/test_util.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::Client;
using test::PartSet;
using test::Sim;

int TotalRevoked(Sim& sim, std::initializer_list<const char*> names) {
  int n = 0;
  for (const char* name : names) n += sim[name].revoked;
  return n;
}

TEST_CASE("cooperative-sticky: a member added or removed revokes only what moves", "[group][rebalance]") {
  const int delay = GENERATE(0, 2);  // 2: clients hold revoked partitions two more heartbeats
  INFO("revoke delay " << delay);
  Sim sim({{"t", 12}});
  for (const char* name : {"a", "b", "c"}) sim.Add(name, {"t"}, "cooperative-sticky").revoke_delay = delay;
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  std::map<std::string, PartSet> before;
  for (const char* name : {"a", "b", "c"}) {
    CHECK(sim[name].owned.size() == 4);
    before[name] = sim[name].owned;
    sim[name].revoked = 0;
  }

  // d joins: each of a, b, c gives up exactly one partition and keeps the rest.
  sim.Add("d", {"t"}, "cooperative-sticky").revoke_delay = delay;
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  for (const char* name : {"a", "b", "c"}) {
    INFO(name);
    CHECK(sim[name].revoked == 1);
    CHECK(sim[name].owned.size() == 3);
    CHECK(std::includes(before[name].begin(), before[name].end(), sim[name].owned.begin(),
                        sim[name].owned.end()));
  }
  CHECK(sim["d"].owned.size() == 3);
  CHECK(sim["d"].revoked == 0);

  // b leaves: only its three partitions move; nobody else revokes anything.
  for (const char* name : {"a", "c", "d"}) {
    before[name] = sim[name].owned;
    sim[name].revoked = 0;
  }
  REQUIRE(sim.Leave("b").ok());
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  CHECK(TotalRevoked(sim, {"a", "c", "d"}) == 0);
  for (const char* name : {"a", "c", "d"}) {
    INFO(name);
    CHECK(sim[name].owned.size() == 4);
    CHECK(std::includes(sim[name].owned.begin(), sim[name].owned.end(), before[name].begin(),
                        before[name].end()));
  }
}

TEST_CASE("cooperative-sticky: a partition goes to its new member only after the old one released it",
          "[group][rebalance]") {
  Sim sim({{"t", 2}});
  sim.Add("a", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  sim["a"].revoke_delay = 2;  // holds a revoked partition through two more heartbeats
  sim.Add("b", {"t"});
  const int32_t epoch_before = sim["a"].epoch;
  sim.Beat("b");  // b is at the new epoch but gets nothing: a still holds both
  CHECK(sim["b"].epoch == epoch_before + 1);
  CHECK(sim["b"].owned.empty());
  CHECK(sim.group().Describe().state == GroupState::kReconciling);
  sim.Beat("a");  // a is told to revoke one; it keeps holding it (slow revocation)
  CHECK(sim["a"].last.assignment.size() == 1);
  CHECK(sim["a"].epoch == epoch_before);  // not at the group epoch until it revoked
  for (int i = 0; i < 2; ++i) {
    sim.Beat("b");
    CHECK(sim["b"].owned.empty());
    sim.Beat("a");
  }
  // a has let go now; its next heartbeat reports that, and b's next one gets the partition.
  CHECK(sim["a"].owned.size() == 1);
  sim.Beat("a");
  CHECK(sim["a"].epoch == epoch_before + 1);
  sim.Beat("b");
  CHECK(sim["b"].owned.size() == 1);
  REQUIRE(sim.RunUntilStable() > 0);
}

TEST_CASE("cooperative-sticky: a partition being revoked that the next target gives back is kept",
          "[group][rebalance]") {
  Sim sim({{"t", 4}});
  sim.Add("a", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  sim["a"].revoke_delay = 3;
  sim.Add("b", {"t"});
  sim.Beat("b");
  sim.Beat("a");  // told to revoke two, still holding them
  CHECK(sim["a"].last.assignment.size() == 2);
  REQUIRE(sim.Leave("b").ok());
  sim.Beat("a");  // the new target is all four again, and a still holds them
  CHECK(sim["a"].last.assignment.size() == 4);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim["a"].revoked == 0);
  CHECK(sim["a"].owned.size() == 4);
}

TEST_CASE("eager assignors revoke everything first, then hand out the new target", "[group][rebalance]") {
  auto assignor = GENERATE(as<std::string>{}, "range", "roundrobin");
  INFO(assignor);
  Sim sim({{"t", 6}, {"u", 3}});
  for (const char* name : {"a", "b", "c"}) sim.Add(name, {"t", "u"}, assignor);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t", "u"}));
  std::map<std::string, size_t> held;
  for (const char* name : {"a", "b", "c"}) {
    held[name] = sim[name].owned.size();
    sim[name].revoked = 0;
    sim[name].gained = 0;
  }

  // c revokes slowly: the others must not be handed anything while c still holds partitions.
  sim["c"].revoke_delay = 2;
  // From d's join on, no client may gain a partition before every client has held nothing.
  bool all_revoked = false;
  bool gained_early = false;
  sim.observer = [&](const Client& c) {
    (void)c;
    size_t owned = 0;
    for (const char* name : {"a", "b", "c", "d"}) owned += sim[name].owned.size();
    if (owned == 0) all_revoked = true;
    if (!all_revoked && owned > 0) {
      for (const char* name : {"a", "b", "c", "d"}) gained_early |= sim[name].gained > 0;
    }
  };
  sim.Add("d", {"t", "u"}, assignor);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(all_revoked);
  CHECK_FALSE(gained_early);
  CHECK(sim.OwnedExactlyOnce({"t", "u"}));
  for (const char* name : {"a", "b", "c"}) {
    INFO(name);
    CHECK(sim[name].revoked == static_cast<int>(held[name]));  // everything, even what it gets back
  }
}

TEST_CASE("eager: a member that leaves mid-rebalance does not block the others", "[group][rebalance]") {
  Sim sim({{"t", 6}});
  for (const char* name : {"a", "b", "c"}) sim.Add(name, {"t"}, "range");
  REQUIRE(sim.RunUntilStable() > 0);
  sim["c"].revoke_delay = 1000;
  sim.Add("d", {"t"}, "range");
  sim.Round();
  sim.Round();
  CHECK(sim.group().Describe().state == GroupState::kReconciling);
  CHECK(sim["a"].owned.empty());  // waiting for c
  REQUIRE(sim.Leave("c").ok());
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  for (const char* name : {"a", "b", "d"}) CHECK(sim[name].owned.size() == 2);
}

TEST_CASE("random joins, leaves, crashes and topic changes never give a partition to two members",
          "[group][rebalance]") {
  const uint64_t seed = rdmq::test::TestSeed();
  INFO("RDMQ_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (const char* assignor : {"range", "roundrobin", "cooperative-sticky"}) {
    INFO(assignor);
    Sim sim({{"t", 8}, {"u", 3}});
    std::vector<std::string> names;
    for (int i = 0; i < 6; ++i) {
      names.push_back("m" + std::to_string(i));
      Client& c =
          sim.Add(names.back(),
                  i % 2 == 0 ? std::vector<std::string>{"t"} : std::vector<std::string>{"t", "u"}, assignor);
      c.revoke_delay = static_cast<int>(rng() % 3);
      c.alive = false;
    }
    for (int step = 0; step < rdmq::test::Trials(200, 40); ++step) {
      const std::string& name = names[rng() % names.size()];
      switch (rng() % 8) {
        case 0:
          if (sim[name].alive) (void)sim.Leave(name);
          break;
        case 1:
          if (sim[name].alive) sim.Kill(name);
          break;
        case 2:
          sim.topics()["u"] = std::min(sim.topics()["u"] + 1, 12);
          break;
        default:
          sim.Beat(name);  // joins a stopped client
          break;
      }
      sim.Round(500ms);  // Sim checks exclusive ownership after every heartbeat
    }
    for (const std::string& name : names) {
      if (!sim[name].alive) sim.Beat(name);
    }
    REQUIRE(sim.RunUntilStable(100) > 0);
    CHECK(sim.OwnedExactlyOnce({"t", "u"}));
  }
}

}  // namespace
}  // namespace rdmq::group
