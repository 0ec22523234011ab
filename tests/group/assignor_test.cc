// Range and round-robin against Kafka's documented examples, uneven subscriptions, static member
// order, names.
#include "rdmq/group/assignor.h"

#include <catch2/catch.hpp>

namespace rdmq::group {
namespace {

using Parts = std::vector<TopicPartition>;

MemberSpec M(std::string id, std::vector<std::string> topics, std::string instance = "") {
  return MemberSpec{std::move(id), std::move(instance), std::move(topics), {}};
}

TEST_CASE("assignor names parse and print", "[group][assignor]") {
  for (AssignorKind k : {AssignorKind::kRange, AssignorKind::kRoundRobin, AssignorKind::kCooperativeSticky}) {
    auto parsed = ParseAssignor(AssignorName(k));
    REQUIRE(parsed.ok());
    CHECK(*parsed == k);
  }
  auto bad = ParseAssignor("sticky");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().is(GroupErrc::kUnsupportedAssignor));
  CHECK(bad.status().is(Errc::kInvalidArgument));
  CHECK(IsCooperative(AssignorKind::kCooperativeSticky));
  CHECK_FALSE(IsCooperative(AssignorKind::kRange));
}

// Kafka's RangeAssignor javadoc: C0 and C1 subscribed to t0 and t1, three partitions each.
TEST_CASE("range: Kafka's example", "[group][assignor]") {
  TopicCounts topics{{"t0", 3}, {"t1", 3}};
  auto a = Assign(AssignorKind::kRange, {M("C0", {"t0", "t1"}), M("C1", {"t0", "t1"})}, topics);
  CHECK(a["C0"] == Parts{{"t0", 0}, {"t0", 1}, {"t1", 0}, {"t1", 1}});
  CHECK(a["C1"] == Parts{{"t0", 2}, {"t1", 2}});
}

TEST_CASE("range: uneven subscriptions split each topic among its subscribers", "[group][assignor]") {
  TopicCounts topics{{"t0", 3}, {"t1", 2}, {"unused", 4}};
  auto a =
      Assign(AssignorKind::kRange, {M("C1", {"t0", "t1"}), M("C0", {"t0", "missing"}), M("C2", {})}, topics);
  CHECK(a["C0"] == Parts{{"t0", 0}, {"t0", 1}});
  CHECK(a["C1"] == Parts{{"t0", 2}, {"t1", 0}, {"t1", 1}});
  CHECK(a["C2"].empty());
  CHECK(a.size() == 3);
}

TEST_CASE("range: static members are ordered by instance id, before dynamic ones", "[group][assignor]") {
  TopicCounts topics{{"t", 6}};
  // Member ids sort the other way round; the instance ids decide.
  auto a = Assign(AssignorKind::kRange, {M("z-dyn", {"t"}), M("b", {"t"}, "inst-2"), M("c", {"t"}, "inst-1")},
                  topics);
  CHECK(a["c"] == Parts{{"t", 0}, {"t", 1}});
  CHECK(a["b"] == Parts{{"t", 2}, {"t", 3}});
  CHECK(a["z-dyn"] == Parts{{"t", 4}, {"t", 5}});
  // A restarted static member (new member id, same instance id) gets the same range.
  auto b = Assign(AssignorKind::kRange,
                  {M("z-dyn", {"t"}), M("b", {"t"}, "inst-2"), M("a-new", {"t"}, "inst-1")}, topics);
  CHECK(b["a-new"] == a["c"]);
  CHECK(b["b"] == a["b"]);
}

// Kafka's RoundRobinAssignor javadoc, first example.
TEST_CASE("roundrobin: Kafka's example with identical subscriptions", "[group][assignor]") {
  TopicCounts topics{{"t0", 3}, {"t1", 3}};
  auto a = Assign(AssignorKind::kRoundRobin, {M("C1", {"t0", "t1"}), M("C0", {"t0", "t1"})}, topics);
  CHECK(a["C0"] == Parts{{"t0", 0}, {"t0", 2}, {"t1", 1}});
  CHECK(a["C1"] == Parts{{"t0", 1}, {"t1", 0}, {"t1", 2}});
}

// Kafka's RoundRobinAssignor javadoc, second example (uneven subscriptions).
TEST_CASE("roundrobin: Kafka's example with uneven subscriptions", "[group][assignor]") {
  TopicCounts topics{{"t0", 1}, {"t1", 2}, {"t2", 3}};
  auto a = Assign(AssignorKind::kRoundRobin,
                  {M("C0", {"t0"}), M("C1", {"t0", "t1"}), M("C2", {"t0", "t1", "t2"})}, topics);
  CHECK(a["C0"] == Parts{{"t0", 0}});
  CHECK(a["C1"] == Parts{{"t1", 0}});
  CHECK(a["C2"] == Parts{{"t1", 1}, {"t2", 0}, {"t2", 1}, {"t2", 2}});
}

TEST_CASE("assignors are deterministic and ignore the input order", "[group][assignor]") {
  TopicCounts topics{{"a", 5}, {"b", 3}, {"c", 7}};
  std::vector<MemberSpec> members{M("m1", {"a", "b"}), M("m2", {"b", "c"}, "s1"), M("m3", {"a", "c"}),
                                  M("m4", {"a", "b", "c"})};
  members[0].owned = {{"a", 0}, {"a", 1}, {"b", 2}};
  members[3].owned = {{"c", 6}, {"a", 4}};
  std::vector<MemberSpec> reversed(members.rbegin(), members.rend());
  for (AssignorKind k : {AssignorKind::kRange, AssignorKind::kRoundRobin, AssignorKind::kCooperativeSticky}) {
    INFO(AssignorName(k));
    auto first = Assign(k, members, topics);
    CHECK(Assign(k, members, topics) == first);
    CHECK(Assign(k, reversed, topics) == first);
    // Every partition of a subscribed topic goes to exactly one subscriber.
    std::map<TopicPartition, int> seen;
    for (const auto& entry : first) {
      const std::string& id = entry.first;
      const auto& parts = entry.second;
      const MemberSpec& m = *std::find_if(members.begin(), members.end(),
                                          [&](const MemberSpec& s) { return s.member_id == id; });
      for (const auto& tp : parts) {
        ++seen[tp];
        CHECK(std::find(m.topics.begin(), m.topics.end(), tp.topic) != m.topics.end());
      }
    }
    CHECK(seen.size() == 15);
    for (const auto& [tp, n] : seen) CHECK(n == 1);
  }
}

TEST_CASE("assignors with no members or no topics give empty assignments", "[group][assignor]") {
  for (AssignorKind k : {AssignorKind::kRange, AssignorKind::kRoundRobin, AssignorKind::kCooperativeSticky}) {
    CHECK(Assign(k, {}, {{"t", 3}}).empty());
    auto a = Assign(k, {M("x", {"t"})}, {{"t", 0}, {"u", 2}});
    CHECK(a.size() == 1);
    CHECK(a["x"].empty());
  }
}

}  // namespace
}  // namespace rdmq::group
