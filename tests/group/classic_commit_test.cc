// ClassicGroup::CheckCommit: Kafka's OffsetCommit validation for classic groups.
#include <catch2/catch.hpp>

#include "classic_harness.h"

namespace rdmq::group {
namespace {

using namespace std::chrono_literals;
using test::CompleteRebalance;
using test::Harness;
using test::Member;

TEST_CASE("classic commits: simple commits only while the group has no members", "[group][classic][commit]") {
  Harness h;
  CHECK_OK(h.g.CheckCommit("", "", -1, h.now));
  CHECK_OK(h.g.CheckCommit("someone", "", -1, h.now));  // generation -1 on an Empty group: as Kafka
  CHECK(h.g.CheckCommit("someone", "", 0, h.now).is(ClassicErrc::kUnknownMemberId));

  Token a = h.Join(Harness::Request("a", {"t"}));
  CHECK_FALSE(h.Answered(a));
  CHECK(h.g.CheckCommit("", "", -1, h.now).is(ClassicErrc::kUnknownMemberId));
  // p is told MEMBER_ID_REQUIRED, then a leaves during the initial delay: the group is
  // PreparingRebalance (the pending member keeps the join phase open) with no members.
  auto pr = Harness::Request("p", {"t"});
  pr.require_known_member_id = true;
  h.Join(pr);
  const std::string a_id = h.g.Describe().members.at(0).member_id;
  CHECK_OK(h.Leave({{a_id, ""}}).members[0]);
  CHECK(h.JoinAnswer(a).status.is(ClassicErrc::kUnknownMemberId));
  CHECK(h.g.state() == ClassicState::kPreparingRebalance);
  CHECK(h.g.member_count() == 0);
  CHECK_OK(h.g.CheckCommit("", "", -1, h.now));
}

TEST_CASE("classic commits: members commit at their generation", "[group][classic][commit]") {
  Harness h;
  Member a{"", "ia", -1, ""};
  Member b;
  Token aj = h.Join(Harness::Request("a", {"t"}, {"range"}, "ia"));
  Token bj = h.Join(Harness::Request("b", {"t"}));
  test::AwaitAll(h, {aj, bj});
  a.id = h.JoinAnswer(aj).member_id;
  b.id = h.JoinAnswer(bj).member_id;

  // CompletingRebalance: members are valid but must finish the rebalance first.
  CHECK(h.g.CheckCommit(b.id, "", 1, h.now).is(ClassicErrc::kRebalanceInProgress));
  CompleteRebalance(h, {&a, &b}, {aj, bj});

  // Stable.
  CHECK_OK(h.g.CheckCommit(b.id, "", 1, h.now));
  CHECK_OK(h.g.CheckCommit(a.id, "ia", 1, h.now));
  CHECK(h.g.CheckCommit(b.id, "", 0, h.now).is(ClassicErrc::kIllegalGeneration));
  CHECK(h.g.CheckCommit(b.id, "", 2, h.now).is(ClassicErrc::kIllegalGeneration));
  CHECK(h.g.CheckCommit("stranger", "", 1, h.now).is(ClassicErrc::kUnknownMemberId));
  CHECK(h.g.CheckCommit(b.id, "ia", 1, h.now).is(ClassicErrc::kFencedInstanceId));
  CHECK(h.g.CheckCommit(a.id, "other", 1, h.now).is(ClassicErrc::kUnknownMemberId));
  CHECK(h.g.CheckCommit("", "", -1, h.now).is(ClassicErrc::kUnknownMemberId));
  CHECK(h.g.CheckCommit(b.id, "", -1, h.now).is(ClassicErrc::kIllegalGeneration));

  // PreparingRebalance: an eager consumer commits before it rejoins, at the old generation.
  Token c = h.Join(Harness::Request("c", {"t"}));
  CHECK_FALSE(h.Answered(c));
  CHECK_OK(h.g.CheckCommit(b.id, "", 1, h.now));
  CHECK(h.g.CheckCommit(b.id, "", 2, h.now).is(ClassicErrc::kIllegalGeneration));

  // A member removed by its session timeout can no longer commit; the check itself fires the
  // expiry, whether or not Tick ran.
  auto ra = Harness::Request("a", {"t"}, {"range"}, "ia");
  ra.member_id = a.id;
  h.Join(ra);
  const TimePoint later = h.now + 10s;
  CHECK(h.g.CheckCommit(b.id, "", 1, later).is(ClassicErrc::kUnknownMemberId));
  h.Drain();
}

TEST_CASE("classic commits: a Dead group refuses", "[group][classic][commit]") {
  Harness h;
  h.g.Unload(ClassicErrc::kCoordinatorNotAvailable);
  CHECK(h.g.CheckCommit("", "", -1, h.now).is(ClassicErrc::kCoordinatorNotAvailable));
}

}  // namespace
}  // namespace rdmq::group
