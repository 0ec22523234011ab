// ClassicGroup: Kafka's classic protocol as a sans-I/O state machine. Join -> sync -> heartbeat
// cycles, rebalances triggered by joins, leaves and timeouts, MEMBER_ID_REQUIRED, protocol
// selection and Describe, all on simulated time.
#include <catch2/catch.hpp>

#include "classic_harness.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::CompleteRebalance;
using test::Harness;
using test::Member;

// A Stable group of `n` members (c0, c1, ...) formed in one initial rebalance.
std::vector<Member> Form(Harness& h, int n) {
  std::vector<Member> members(static_cast<size_t>(n));
  std::vector<Member*> ptrs;
  std::vector<Token> joins;
  for (int i = 0; i < n; ++i) {
    joins.push_back(h.Join(Harness::Request("c" + std::to_string(i), {"t"})));
    ptrs.push_back(&members[static_cast<size_t>(i)]);
  }
  CompleteRebalance(h, ptrs, joins);
  return members;
}

TEST_CASE("classic: join, sync and heartbeat with 1, 2 and 3 members", "[group][classic]") {
  const int n = GENERATE(1, 2, 3);
  INFO(n << " members");
  Harness h;
  std::vector<Member> members(static_cast<size_t>(n));
  std::vector<Token> joins;
  for (int i = 0; i < n; ++i) joins.push_back(h.Join(Harness::Request("c" + std::to_string(i), {"t"})));

  // The initial rebalance waits group.initial.rebalance.delay.ms for more members, and once
  // more when members joined during the wait.
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  const auto wait = n == 1 ? 3000ms : 6000ms;
  h.Advance(wait - 1ms);
  for (Token t : joins) CHECK_FALSE(h.Answered(t));
  h.Advance(1ms);
  for (Token t : joins) REQUIRE(h.Answered(t));
  CHECK(h.g.state() == ClassicState::kCompletingRebalance);
  CHECK(h.g.generation_id() == 1);

  std::vector<Member*> ptrs;
  for (auto& m : members) ptrs.push_back(&m);
  auto got = CompleteRebalance(h, ptrs, joins);
  for (const auto& m : members) {
    CHECK(m.generation == 1);
    CHECK(m.leader == members[0].id);  // the first to join leads
    CHECK(h.JoinAnswer(joins[0]).protocol_name == "range");
    CHECK(h.JoinAnswer(joins[0]).protocol_type == "consumer");
  }
  size_t total = 0;
  for (const auto& [id, tps] : got) total += tps.size();
  CHECK(total == 6);
  CHECK(got.size() == static_cast<size_t>(n));

  // Heartbeats keep the group as it is; a wrong generation or member id is refused.
  for (int round = 0; round < 5; ++round) {
    h.Advance(3s);
    for (const auto& m : members) CHECK_OK(h.Heartbeat(m.id, m.generation));
  }
  CHECK(h.g.state() == ClassicState::kStable);
  CHECK(h.Heartbeat(members[0].id, 0).is(ClassicErrc::kIllegalGeneration));
  CHECK(h.Heartbeat("nobody", 1).is(ClassicErrc::kUnknownMemberId));
  // A SyncGroup in a Stable group returns the member's assignment at once.
  Token again = h.Sync({members.back().id, "", 1, "", "", {}});
  REQUIRE(h.Answered(again));
  CHECK(test::AssignedPartitions(h.SyncAnswer(again).assignment) == got[members.back().id]);
  CHECK(h.g.generation_id() == 1);
}

TEST_CASE("classic: the initial delay grows while members keep joining, up to the rebalance timeout",
          "[group][classic]") {
  SECTION("extended") {
    Harness h;
    Token a = h.Join(Harness::Request("a", {"t"}));
    h.Advance(2s);
    Token b = h.Join(Harness::Request("b", {"t"}));
    h.Advance(1s);  // 3 s: b joined meanwhile, so the delay starts again
    CHECK_FALSE(h.Answered(a));
    h.Advance(2s);
    Token c = h.Join(Harness::Request("c", {"t"}));
    h.Advance(1s);  // 6 s: c joined meanwhile
    CHECK_FALSE(h.Answered(a));
    h.Advance(3s);  // 9 s: nobody new
    for (Token t : {a, b, c}) REQUIRE(h.Answered(t));
    CHECK(h.JoinAnswer(a).members.size() == 3);
  }
  SECTION("capped") {
    Harness h;
    auto req = Harness::Request("a", {"t"});
    req.rebalance_timeout = 5s;
    Token a = h.Join(req);
    h.Advance(1s);
    req.client_id = "b";
    Token b = h.Join(req);
    h.Advance(2s);  // 3 s: extended by min(3 s, 5 s - 3 s) = 2 s
    CHECK_FALSE(h.Answered(a));
    h.Advance(1s);
    req.client_id = "c";
    Token c = h.Join(req);
    h.Advance(1s);  // 5 s: the rebalance timeout is used up although c just joined
    for (Token t : {a, b, c}) REQUIRE(h.Answered(t));
  }
}

