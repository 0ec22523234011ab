// The controller's decisions without ZooKeeper: replica placement spreads leaders and followers
// evenly; Reconcile elects leaders from the ISR only (unless unclean election is on), bumps the
// leader epoch on every election, trims dead brokers from the ISR, leaves right states alone.
#include "rdmq/cluster/controller.h"

#include <catch2/catch.hpp>
#include <map>

#include "support/test_util.h"

namespace rdmq::cluster {
namespace {

TEST_CASE("placement: replicas on distinct brokers, leaders and followers spread evenly", "[cluster]") {
  auto a = AssignReplicas({3, 1, 2}, 6, 3, 0);
  REQUIRE_OK(a);
  std::map<BrokerId, int> leaders, replicas;
  for (const auto& r : *a) {
    REQUIRE(r.size() == 3);
    CHECK(std::set<BrokerId>(r.begin(), r.end()).size() == 3);
    ++leaders[r[0]];
    for (BrokerId b : r) ++replicas[b];
  }
  CHECK(leaders == std::map<BrokerId, int>{{1, 2}, {2, 2}, {3, 2}});
  CHECK(replicas == std::map<BrokerId, int>{{1, 6}, {2, 6}, {3, 6}});
  CHECK((*a)[0] == std::vector<BrokerId>{1, 2, 3});
  CHECK((*AssignReplicas({1, 2, 3}, 1, 2, 4))[0] == std::vector<BrokerId>{2, 3});  // the start rotates
  CHECK(AssignReplicas({1, 2}, 3, 3, 0).status().is(ClusterErrc::kNotEnoughBrokers));
  CHECK(AssignReplicas({1, 2}, 0, 1, 0).status().is(Errc::kInvalidArgument));
  CHECK(AssignReplicas({1, 2}, 1, 0, 0).status().is(Errc::kInvalidArgument));
}

ClusterView ViewOf(std::vector<std::vector<BrokerId>> replicas) {
  ClusterView v;
  v.topics["t"] = TopicAssignment{"t", 1, 0, {}, std::move(replicas), {}};
  return v;
}

PartitionState State(BrokerId leader, int32_t epoch, std::vector<BrokerId> isr, int32_t version = 3,
                     int32_t controller_epoch = 1) {
  return PartitionState{leader, epoch, std::move(isr), controller_epoch, version};
}

TEST_CASE("reconcile: new partitions get the first live replica as leader and the live ones in sync",
          "[cluster]") {
  const auto v = ViewOf({{1, 2, 3}, {2, 3, 1}, {2, 2 + 4, 3}});
  auto c = Reconcile(v, {1, 3}, {.controller_epoch = 5});
  REQUIRE(c.size() == 3);
  CHECK(c[0].create);
  CHECK(c[0].tp == TopicPartition{"t", 0});
  CHECK(c[0].next == State(1, 0, {1, 3}, -1, 5));
  CHECK(c[1].next == State(3, 0, {3, 1}, -1, 5));
  // Nobody alive: no leader, and every replica counts as in sync (none has written anything).
  const auto none = Reconcile(ViewOf({{1, 2}}), {}, {.controller_epoch = 5});
  REQUIRE(none.size() == 1);
  CHECK(none[0].next == State(kNoLeader, 0, {1, 2}, -1, 5));
}

TEST_CASE("reconcile: a dead leader is replaced from the ISR, the epoch goes up", "[cluster]") {
  auto v = ViewOf({{1, 2, 3}});
  v.states[{"t", 0}] = State(1, 4, {1, 2, 3}, 7);
  // Everyone alive: nothing to do.
  CHECK(Reconcile(v, {1, 2, 3}, {.controller_epoch = 2}).empty());
  // The leader dies: 2 (first live ISR member in replica order) leads at epoch 5.
  auto c = Reconcile(v, {2, 3}, {.controller_epoch = 2});
  REQUIRE(c.size() == 1);
  CHECK_FALSE(c[0].create);
  CHECK(c[0].expected_version == 7);
  CHECK(c[0].next == State(2, 5, {2, 3}, 7, 2));
  CHECK(c[0].why == "leader 1 is gone");
  // A replica out of sync is never elected, even when it is the first alive.
  v.states[{"t", 0}] = State(1, 4, {1, 3}, 7);
  c = Reconcile(v, {2, 3}, {.controller_epoch = 2});
  REQUIRE(c.size() == 1);
  CHECK(c[0].next.leader == 3);
  CHECK(c[0].next.isr == std::vector<BrokerId>{3});
}

TEST_CASE(
    "reconcile: no live in-sync replica means no leader, until one returns, unless unclean election is on",
    "[cluster]") {
  auto v = ViewOf({{1, 2, 3}});
  v.states[{"t", 0}] = State(1, 4, {1}, 7);
  auto c = Reconcile(v, {2, 3}, {.controller_epoch = 2});
  REQUIRE(c.size() == 1);
  CHECK(c[0].next == State(kNoLeader, 5, {1}, 7, 2));  // the ISR is kept: only 1 has everything
  v.states[{"t", 0}] = c[0].next;
  CHECK(Reconcile(v, {2, 3}, {.controller_epoch = 2}).empty());  // offline stays offline
  // 1 returns: it leads again, at a new epoch.
  c = Reconcile(v, {1, 2, 3}, {.controller_epoch = 3});
  REQUIRE(c.size() == 1);
  CHECK(c[0].next == State(1, 6, {1}, 7, 3));
  CHECK(c[0].why == "an in-sync replica is back");
  // Unclean: a live replica leads alone (records only 1 had may be lost).
  c = Reconcile(v, {2, 3}, {.controller_epoch = 3, .unclean_leader_election = true});
  REQUIRE(c.size() == 1);
  CHECK(c[0].next == State(2, 6, {2}, 7, 3));
  CHECK(c[0].why.find("unclean") != std::string::npos);
}

TEST_CASE("reconcile: dead followers leave the ISR at the same epoch", "[cluster]") {
  auto v = ViewOf({{1, 2, 3}});
  v.states[{"t", 0}] = State(2, 4, {2, 1, 3}, 7);
  auto c = Reconcile(v, {1, 2}, {.controller_epoch = 2});
  REQUIRE(c.size() == 1);
  CHECK(c[0].next.leader == 2);
  CHECK(c[0].next.leader_epoch == 4);
  CHECK(c[0].next.isr == std::vector<BrokerId>{2, 1});
  CHECK(c[0].next.controller_epoch == 1);  // not an election
}

TEST_CASE(
    "reassignment: the new replicas beside the old until the move completes, the target's first leading",
    "[cluster]") {
  CHECK(ReplicasWhileMoving({1, 2, 3}, {3, 4, 5}) == std::vector<BrokerId>{3, 4, 5, 1, 2});
  CHECK(ReplicasWhileMoving({1, 2}, {2, 1}) == std::vector<BrokerId>{2, 1});

  const std::set<BrokerId> live{1, 2, 3, 4};
  // Waits while a target replica is not in sync, not live, or the leader is gone.
  CHECK_FALSE(FinishReassignment({3, 4}, State(1, 5, {1, 2, 3}, 7), live, 9));
  CHECK_FALSE(FinishReassignment({3, 4}, State(1, 5, {1, 2, 3, 4}, 7), {1, 2, 3}, 9));
  CHECK_FALSE(FinishReassignment({3, 4}, State(1, 5, {1, 2, 3, 4}, 7), {2, 3, 4}, 9));
  CHECK_FALSE(FinishReassignment({3, 4}, State(kNoLeader, 5, {1, 2, 3, 4}, 7), live, 9));
  // Every target replica in sync, the leader not among them: the target's first leads, the
  // ISR is the target, the epoch goes up.
  auto moved = FinishReassignment({4, 3}, State(1, 5, {1, 2, 3, 4}, 7), live, 9);
  REQUIRE(moved);
  CHECK(moved->leader == 4);
  CHECK(moved->leader_epoch == 6);
  CHECK(moved->isr == std::vector<BrokerId>{4, 3});
  CHECK(moved->controller_epoch == 9);
  // The leader among them: it keeps leading, at a new epoch (its old followers fenced).
  auto kept = FinishReassignment({2, 3}, State(3, 5, {3, 1, 2}, 7), live, 9);
  REQUIRE(kept);
  CHECK(kept->leader == 3);
  CHECK(kept->leader_epoch == 6);
  CHECK(kept->isr == std::vector<BrokerId>{3, 2});
}

}  // namespace
}  // namespace rdmq::cluster
