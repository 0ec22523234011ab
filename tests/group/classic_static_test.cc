// ClassicGroup static membership (group.instance.id): a restart takes the old place without a
// rebalance and fences the old member id; a silent static member keeps its place until its
// session times out; LeaveGroup by instance id removes it at once.
#include <catch2/catch.hpp>

#include "classic_harness.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::CompleteRebalance;
using test::Harness;
using test::Member;

// b (dynamic) joins first and leads; a is static with instance id "ia".
struct StaticGroup {
  Harness h;
  Member a{"", "ia", -1, ""};
  Member b;
  std::map<std::string, std::vector<TopicPartition>> got;

  StaticGroup() {
    Token bj = h.Join(Harness::Request("b", {"t"}));
    Token aj = h.Join(Harness::Request("a", {"t"}, {"range"}, "ia"));
    got = CompleteRebalance(h, {&a, &b}, {aj, bj});
    REQUIRE(b.leader == b.id);
  }
};

TEST_CASE("classic static: a restarted member takes its place without a rebalance, the old id is fenced",
          "[group][classic][static]") {
  StaticGroup s;
  Harness& h = s.h;
  const std::string old_id = s.a.id;
  h.Advance(2s);
  Token t = h.Join(Harness::Request("a-restarted", {"t"}, {"range"}, "ia"));
  // Answered at once: same generation, a new member id, the leader unchanged, no rebalance.
  const auto& r = h.JoinAnswer(t);
  REQUIRE(r.ok());
  CHECK(r.member_id != old_id);
  CHECK(r.generation_id == 1);
  CHECK(r.leader_id == s.b.id);
  CHECK(r.members.empty());
  CHECK(h.g.state() == ClassicState::kStable);
  CHECK(h.answers.size() == 1 + 4);  // only this join got an answer (4 from forming the group)

  // The new incarnation syncs and gets the old assignment.
  Token st = h.Sync({r.member_id, "ia", 1, "consumer", "range", {}});
  REQUIRE(h.SyncAnswer(st).ok());
  CHECK(test::AssignedPartitions(h.SyncAnswer(st).assignment) == s.got[old_id]);
  CHECK_OK(h.Heartbeat(r.member_id, 1, "ia"));
  CHECK_OK(h.Heartbeat(s.b.id, 1));

  // The old one is fenced wherever it shows up.
  CHECK(h.Heartbeat(old_id, 1, "ia").is(ClassicErrc::kFencedInstanceId));
  CHECK(h.Heartbeat(old_id, 1).is(ClassicErrc::kUnknownMemberId));
  CHECK(h.SyncAnswer(h.Sync({old_id, "ia", 1, "", "", {}})).status.is(ClassicErrc::kFencedInstanceId));
  CHECK(h.g.CheckCommit(old_id, "ia", 1, h.now).is(ClassicErrc::kFencedInstanceId));
  auto rejoin = Harness::Request("a", {"t"}, {"range"}, "ia");
  rejoin.member_id = old_id;
  CHECK(h.JoinAnswer(h.Join(rejoin)).status.is(ClassicErrc::kFencedInstanceId));
  CHECK(h.Leave({{old_id, "ia"}}).members[0].is(ClassicErrc::kFencedInstanceId));
  CHECK(h.g.state() == ClassicState::kStable);
  CHECK(h.g.generation_id() == 1);
  auto d = h.g.Describe();
  REQUIRE(d.members.size() == 2);
  CHECK(d.leader_id == s.b.id);
}

TEST_CASE("classic static: a replaced leader is told not to assign", "[group][classic][static]") {
  const bool v9 = GENERATE(false, true);
  INFO((v9 ? "JoinGroup v9+" : "JoinGroup before v9"));
  Harness h;
  Member a{"", "ia", -1, ""};
  Member b;
  Token aj = h.Join(Harness::Request("a", {"t"}, {"range"}, "ia"));
  Token bj = h.Join(Harness::Request("b", {"t"}));
  CompleteRebalance(h, {&a, &b}, {aj, bj});
  REQUIRE(a.leader == a.id);
  auto r = Harness::Request("a2", {"t"}, {"range"}, "ia");
  r.supports_skip_assignment = v9;
  Token t = h.Join(r);
  const auto& jr = h.JoinAnswer(t);
  REQUIRE(jr.ok());
  if (v9) {
    CHECK(jr.leader_id == jr.member_id);  // it leads now, knows the members, but skips assigning
    CHECK(jr.skip_assignment);
    CHECK(jr.members.size() == 2);
  } else {
    CHECK(jr.leader_id == a.id);  // the old id: the new process does not think it leads
    CHECK_FALSE(jr.skip_assignment);
    CHECK(jr.members.empty());
  }
  CHECK(h.g.Describe().leader_id == jr.member_id);
  CHECK(h.g.state() == ClassicState::kStable);
}