TEST_CASE("classic: a third member joining a stable group makes everyone rejoin", "[group][classic]") {
  Harness h;
  std::vector<Member> ab = Form(h, 2);
  Member c;
  Token cj = h.Join(Harness::Request("c2", {"t"}));
  CHECK_FALSE(h.Answered(cj));
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  // The others learn of the rebalance from their heartbeats, and SyncGroup is refused.
  CHECK(h.Heartbeat(ab[0].id, 1).is(ClassicErrc::kRebalanceInProgress));
  CHECK(h.Heartbeat(ab[1].id, 1).is(ClassicErrc::kRebalanceInProgress));
  Token early = h.Sync({ab[1].id, "", 1, "", "", {}});
  CHECK(h.SyncAnswer(early).status.is(ClassicErrc::kRebalanceInProgress));

  h.Advance(1s);
  Token aj = h.Join([&] {
    auto r = Harness::Request("c0", {"t"});
    r.member_id = ab[0].id;
    return r;
  }());
  CHECK_FALSE(h.Answered(aj));  // b has not rejoined yet
  auto rb = Harness::Request("c1", {"t"});
  rb.member_id = ab[1].id;
  Token bj = h.Join(rb);
  // Everyone is in: the join phase completes at once (no delay outside the initial rebalance).
  for (Token t : {aj, bj, cj}) REQUIRE(h.Answered(t));
  CHECK(h.JoinAnswer(aj).generation_id == 2);
  CHECK(h.JoinAnswer(aj).leader_id == ab[0].id);
  CHECK(h.JoinAnswer(aj).members.size() == 3);
  CHECK(h.JoinAnswer(cj).members.empty());
  auto got = CompleteRebalance(h, {&ab[0], &ab[1], &c}, {aj, bj, cj});
  CHECK(got.size() == 3);
  for (const auto& [id, tps] : got) CHECK(tps.size() == 2);
  CHECK(h.Heartbeat(ab[0].id, 1).is(ClassicErrc::kIllegalGeneration));
  CHECK_OK(h.Heartbeat(c.id, 2));
}

TEST_CASE("classic: a follower rejoining a stable group unchanged gets the current generation",
          "[group][classic]") {
  Harness h;
  std::vector<Member> m = Form(h, 2);
  auto r = Harness::Request("c1", {"t"});
  r.member_id = m[1].id;
  Token t = h.Join(r);
  REQUIRE(h.Answered(t));
  CHECK(h.JoinAnswer(t).generation_id == 1);
  CHECK(h.g.state() == ClassicState::kStable);
  // With other metadata it rebalances.
  r = Harness::Request("c1", {"t", "u"});
  r.member_id = m[1].id;
  t = h.Join(r);
  CHECK_FALSE(h.Answered(t));
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
}

TEST_CASE("classic: a member that does not rejoin within the rebalance timeout is dropped",
          "[group][classic]") {
  Harness h;
  std::vector<Member> m = Form(h, 3);
  const TimePoint start = h.now;
  Member d;
  Token dj = h.Join(Harness::Request("c3", {"t"}));
  std::vector<Token> joins;
  for (int i = 0; i < 2; ++i) {
    auto r = Harness::Request("c" + std::to_string(i), {"t"});
    r.member_id = m[static_cast<size_t>(i)].id;
    joins.push_back(h.Join(r));
  }
  // m[2] keeps heartbeating (so its session does not end) but never rejoins.
  while (!h.Answered(dj)) {
    h.Advance(5s);
    if (h.Answered(dj)) break;
    CHECK(h.Heartbeat(m[2].id, 1).is(ClassicErrc::kRebalanceInProgress));
  }
  CHECK(h.now - start == 30s);  // the members' rebalance timeout
  CHECK(h.JoinAnswer(dj).generation_id == 2);
  CHECK(h.Heartbeat(m[2].id, 1).is(ClassicErrc::kUnknownMemberId));
  joins.push_back(dj);
  auto got = CompleteRebalance(h, {&m[0], &m[1], &d}, joins);
  CHECK(got.size() == 3);
  CHECK(h.g.Describe().members.size() == 3);
}

