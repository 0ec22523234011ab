// Group: joining to a stable state, session expiry, fencing, topic changes, commits, errors.
#include "rdmq/group/group.h"

#include <catch2/catch.hpp>

#include "sim.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::PartSet;
using test::Sim;

HeartbeatRequest Join(std::vector<std::string> topics, std::string assignor = "") {
  HeartbeatRequest r;
  r.client_id = "c";
  r.topics = std::move(topics);
  r.assignor = std::move(assignor);
  r.session_timeout = 3000ms;
  r.rebalance_timeout = 5000ms;
  return r;
}

TEST_CASE("three members over six partitions reach a stable state, each partition owned once", "[group]") {
  auto assignor = GENERATE(as<std::string>{}, "range", "roundrobin", "cooperative-sticky");
  INFO(assignor);
  Sim sim({{"t", 6}, {"other", 2}});
  for (const char* name : {"a", "b", "c"}) sim.Add(name, {"t"}, assignor);
  sim.Beat("a");
  sim.Beat("b");
  sim.Beat("c");
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  GroupDescription d = sim.group().Describe();
  CHECK(d.state == GroupState::kStable);
  CHECK(d.assignor == assignor);
  CHECK(d.group_epoch == 3);  // one bump per join
  REQUIRE(d.members.size() == 3);
  for (const MemberDescription& m : d.members) {
    CHECK(m.member_epoch == d.group_epoch);
    CHECK(m.assignment.size() == 2);
    CHECK(m.assignment == m.target);
    CHECK(m.topics == std::vector<std::string>{"t"});
  }
  // Once stable, further heartbeats change nothing.
  sim.Round();
  CHECK(sim.group().Describe().group_epoch == 3);
  CHECK(sim["a"].last.heartbeat_interval == GroupConfig{}.heartbeat_interval);
}

TEST_CASE("a member whose session expires loses its partitions to the others", "[group]") {
  auto assignor = GENERATE(as<std::string>{}, "range", "cooperative-sticky");
  INFO(assignor);
  Sim sim({{"t", 6}});
  for (const char* name : {"a", "b", "c"}) sim.Add(name, {"t"}, assignor);
  REQUIRE(sim.RunUntilStable() > 0);
  const PartSet a_before = sim["a"].owned, b_before = sim["b"].owned;
  const int32_t epoch = sim.group().group_epoch();

  sim.Kill("c");
  // Before the session timeout (3 s) nothing changes; NextDeadline says when it will.
  for (int i = 0; i < 20; ++i) sim.Round(100ms);
  CHECK(sim.group().group_epoch() == epoch);
  REQUIRE(sim.group().NextDeadline().has_value());
  int rounds = 0;
  while (sim.group().Describe().members.size() == 3 && rounds++ < 20) sim.Round(100ms);
  CHECK(sim.group().group_epoch() == epoch + 1);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"t"}));
  CHECK(sim["a"].owned.size() == 3);
  CHECK(sim["b"].owned.size() == 3);
  if (assignor == "cooperative-sticky") {
    CHECK(std::includes(sim["a"].owned.begin(), sim["a"].owned.end(), a_before.begin(), a_before.end()));
    CHECK(std::includes(sim["b"].owned.begin(), sim["b"].owned.end(), b_before.begin(), b_before.end()));
  }
}

TEST_CASE("Tick expires at the deadline NextDeadline gives", "[group]") {
  Group g("g");
  TopicCounts topics{{"t", 2}};
  TimePoint t0{std::chrono::seconds(10)};
  CHECK_FALSE(g.NextDeadline().has_value());
  auto r = g.Heartbeat(Join({"t"}), t0, topics);
  REQUIRE(r.ok());
  REQUIRE(g.NextDeadline() == t0 + 3000ms);
  g.Tick(t0 + 2999ms, topics);
  CHECK_FALSE(g.empty());
  g.Tick(t0 + 3000ms, topics);
  CHECK(g.empty());
  CHECK_FALSE(g.NextDeadline().has_value());
  CHECK(g.Describe().state == GroupState::kEmpty);
  CHECK(g.Describe().assignor.empty());
}

TEST_CASE("a member that does not revoke within its rebalance timeout is removed", "[group]") {
  Sim sim({{"t", 4}});
  sim.Add("a", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  sim["a"].revoke_delay = 1000;  // never lets go
  sim.Add("b", {"t"});
  sim.Beat("b");
  sim.Beat("a");  // told to revoke two partitions
  REQUIRE(sim.group().Describe().members.size() == 2);
  const TimePoint asked = sim.now();
  REQUIRE(sim.group().NextDeadline() == asked + 3000ms);  // the session timeout comes first
  int rounds = 0;
  while (sim.group().Describe().members.size() == 2 && rounds++ < 100) sim.Round(100ms);
  CHECK(sim.now() - asked >= 5000ms);
  CHECK(sim.now() - asked < 5300ms);
  sim.Kill("a");
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim["b"].owned.size() == 4);
}