TEST_CASE("classic static: a restart while the old member waits for SyncGroup fences it and rebalances",
          "[group][classic][static]") {
  Harness h;
  Member a{"", "ia", -1, ""};
  Member b;
  Token bj = h.Join(Harness::Request("b", {"t"}));
  Token aj = h.Join(Harness::Request("a", {"t"}, {"range"}, "ia"));
  test::AwaitAll(h, {aj, bj});
  const std::string old_id = h.JoinAnswer(aj).member_id;
  Token as = h.Sync({old_id, "ia", 1, "", "", {}});
  CHECK_FALSE(h.Answered(as));
  Token t = h.Join(Harness::Request("a2", {"t"}, {"range"}, "ia"));
  CHECK(h.SyncAnswer(as).status.is(ClassicErrc::kFencedInstanceId));
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  auto rb = Harness::Request("b", {"t"});
  rb.member_id = h.JoinAnswer(bj).member_id;
  Token bj2 = h.Join(rb);
  a.instance = "ia";
  CompleteRebalance(h, {&a, &b}, {t, bj2});
  CHECK(a.generation == 2);
  CHECK(a.id != old_id);
}

TEST_CASE("classic static: a silent static member keeps its place until its session times out",
          "[group][classic][static]") {
  StaticGroup s;
  Harness& h = s.h;
  // a stops (a static consumer sends no LeaveGroup); b keeps heartbeating.
  for (int i = 0; i < 3; ++i) {
    h.Advance(3s);
    CHECK_OK(h.Heartbeat(s.b.id, 1));
  }
  h.Advance(999ms);
  CHECK(h.g.state() == ClassicState::kStable);
  CHECK(h.g.member_count() == 2);
  h.Advance(1ms);  // 10 s after a's last sign of life
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  CHECK(h.g.member_count() == 1);
  // The instance id is free again: a join with it is a new member.
  Token t = h.Join(Harness::Request("a", {"t"}, {"range"}, "ia"));
  CHECK_FALSE(h.Answered(t));
}

TEST_CASE("classic static: a static member that misses a rebalance stays in the group",
          "[group][classic][static]") {
  StaticGroup s;
  Harness& h = s.h;
  const TimePoint start = h.now;
  Token c = h.Join(Harness::Request("c", {"t"}));
  auto rb = Harness::Request("b", {"t"});
  rb.member_id = s.b.id;
  Token bj = h.Join(rb);
  // a heartbeats but does not rejoin. A dynamic member would be dropped when the rebalance
  // timeout ends the join phase; a static member keeps its place (and its metadata).
  while (!h.Answered(bj)) {
    h.Advance(5s);
    if (!h.Answered(bj)) CHECK(h.Heartbeat(s.a.id, 1, "ia").is(ClassicErrc::kRebalanceInProgress));
  }
  CHECK(h.now - start == 30s);
  REQUIRE(h.Answered(c));
  CHECK(h.JoinAnswer(bj).members.size() == 3);
  CHECK(h.g.member_count() == 3);
  CHECK(h.Heartbeat(s.a.id, 1, "ia").is(ClassicErrc::kIllegalGeneration));
  CHECK_OK(h.Heartbeat(s.a.id, 2, "ia"));
}

TEST_CASE("classic static: LeaveGroup by instance id removes the member at once",
          "[group][classic][static]") {
  StaticGroup s;
  Harness& h = s.h;
  auto out = h.Leave({{"", "ia"}, {"", "nobody"}, {"", ""}});
  REQUIRE(out.members.size() == 3);
  CHECK_OK(out.status);
  CHECK_OK(out.members[0]);
  CHECK(out.members[1].is(ClassicErrc::kUnknownMemberId));
  CHECK(out.members[2].is(ClassicErrc::kUnknownMemberId));
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  CHECK(h.g.member_count() == 1);
  CHECK(h.Heartbeat(s.a.id, 1, "ia").is(ClassicErrc::kUnknownMemberId));
}

}  // namespace
}  // namespace rdmq::group