TEST_CASE("classic: a member whose session expires is removed and the rest rebalance", "[group][classic]") {
  Harness h;
  std::vector<Member> m = Form(h, 2);
  // a heartbeats every 3 s; b is silent. b's session (10 s) runs from its SyncGroup.
  for (int i = 0; i < 3; ++i) {
    h.Advance(3s);
    CHECK_OK(h.Heartbeat(m[0].id, 1));
  }
  h.Advance(999ms);
  CHECK(h.g.state() == ClassicState::kStable);
  h.Advance(1ms);
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  CHECK(h.g.member_count() == 1);
  CHECK(h.Heartbeat(m[1].id, 1).is(ClassicErrc::kUnknownMemberId));
  CHECK(h.Heartbeat(m[0].id, 1).is(ClassicErrc::kRebalanceInProgress));
  auto r = Harness::Request("c0", {"t"});
  r.member_id = m[0].id;
  Token t = h.Join(r);
  auto got = CompleteRebalance(h, {&m[0]}, {t});
  CHECK(got[m[0].id].size() == 6);
  CHECK(m[0].generation == 2);
}

TEST_CASE("classic: the leader leaving hands leadership to a member that rejoins", "[group][classic]") {
  Harness h;
  std::vector<Member> m = Form(h, 3);
  REQUIRE(m[0].leader == m[0].id);
  auto left = h.Leave({{m[0].id, ""}});
  REQUIRE(left.members.size() == 1);
  CHECK_OK(left.members[0]);
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  std::vector<Token> joins;
  for (int i = 1; i < 3; ++i) {
    auto r = Harness::Request("c" + std::to_string(i), {"t"});
    r.member_id = m[static_cast<size_t>(i)].id;
    joins.push_back(h.Join(r));
  }
  auto got = CompleteRebalance(h, {&m[1], &m[2]}, joins);
  CHECK(m[1].leader != m[0].id);
  CHECK((m[1].leader == m[1].id || m[1].leader == m[2].id));
  CHECK(got[m[1].id].size() + got[m[2].id].size() == 6);
  // Leaving again is an unknown member.
  CHECK(h.Leave({{m[0].id, ""}}).members[0].is(ClassicErrc::kUnknownMemberId));
}

TEST_CASE("classic: the leader leaving while followers wait for SyncGroup sends them back to JoinGroup",
          "[group][classic]") {
  Harness h;
  std::vector<Member> m = Form(h, 2);
  auto r = Harness::Request("c0", {"t", "u"});  // the leader rejoins with new metadata
  r.member_id = m[0].id;
  Token a = h.Join(r);
  r = Harness::Request("c1", {"t"});
  r.member_id = m[1].id;
  Token b = h.Join(r);
  REQUIRE(h.Answered(a));
  REQUIRE(h.Answered(b));
  Token bs = h.Sync({m[1].id, "", 2, "consumer", "range", {}});
  CHECK_FALSE(h.Answered(bs));
  CHECK_OK(h.Leave({{m[0].id, ""}}).members[0]);
  CHECK(h.SyncAnswer(bs).status.is(ClassicErrc::kRebalanceInProgress));
  r.member_id = m[1].id;
  Token b2 = h.Join(r);
  REQUIRE(h.Answered(b2));
  CHECK(h.JoinAnswer(b2).leader_id == m[1].id);
  CHECK(h.JoinAnswer(b2).generation_id == 3);
}

TEST_CASE("classic: a member that never sends SyncGroup is removed after the rebalance timeout",
          "[group][classic]") {
  Harness h;
  Token a = h.Join(Harness::Request("a", {"t"}));
  Token b = h.Join(Harness::Request("b", {"t"}));
  test::AwaitAll(h, {a, b});
  const TimePoint joined = h.now;
  const auto& ra = h.JoinAnswer(a);
  const auto& rb = h.JoinAnswer(b);
  REQUIRE(ra.leader_id == ra.member_id);
  // The leader syncs; b heartbeats (allowed between JoinGroup and SyncGroup) but never syncs.
  Token as = h.Sync({ra.member_id, "", 1, "", "", {{ra.member_id, test::AssignmentBytes({{"t", 0}})}}});
  REQUIRE(h.SyncAnswer(as).ok());
  while (h.g.state() == ClassicState::kStable) {
    h.Advance(3s);
    if (h.g.state() != ClassicState::kStable) break;
    CHECK_OK(h.Heartbeat(ra.member_id, 1));
    CHECK_OK(h.Heartbeat(rb.member_id, 1));
  }
  CHECK(h.now - joined == 30s);
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  CHECK(h.g.member_count() == 1);
  CHECK(h.Heartbeat(rb.member_id, 1).is(ClassicErrc::kUnknownMemberId));
}

