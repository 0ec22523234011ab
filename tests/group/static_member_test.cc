// Static membership: a restarted member takes its old place (same epoch, same assignment, no
// rebalance); -2 keeps the place until the session timeout; -1 gives it up at once.
#include <catch2/catch.hpp>

#include "rdmq/group/group.h"
#include "sim.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::PartSet;
using test::Sim;

Sim StableStaticGroup(const std::string& assignor) {
  Sim sim({{"t", 6}});
  sim.Add("a", {"t"}, assignor, "inst-a");
  sim.Add("b", {"t"}, assignor, "inst-b");
  sim.Add("c", {"t"}, assignor);
  REQUIRE(sim.RunUntilStable() > 0);
  return sim;
}

TEST_CASE("a restarted static member gets its assignment back with no rebalance", "[group][static]") {
  auto assignor = GENERATE(as<std::string>{}, "range", "cooperative-sticky");
  INFO(assignor);
  Sim sim = StableStaticGroup(assignor);
  const int32_t epoch = sim.group().group_epoch();
  const std::string old_id = sim["a"].member_id;
  const PartSet assignment = sim["a"].owned;
  const int32_t member_epoch = sim["a"].epoch;

  // The process dies and a new one starts: no member id, epoch 0, same instance id.
  sim.Kill("a");
  sim["a"].member_id.clear();
  sim["a"].epoch = 0;
  auto r = sim.Beat("a");
  REQUIRE(r.ok());
  CHECK(r.member_id != old_id);
  CHECK(r.member_epoch == member_epoch);
  CHECK(PartSet(r.assignment.begin(), r.assignment.end()) == assignment);
  CHECK(sim.group().group_epoch() == epoch);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.group().group_epoch() == epoch);
  CHECK(sim.OwnedExactlyOnce({"t"}));

  // The old incarnation is fenced: its id is unknown now, for heartbeats and commits alike.
  HeartbeatRequest zombie;
  zombie.member_id = old_id;
  zombie.instance_id = "inst-a";
  zombie.member_epoch = member_epoch;
  zombie.topics = {"t"};
  CHECK(sim.group().Heartbeat(zombie, sim.now(), sim.topics()).status.is(GroupErrc::kUnknownMemberId));
  CHECK(sim.group().CheckCommit(old_id, member_epoch).is(GroupErrc::kUnknownMemberId));
  CHECK(sim.group().CheckCommit(r.member_id, member_epoch).ok());
}

TEST_CASE("a static member leaving with -2 keeps its partitions until its session timeout",
          "[group][static]") {
  Sim sim = StableStaticGroup("cooperative-sticky");
  const int32_t epoch = sim.group().group_epoch();
  const PartSet assignment = sim["b"].owned;
  auto r = sim.Leave("b", kStaticLeaveEpoch);
  REQUIRE(r.ok());
  CHECK(r.member_epoch == kStaticLeaveEpoch);
  for (int i = 0; i < 20; ++i) sim.Round(100ms);  // 2 s, under the 3 s session timeout
  CHECK(sim.group().group_epoch() == epoch);
  auto d = sim.group().Describe();
  REQUIRE(d.members.size() == 3);
  bool left = false;
  for (const auto& m : d.members) left |= m.left_temporarily;
  CHECK(left);

  // Back within the timeout: same place, same partitions.
  sim["b"].member_id.clear();
  sim["b"].epoch = 0;
  r = sim.Beat("b");
  REQUIRE(r.ok());
  CHECK(PartSet(r.assignment.begin(), r.assignment.end()) == assignment);
  CHECK(sim.group().group_epoch() == epoch);

  // Gone past the timeout: removed, and its partitions move to the others.
  REQUIRE(sim.RunUntilStable() > 0);
  REQUIRE(sim.Leave("b", kStaticLeaveEpoch).ok());
  for (int i = 0; i < 31; ++i) sim.Round(100ms);
  CHECK(sim.group().group_epoch() == epoch + 1);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  CHECK(sim.group().Describe().members.size() == 2);
}

TEST_CASE("a static member leaving with -1 is removed at once", "[group][static]") {
  Sim sim = StableStaticGroup("range");
  const int32_t epoch = sim.group().group_epoch();
  REQUIRE(sim.Leave("a", kLeaveEpoch).ok());
  CHECK(sim.group().group_epoch() == epoch + 1);
  CHECK(sim.group().Describe().members.size() == 2);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
}

TEST_CASE("a static member replacing a live one takes over its place too", "[group][static]") {
  Sim sim = StableStaticGroup("cooperative-sticky");
  const int32_t epoch = sim.group().group_epoch();
  const PartSet assignment = sim["a"].owned;
  // A second process with the same instance id (the first one is still running): the newcomer
  // takes the place; the old one learns on its next heartbeat that its id is unknown.
  // (The simulation stops counting the old process's partitions, or its exclusivity check would
  // see both: the coordinator cannot stop a zombie, it fences it.)
  const std::string old_id = sim["a"].member_id;
  sim.Kill("a");
  sim.Add("a2", {"t"}, "cooperative-sticky", "inst-a");
  auto r = sim.Beat("a2");
  REQUIRE(r.ok());
  CHECK(r.member_id != old_id);
  CHECK(PartSet(r.assignment.begin(), r.assignment.end()) == assignment);
  CHECK(sim.group().group_epoch() == epoch);
  auto old = sim.Beat("a");
  CHECK(old.status.is(GroupErrc::kUnknownMemberId));
}

}  // namespace
}  // namespace rdmq::group