TEST_CASE("fencing: unknown member ids and stale epochs", "[group]") {
  Sim sim({{"t", 4}});
  sim.Add("a", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  const std::string a = sim["a"].member_id;
  TopicCounts topics = sim.topics();

  HeartbeatRequest hb = Join({"t"});
  hb.member_id = "nobody";
  hb.member_epoch = 1;
  auto r = sim.group().Heartbeat(hb, sim.now(), topics);
  CHECK(r.status.is(GroupErrc::kUnknownMemberId));
  CHECK(r.status.is(Errc::kNotFound));

  // Move "a" on to epoch 3 (two joins), then try older epochs.
  sim.Add("b", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  sim.Add("c", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  REQUIRE(sim["a"].epoch == 3);
  hb.member_id = a;
  hb.owned.assign(sim["a"].owned.begin(), sim["a"].owned.end());
  for (int32_t stale : {1, 4, 99}) {
    hb.member_epoch = stale;
    r = sim.group().Heartbeat(hb, sim.now(), topics);
    INFO("epoch " << stale);
    CHECK(r.status.is(GroupErrc::kFencedMemberEpoch));
    CHECK(r.status.is(Errc::kFailedPrecondition));
  }
  // The previous epoch is accepted while the member claims only what it was given...
  hb.member_epoch = 2;
  r = sim.group().Heartbeat(hb, sim.now(), topics);
  CHECK(r.ok());
  CHECK(r.member_epoch == 3);
  // ... and fenced when it claims more.
  hb.owned.push_back(*sim["b"].owned.begin());
  r = sim.group().Heartbeat(hb, sim.now(), topics);
  CHECK(r.status.is(GroupErrc::kFencedMemberEpoch));
  // A fenced member rejoins with epoch 0 and its id, and gets its partitions back.
  const PartSet before = sim["a"].owned;
  sim["a"].owned.clear();
  sim["a"].epoch = 0;
  r = sim.Beat("a");
  REQUIRE(r.ok());
  CHECK(r.member_id == a);
  CHECK(PartSet(r.assignment.begin(), r.assignment.end()) == before);
  CHECK(sim.group().group_epoch() == 3);
}

TEST_CASE("a new topic matching the regex or more partitions trigger a rebalance", "[group]") {
  Sim sim({{"orders-eu", 2}, {"audit", 3}});
  sim.Add("a", {}).regex = "orders-.*";
  sim.Add("b", {}).regex = "orders-.*";
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"orders-eu"}));
  int32_t epoch = sim.group().group_epoch();

  // A topic that does not match changes nothing; "xorders-us" does not match in full.
  sim.topics()["xorders-us"] = 4;
  sim.Round();
  CHECK(sim.group().group_epoch() == epoch);

  sim.topics()["orders-us"] = 4;
  sim.group().Tick(sim.now(), sim.topics());  // a Tick notices it as well as a heartbeat
  CHECK(sim.group().group_epoch() == epoch + 1);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"orders-eu", "orders-us"}));

  epoch = sim.group().group_epoch();
  sim.topics()["orders-eu"] = 6;
  sim.Beat("a");
  CHECK(sim.group().group_epoch() == epoch + 1);
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.OwnedExactlyOnce({"orders-eu", "orders-us"}));
  CHECK(sim["a"].owned.size() == 5);
  CHECK(sim["b"].owned.size() == 5);

  // Explicit subscriptions: the topic appearing later counts too.
  Sim named({{"t", 2}});
  named.Add("a", {"t", "later"});
  REQUIRE(named.RunUntilStable() > 0);
  epoch = named.group().group_epoch();
  named.topics()["later"] = 2;
  REQUIRE(named.RunUntilStable() > 0);
  CHECK(named.group().group_epoch() == epoch + 1);
  CHECK(named.OwnedExactlyOnce({"t", "later"}));
}

TEST_CASE("a subscription change rebalances", "[group]") {
  Sim sim({{"t", 4}, {"u", 4}});
  sim.Add("a", {"t"});
  sim.Add("b", {"t"});
  REQUIRE(sim.RunUntilStable() > 0);
  const int32_t epoch = sim.group().group_epoch();
  sim["b"].topics = {"u", "t"};
  REQUIRE(sim.RunUntilStable() > 0);
  CHECK(sim.group().group_epoch() == epoch + 1);
  CHECK(sim.OwnedExactlyOnce({"t", "u"}));
  for (const auto& tp : sim["a"].owned) CHECK(tp.topic == "t");
}