TEST_CASE("classic: MEMBER_ID_REQUIRED, then the rejoin with the given id", "[group][classic]") {
  Harness h;
  auto r = Harness::Request("a", {"t"});
  r.require_known_member_id = true;
  Token t = h.Join(r);
  const auto& first = h.JoinAnswer(t);
  REQUIRE(first.status.is(ClassicErrc::kMemberIdRequired));
  REQUIRE_FALSE(first.member_id.empty());
  CHECK(h.g.state() == ClassicState::kEmpty);
  CHECK(h.g.Describe().pending_members == 1);
  CHECK_FALSE(h.g.empty());
  // The pending id is no member yet.
  CHECK(h.Heartbeat(first.member_id, 0).is(ClassicErrc::kUnknownMemberId));
  r.member_id = first.member_id;
  Token t2 = h.Join(r);
  Member a;
  CompleteRebalance(h, {&a}, {t2});
  CHECK(a.id == first.member_id);
  CHECK(h.g.Describe().pending_members == 0);
}

TEST_CASE("classic: a pending member holds the join phase until it rejoins or its session ends",
          "[group][classic]") {
  const bool returns = GENERATE(true, false);
  INFO((returns ? "the pending member rejoins" : "the pending member never comes back"));
  Harness h;
  std::vector<Member> m = Form(h, 1);
  auto pr = Harness::Request("p", {"t"});
  pr.require_known_member_id = true;
  Token pt = h.Join(pr);
  const std::string pending_id = h.JoinAnswer(pt).member_id;
  CHECK(h.g.state() == ClassicState::kStable);      // a pending member does not rebalance by itself
  Token bt = h.Join(Harness::Request("b", {"t"}));  // an old client: no MEMBER_ID_REQUIRED
  auto ar = Harness::Request("c0", {"t"});
  ar.member_id = m[0].id;
  Token at = h.Join(ar);
  CHECK_FALSE(h.Answered(at));  // everyone but the pending member is in
  if (returns) {
    h.Advance(2s);
    pr.member_id = pending_id;
    Token pt2 = h.Join(pr);
    for (Token t : {at, bt, pt2}) REQUIRE(h.Answered(t));
    CHECK(h.JoinAnswer(at).members.size() == 3);
  } else {
    h.Advance(9999ms);
    CHECK_FALSE(h.Answered(at));
    h.Advance(1ms);  // the pending member's session timeout
    for (Token t : {at, bt}) REQUIRE(h.Answered(t));
    CHECK(h.JoinAnswer(at).members.size() == 2);
    CHECK(h.g.Describe().pending_members == 0);
  }
}

TEST_CASE("classic: protocols must match the group's, the most voted common protocol wins",
          "[group][classic]") {
  Harness h;
  Token a = h.Join(Harness::Request("a", {"t"}, {"range", "roundrobin"}));
  auto other_type = Harness::Request("b", {"t"});
  other_type.protocol_type = "connect";
  CHECK(h.JoinAnswer(h.Join(other_type)).status.is(ClassicErrc::kInconsistentGroupProtocol));
  CHECK(h.JoinAnswer(h.Join(Harness::Request("b", {"t"}, {"cooperative-sticky"})))
            .status.is(ClassicErrc::kInconsistentGroupProtocol));
  auto none = Harness::Request("b", {"t"});
  none.protocols.clear();
  CHECK(h.JoinAnswer(h.Join(none)).status.is(ClassicErrc::kInconsistentGroupProtocol));
  Token b = h.Join(Harness::Request("b", {"t"}, {"roundrobin", "range"}));
  Token c = h.Join(Harness::Request("c", {"t"}, {"cooperative-sticky", "roundrobin", "range"}));
  test::AwaitAll(h, {a, b, c});
  // a votes range, b and c roundrobin.
  CHECK(h.JoinAnswer(a).protocol_name == "roundrobin");
  CHECK(h.JoinAnswer(c).protocol_name == "roundrobin");
  // Only the protocols all members share count: cooperative-sticky is c's alone.
  auto d = h.g.Describe();
  CHECK(d.protocol_name == "roundrobin");
  // A SyncGroup naming another protocol is refused.
  Token s = h.Sync({h.JoinAnswer(b).member_id, "", 1, "consumer", "range", {}});
  CHECK(h.SyncAnswer(s).status.is(ClassicErrc::kInconsistentGroupProtocol));
}

