// The cooperative-sticky assignor: balance, stickiness, the minimum of moves.
#include <catch2/catch.hpp>
#include <random>

#include "rdmq/group/assignor.h"
#include "support/test_util.h"

namespace rdmq::group {
namespace {

using Parts = std::vector<TopicPartition>;

MemberSpec M(std::string id, std::vector<std::string> topics, Parts owned = {}) {
  return MemberSpec{std::move(id), "", std::move(topics), std::move(owned)};
}

Parts Range(const std::string& topic, int32_t from, int32_t to) {
  Parts out;
  for (int32_t p = from; p < to; ++p) out.push_back({topic, p});
  return out;
}

// Partitions that some member owned before and that another member holds now.
int Moved(const std::vector<MemberSpec>& before, const Assignment& after) {
  std::map<TopicPartition, std::string> now;
  for (const auto& [id, parts] : after) {
    for (const auto& tp : parts) now[tp] = id;
  }
  int moved = 0;
  for (const MemberSpec& m : before) {
    for (const auto& tp : m.owned) {
      auto it = now.find(tp);
      if (it != now.end() && it->second != m.member_id) ++moved;
    }
  }
  return moved;
}

std::pair<size_t, size_t> MinMax(const Assignment& a) {
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& [id, parts] : a) {
    lo = std::min(lo, parts.size());
    hi = std::max(hi, parts.size());
  }
  return {lo, hi};
}

bool Subset(const Parts& small, const Parts& big) {
  return std::all_of(small.begin(), small.end(), [&](const TopicPartition& tp) {
    return std::find(big.begin(), big.end(), tp) != big.end();
  });
}

TEST_CASE("sticky: a fresh group is balanced", "[group][sticky]") {
  TopicCounts topics{{"a", 4}, {"b", 3}};
  auto a = Assign(AssignorKind::kCooperativeSticky,
                  {M("m1", {"a", "b"}), M("m2", {"a", "b"}), M("m3", {"a", "b"})}, topics);
  auto [lo, hi] = MinMax(a);
  CHECK(hi - lo <= 1);
  CHECK(a["m1"].size() + a["m2"].size() + a["m3"].size() == 7);
}

TEST_CASE("sticky: a balanced owned assignment is kept as it is", "[group][sticky]") {
  TopicCounts topics{{"t", 6}};
  std::vector<MemberSpec> members{M("x", {"t"}, {{"t", 5}, {"t", 0}}), M("y", {"t"}, {{"t", 3}, {"t", 1}}),
                                  M("z", {"t"}, {{"t", 2}, {"t", 4}})};
  auto a = Assign(AssignorKind::kCooperativeSticky, members, topics);
  CHECK(a["x"] == Parts{{"t", 0}, {"t", 5}});
  CHECK(a["y"] == Parts{{"t", 1}, {"t", 3}});
  CHECK(a["z"] == Parts{{"t", 2}, {"t", 4}});
  CHECK(Moved(members, a) == 0);
}

TEST_CASE("sticky: a member added takes the minimum from the others", "[group][sticky]") {
  TopicCounts topics{{"t", 12}};
  std::vector<MemberSpec> members{M("a", {"t"}, Range("t", 0, 4)), M("b", {"t"}, Range("t", 4, 8)),
                                  M("c", {"t"}, Range("t", 8, 12)), M("d", {"t"})};
  auto a = Assign(AssignorKind::kCooperativeSticky, members, topics);
  for (const char* id : {"a", "b", "c", "d"}) CHECK(a[id].size() == 3);
  CHECK(Moved(members, a) == 3);
  CHECK(Subset(a["a"], Range("t", 0, 4)));
  CHECK(Subset(a["b"], Range("t", 4, 8)));
  CHECK(Subset(a["c"], Range("t", 8, 12)));
}

TEST_CASE("sticky: a member removed moves only its partitions", "[group][sticky]") {
  TopicCounts topics{{"t", 12}};
  // "b" left: its former partitions 3..5 are unowned.
  std::vector<MemberSpec> members{M("a", {"t"}, Range("t", 0, 3)), M("c", {"t"}, Range("t", 6, 9)),
                                  M("d", {"t"}, Range("t", 9, 12))};
  auto a = Assign(AssignorKind::kCooperativeSticky, members, topics);
  for (const char* id : {"a", "c", "d"}) CHECK(a[id].size() == 4);
  CHECK(Moved(members, a) == 0);
  CHECK(Subset(Range("t", 0, 3), a["a"]));
  CHECK(Subset(Range("t", 6, 9), a["c"]));
  CHECK(Subset(Range("t", 9, 12), a["d"]));
}

TEST_CASE("sticky: partitions of a topic no longer subscribed are given up", "[group][sticky]") {
  TopicCounts topics{{"t", 4}, {"u", 2}};
  std::vector<MemberSpec> members{M("a", {"t"}, {{"u", 0}, {"u", 1}, {"t", 0}}),
                                  M("b", {"t", "u"}, {{"t", 1}})};
  auto a = Assign(AssignorKind::kCooperativeSticky, members, topics);
  CHECK(a["b"].size() == 3);
  CHECK(Subset({{"u", 0}, {"u", 1}, {"t", 1}}, a["b"]));
  CHECK(Subset({{"t", 0}}, a["a"]));
}

TEST_CASE("sticky: uneven subscriptions balance as far as they allow, along chains", "[group][sticky]") {
  // "a" reads only t1, "c" only t2, "x" both: a gives a t1 partition to x, x a t2 one to c.
  TopicCounts topics{{"t1", 3}, {"t2", 3}};
  std::vector<MemberSpec> members{M("a", {"t1"}, Range("t1", 0, 3)), M("x", {"t1", "t2"}, Range("t2", 0, 2)),
                                  M("c", {"t2"}, Range("t2", 2, 3))};
  auto a = Assign(AssignorKind::kCooperativeSticky, members, topics);
  CHECK(a["a"].size() == 2);
  CHECK(a["x"].size() == 2);
  CHECK(a["c"].size() == 2);
  CHECK(Moved(members, a) == 2);

  // A member alone on a topic keeps all of it: balance cannot reach it.
  auto b = Assign(AssignorKind::kCooperativeSticky,
                  {M("solo", {"big"}), M("p", {"small"}), M("q", {"small"})}, {{"big", 10}, {"small", 2}});
  CHECK(b["solo"].size() == 10);
  CHECK(b["p"].size() == 1);
  CHECK(b["q"].size() == 1);
}

// In a group with one subscription, the assignor moves exactly as many partitions as balance
// requires: the owners with the most keep one more than the quota, the rest the quota.
TEST_CASE("sticky: random groups move the minimum", "[group][sticky]") {
  const uint64_t seed = test::TestSeed();
  INFO("RDMQ_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < test::Trials(300, 20); ++trial) {
    const int32_t partitions = static_cast<int32_t>(rng() % 40);
    const size_t n = 1 + rng() % 8;
    TopicCounts topics{{"t", partitions}};
    std::vector<MemberSpec> members;
    for (size_t i = 0; i < n; ++i) members.push_back(M("m" + std::to_string(i), {"t"}));
    for (int32_t p = 0; p < partitions; ++p) {
      size_t owner = rng() % (n + 1);  // n: nobody owns it
      if (owner < n) members[owner].owned.push_back({"t", p});
    }
    std::vector<size_t> owned;
    for (const auto& m : members) owned.push_back(m.owned.size());
    std::sort(owned.rbegin(), owned.rend());
    const size_t quota = static_cast<size_t>(partitions) / n;
    const size_t extra = static_cast<size_t>(partitions) % n;
    int minimum = 0;
    for (size_t i = 0; i < n; ++i) {
      size_t cap = quota + (i < extra ? 1 : 0);
      if (owned[i] > cap) minimum += static_cast<int>(owned[i] - cap);
    }
    auto a = Assign(AssignorKind::kCooperativeSticky, members, topics);
    auto [lo, hi] = MinMax(a);
    INFO("trial " << trial << " partitions " << partitions << " members " << n);
    CHECK(hi - lo <= 1);
    CHECK(Moved(members, a) == minimum);
    size_t total = 0;
    for (const auto& [id, parts] : a) total += parts.size();
    CHECK(total == static_cast<size_t>(partitions));
  }
}

}  // namespace
}  // namespace rdmq::group