TEST_CASE("CheckCommit: simple commits, unknown members, stale epochs", "[group]") {
  Group g("g");
  TopicCounts topics{{"t", 2}};
  TimePoint now{};
  CHECK(g.CheckCommit("", -1).ok());
  CHECK(g.CheckCommit("", 0).is(GroupErrc::kUnknownMemberId));
  CHECK(g.CheckCommit("m", 1).is(GroupErrc::kUnknownMemberId));
  auto r = g.Heartbeat(Join({"t"}), now, topics);
  REQUIRE(r.ok());
  CHECK(g.CheckCommit("", -1).is(GroupErrc::kUnknownMemberId));
  CHECK(g.CheckCommit(r.member_id, r.member_epoch).ok());
  CHECK(g.CheckCommit(r.member_id, r.member_epoch - 1).is(GroupErrc::kStaleMemberEpoch));
  CHECK(g.CheckCommit(r.member_id, r.member_epoch + 1).is(GroupErrc::kStaleMemberEpoch));
  CHECK(g.CheckCommit("other", r.member_epoch).is(GroupErrc::kUnknownMemberId));
  HeartbeatRequest leave;
  leave.member_id = r.member_id;
  leave.member_epoch = kLeaveEpoch;
  REQUIRE(g.Heartbeat(leave, now, topics).ok());
  CHECK(g.CheckCommit("", -1).ok());
  CHECK(g.CheckCommit(r.member_id, r.member_epoch).is(GroupErrc::kUnknownMemberId));
}

TEST_CASE("the group's assignor is its first member's", "[group]") {
  Group g("g");
  TopicCounts topics{{"t", 2}};
  TimePoint now{};
  auto a = g.Heartbeat(Join({"t"}, "range"), now, topics);
  REQUIRE(a.ok());
  auto b = g.Heartbeat(Join({"t"}, "roundrobin"), now, topics);
  CHECK(b.status.is(GroupErrc::kInconsistentAssignor));
  CHECK(g.Describe().members.size() == 1);
  CHECK(g.Heartbeat(Join({"t"}, "sticky"), now, topics).status.is(GroupErrc::kUnsupportedAssignor));
  auto c = g.Heartbeat(Join({"t"}), now, topics);  // no preference: the group's
  REQUIRE(c.ok());
  CHECK(g.Describe().assignor == "range");
  // Once the group is empty, the next first member chooses again.
  for (const auto& id : {a.member_id, c.member_id}) {
    HeartbeatRequest leave;
    leave.member_id = id;
    leave.member_epoch = kLeaveEpoch;
    REQUIRE(g.Heartbeat(leave, now, topics).ok());
  }
  REQUIRE(g.Heartbeat(Join({"t"}, "roundrobin"), now, topics).ok());
  CHECK(g.Describe().assignor == "roundrobin");
  // A group whose first member names none uses the default.
  Group d("d");
  REQUIRE(d.Heartbeat(Join({"t"}), now, topics).ok());
  CHECK(d.Describe().assignor == "cooperative-sticky");
}

TEST_CASE("invalid requests and the group size limit", "[group]") {
  GroupConfig config;
  config.max_size = 2;
  config.member_id_salt = "b7";
  Group g("g", config);
  TopicCounts topics{{"t", 2}};
  TimePoint now{};
  HeartbeatRequest both = Join({"t"});
  both.topic_regex = "t.*";
  CHECK(g.Heartbeat(both, now, topics).status.is(GroupErrc::kInvalidRequest));
  HeartbeatRequest bad_regex = Join({});
  bad_regex.topic_regex = "(unclosed";
  CHECK(g.Heartbeat(bad_regex, now, topics).status.is(GroupErrc::kInvalidRegularExpression));
  HeartbeatRequest no_timeout = Join({"t"});
  no_timeout.session_timeout = 0ms;
  CHECK(g.Heartbeat(no_timeout, now, topics).status.is(GroupErrc::kInvalidRequest));
  HeartbeatRequest owning = Join({"t"});
  owning.owned = {{"t", 0}};
  CHECK(g.Heartbeat(owning, now, topics).status.is(GroupErrc::kInvalidRequest));
  HeartbeatRequest epoch = Join({"t"});
  epoch.member_epoch = -3;
  CHECK(g.Heartbeat(epoch, now, topics).status.is(GroupErrc::kInvalidRequest));
  HeartbeatRequest dynamic_leave;
  auto a = g.Heartbeat(Join({"t"}), now, topics);
  REQUIRE(a.ok());
  CHECK(a.member_id == "c-b7-1");
  dynamic_leave.member_id = a.member_id;
  dynamic_leave.member_epoch = kStaticLeaveEpoch;
  CHECK(g.Heartbeat(dynamic_leave, now, topics).status.is(GroupErrc::kInvalidRequest));
  HeartbeatRequest own_id = Join({"t"});
  own_id.member_id = "client-chosen-id";
  auto b = g.Heartbeat(own_id, now, topics);
  REQUIRE(b.ok());
  CHECK(b.member_id == "client-chosen-id");
  auto c = g.Heartbeat(Join({"t"}), now, topics);
  CHECK(c.status.is(GroupErrc::kGroupMaxSizeReached));
  CHECK(c.status.is(Errc::kResourceExhausted));
  CHECK(g.Describe().members.size() == 2);
  CHECK(g.group_epoch() == 2);  // refused requests changed nothing
}

}  // namespace
}  // namespace rdmq::group