TEST_CASE("classic: session timeouts outside the broker's bounds are refused", "[group][classic]") {
  Harness h;
  auto r = Harness::Request("a", {"t"});
  r.session_timeout = 999ms;
  CHECK(h.JoinAnswer(h.Join(r)).status.is(ClassicErrc::kInvalidSessionTimeout));
  r.session_timeout = 60001ms;
  CHECK(h.JoinAnswer(h.Join(r)).status.is(ClassicErrc::kInvalidSessionTimeout));
  CHECK(h.g.empty());
}

TEST_CASE("classic: group.max.size refuses members beyond it", "[group][classic]") {
  auto cfg = Harness::DefaultConfig();
  cfg.max_size = 2;
  Harness h(cfg);
  std::vector<Member> m = Form(h, 2);
  Token t = h.Join(Harness::Request("x", {"t"}));
  CHECK(h.JoinAnswer(t).status.is(ClassicErrc::kGroupMaxSizeReached));
  CHECK(h.g.state() == ClassicState::kStable);
  CHECK(h.g.member_count() == 2);
}

TEST_CASE("classic: a second JoinGroup of a member replaces the first", "[group][classic]") {
  Harness h;
  std::vector<Member> m = Form(h, 2);
  auto r = Harness::Request("c0", {"t", "u"});
  r.member_id = m[0].id;
  Token j1 = h.Join(r);
  CHECK_FALSE(h.Answered(j1));  // waits for the other member
  Token j2 = h.Join(r);
  CHECK(h.JoinAnswer(j1).status.is(ClassicErrc::kRebalanceInProgress));
  CHECK_FALSE(h.Answered(j2));
  auto rb = Harness::Request("c1", {"t"});
  rb.member_id = m[1].id;
  Token b = h.Join(rb);
  REQUIRE(h.Answered(b));
  CHECK(h.JoinAnswer(j2).ok());
  CHECK(h.JoinAnswer(j2).generation_id == 2);
}

TEST_CASE("classic: Describe shows state, protocol and each member's metadata and assignment",
          "[group][classic]") {
  Harness h;
  auto d0 = h.g.Describe();
  CHECK(d0.state == ClassicState::kEmpty);
  CHECK(ClassicStateName(d0.state) == "Empty");
  std::vector<Member> m = Form(h, 2);
  auto d = h.g.Describe();
  CHECK(d.group_id == "g");
  CHECK(ClassicStateName(d.state) == "Stable");
  CHECK(d.protocol_type == "consumer");
  CHECK(d.protocol_name == "range");
  CHECK(d.generation_id == 1);
  CHECK(d.leader_id == m[0].id);
  REQUIRE(d.members.size() == 2);
  for (const auto& md : d.members) {
    CHECK((md.client_id == "c0" || md.client_id == "c1"));
    CHECK(md.client_host == "/10.0.0.1");
    CHECK(md.protocols == std::vector<std::string>{"range"});
    auto sub = ParseConsumerSubscription(md.metadata);
    REQUIRE(sub.ok());
    CHECK(sub->topics == std::vector<std::string>{"t"});
    CHECK(test::AssignedPartitions(md.assignment).size() == 3);
  }
  CHECK(ClassicStateName(ClassicState::kPreparingRebalance) == "PreparingRebalance");
  CHECK(ClassicStateName(ClassicState::kCompletingRebalance) == "CompletingRebalance");
  CHECK(ClassicStateName(ClassicState::kDead) == "Dead");
}

TEST_CASE("classic: unloading answers every waiting request and refuses later ones", "[group][classic]") {
  Harness h;
  Token a = h.Join(Harness::Request("a", {"t"}));
  Token b = h.Join(Harness::Request("b", {"t"}));
  h.g.Unload(ClassicErrc::kNotCoordinator);
  h.Drain();
  CHECK(h.JoinAnswer(a).status.is(ClassicErrc::kNotCoordinator));
  CHECK(h.JoinAnswer(b).status.is(ClassicErrc::kNotCoordinator));
  CHECK(h.g.state() == ClassicState::kDead);
  CHECK_FALSE(h.g.NextDeadline());
  CHECK(h.JoinAnswer(h.Join(Harness::Request("c", {"t"}))).status.is(ClassicErrc::kCoordinatorNotAvailable));
  CHECK(h.Leave({{"x", ""}}).status.is(ClassicErrc::kCoordinatorNotAvailable));
}

}  // namespace
}  // namespace rdmq::group
